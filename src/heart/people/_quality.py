"""Quality control of human work: per rater, the measures the judge audit takes of judges
(heart.people._measures), flags with reasons and the decision to approve, ask to return or keep
out (heart.people._flags), and odd completion times.

A rater whose flags exclude them (by the study's ``people.exclude_flags`` and
``people.checks_to_exclude``) is excluded from the analyses as soon as the answer that raised
the flag is stored: the rater and their work stay in the store, with the reason naming its rule,
they get no more tasks, and the pairs they judged go back to the pool so that every pair still
gets its number of raters who count. A task's time is from serving to submitting; times far
from the median of their kind (robust z-score over 3.5, from the median absolute deviation) are
flagged for a look, not excluded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from heart.config import PeopleSpec
from heart.people._flags import (
    APPROVE,
    NUDGE_FIRST,
    RATER_LEVEL,
    RaterFlag,
    after_review,
    decide,
    exclusion_reason,
    nudge_reasons,
    rater_flags,
)
from heart.people._measures import RaterMeasures, measure_raters, measures_data, measures_from
from heart.people._tasks import JUDGE, reopen, task_id
from heart.store import (
    JudgmentRow,
    PairRow,
    RaterRow,
    Store,
    TaskRow,
    counted_judgment,
    now_iso,
)

NUDGES, CLEARED, REINSTATED, AT_EXCLUSION = "nudges", "cleared", "reinstated", "at_exclusion"
"""What a rater's ``meta`` keeps of quality control: the warnings they were given (by flag),
the flags the study team cleared, each reinstatement, and the measures that excluded them."""
OUTLIER_Z = 3.5
MAD_TO_SD = 1.4826  # MAD of a normal distribution times this is its standard deviation


@dataclass(frozen=True)
class RaterQuality:
    """One rater: how they came in, what they did, their measures and flags, whether they are
    excluded (the stored reason), and what to do about them (``decision``: approve, return or
    keep out, and why)."""

    rater: str
    entry: str
    tasks: dict[str, int]  # kind -> submitted
    checks: int
    failed: int
    odd_times: int
    median_seconds: float
    excluded: str | None
    counted: int = 0  # verdicts the analyses count (none once excluded)
    measures: RaterMeasures = field(default_factory=RaterMeasures)
    flags: tuple[RaterFlag, ...] = ()
    decision: str = APPROVE
    decision_reason: str = ""


LOOK_EVERY = 5
"""Judge seats between two looks at a rater's flags as they work (and after each failed
attention check): fewer looks flag fewer honest raters by chance, at a cost of a few verdicts."""


def looks_again(judged: int, failed_attention: bool) -> bool:
    """Whether to measure a rater again once they have submitted ``judged`` judge seats (the
    one just answered included): after a failed attention check, and every ``LOOK_EVERY``."""
    return failed_attention or judged % LOOK_EVERY == 0


def exclude_if_flagged(session: Session, rater: str, spec: PeopleSpec) -> str | None:
    """Measure ``rater`` again and act on their flags (see `act_on_flags`), unless they are
    excluded already; the exclusion's reason, or None."""
    person = session.get(RaterRow, rater)
    if person is None or person.excluded_reason:
        return None
    with_others = "agreement" in spec.exclude_flags  # the only flag that reads other raters
    measures = measure_raters(session, RATER_LEVEL, [rater], agreement=with_others)[rater]
    return act_on_flags(session, person, measures, spec)


def reviewed_flags(person: RaterRow, flags: tuple[RaterFlag, ...]) -> tuple[RaterFlag, ...]:
    """``flags`` as they act on ``person``: after the nudges they were shown and the flags the
    study team cleared on reinstating them (see `after_review`)."""
    meta = person.meta or {}
    return after_review(flags, meta.get(NUDGES, {}), meta.get(CLEARED, []))


def act_on_flags(
    session: Session, person: RaterRow, measures: RaterMeasures, spec: PeopleSpec
) -> str | None:
    """Warn ``person`` of the first signs of a flag that would exclude them (kept in their
    ``meta`` until a page shows it), and exclude them for the flags that are due; the
    exclusion's reason, or None."""
    flags = rater_flags(measures, spec)
    due = reviewed_flags(person, flags)
    meta = dict(person.meta or {})
    nudged = dict(meta.get(NUDGES, {}))
    fresh: dict[str, str] = {
        name: reason
        for name, reason in nudge_reasons(measures).items()
        if name in spec.exclude_flags and name not in nudged
    }
    for flag in flags:
        if flag.excludes and flag.name in NUDGE_FIRST and flag.name not in nudged:
            fresh.setdefault(flag.name, flag.reason)
    if fresh:
        when = now_iso()
        nudged.update({n: {"reason": r, "at": when, "seen": False} for n, r in fresh.items()})
        person.meta = {**meta, NUDGES: nudged}
    reason = exclusion_reason(due, spec)
    if reason:
        exclude(session, person.id, reason, measures, [f.name for f in due if f.excludes])
    return reason


def _kept_measures(person: RaterRow | None, measured: RaterMeasures) -> RaterMeasures:
    """The measures to show of ``person``: once excluded, those that excluded them (their
    judged seats went back to the pool, so measuring now would miss the evidence)."""
    kept = (person.meta or {}).get(AT_EXCLUSION) if person and person.excluded_reason else None
    return measures_from(kept["measures"]) if kept else measured


def rater_decision(
    store: Store, rater: str, spec: PeopleSpec, *, agreement: bool = True
) -> tuple[str, str, RaterMeasures]:
    """What to do about ``rater`` (approve, return or keep out) and why, with their measures:
    what `review_quality` decides for them, read for this one rater and storing nothing.
    Without ``agreement`` the other raters' verdicts are not read (nor the agreement flag
    raised): enough to tell whether to ask for a return, which rests on attention checks."""
    with store.session() as session:
        person = session.get(RaterRow, rater)
        stored = person.excluded_reason if person is not None else None
        measured = measure_raters(session, RATER_LEVEL, [rater], agreement=agreement)[rater]
        measures = _kept_measures(person, measured)
        flags = rater_flags(measures, spec)
        if person is not None:
            flags = reviewed_flags(person, flags)
    decision, why = decide(measures, flags, stored or exclusion_reason(flags, spec))
    return decision, why, measures


def exclude(
    session: Session,
    rater: str,
    reason: str,
    measures: RaterMeasures | None = None,
    flags: Sequence[str] = (),
) -> None:
    """Exclude ``rater`` with ``reason``, keeping the ``measures`` and ``flags`` that excluded
    them: give
    back the seats they hold unfinished, and reopen the pairs they judged (their verdicts stay
    in the store, left out of the analyses). Their check seats stay theirs, as the evidence."""
    person = session.get(RaterRow, rater)
    assert person is not None
    person.excluded_reason = reason
    if measures is not None:
        kept = {"at": now_iso(), "measures": measures_data(measures), "flags": list(flags)}
        person.meta = {**(person.meta or {}), AT_EXCLUSION: kept}
    mine = TaskRow.rater_id == rater
    judged = and_(TaskRow.done, TaskRow.kind == JUDGE, TaskRow.check.is_(None))
    reopen(session, and_(mine, ~TaskRow.done | judged))


def reinstate(store: Store, rater: str, *, by: str) -> str:
    """Bring an excluded rater's verdicts back into the analyses, as the study team decided
    (``by``: who): the flags that excluded them are cleared for them (they never exclude this
    rater again), and who reinstated them, when and from what is kept. Their judged seats went
    back to the pool on exclusion, so their pairs may now hold more verdicts than
    ``raters_per_pair``. Returns the exclusion's reason; ValueError when there is none."""
    by = " ".join(by.split())
    if not by:
        raise ValueError("say who reinstates the rater")
    with store.session() as session:
        person = session.get(RaterRow, rater)
        if person is None:
            raise ValueError(f"no rater {rater!r} in the study; `heart raters list` names them")
        reason = person.excluded_reason
        if not reason:
            raise ValueError(f"rater {rater} is not excluded; nothing to reinstate")
        meta = dict(person.meta or {})
        kept = meta.get(AT_EXCLUSION) or {}
        flags = kept.get("flags") or [part.split(" ", 1)[0] for part in reason.split("; ")]
        record = {"at": now_iso(), "by": by, "reason": reason}
        meta[CLEARED] = sorted({*meta.get(CLEARED, []), *flags})
        meta[REINSTATED] = [*meta.get(REINSTATED, []), record]
        meta.pop(AT_EXCLUSION, None)
        person.meta = meta
        person.excluded_reason = None
        _seat_again(session, rater)
    return reason


def _seat_again(session: Session, rater: str) -> None:
    """Give a reinstated rater back a submitted seat on every pair they judged (a free seat of
    it, else one more), so that no pair is served to them twice."""
    held = set(session.scalars(select(TaskRow.target).where(TaskRow.rater_id == rater)))
    judged = session.execute(
        select(JudgmentRow.pair_id, JudgmentRow.order, PairRow.item_id)
        .join(PairRow, PairRow.id == JudgmentRow.pair_id)
        .where(JudgmentRow.judge == rater)
    ).all()
    for pair, order, item in judged:
        if pair in held:
            continue
        seats = list(
            session.scalars(
                select(TaskRow).where(TaskRow.kind == JUDGE, TaskRow.target == pair)
                .order_by(TaskRow.seat)
            )
        )  # fmt: skip
        free = next((t for t in seats if t.rater_id is None and not t.done), None)
        if free is None:
            seat = 1 + max((t.seat for t in seats), default=-1)
            free = TaskRow(id=task_id(JUDGE, pair, seat), kind=JUDGE, target=pair, item_id=item,
                           seat=seat, shown=order)  # fmt: skip
            session.add(free)
        free.rater_id, free.done, free.shown = rater, True, order
        held.add(pair)


def pending_nudges(meta: Mapping[str, Any]) -> list[str]:
    """The warnings a rater has not been shown yet, worded for them."""
    return [n["reason"] for n in (meta or {}).get(NUDGES, {}).values() if not n.get("seen")]


def nudges_seen(store: Store, rater: str) -> None:
    """Mark every warning of ``rater`` as shown."""
    with store.session() as session:
        person = session.get(RaterRow, rater)
        if person is None:
            return
        meta = dict(person.meta or {})
        nudged = {name: {**n, "seen": True} for name, n in meta.get(NUDGES, {}).items()}
        person.meta = {**meta, NUDGES: nudged}


def time_outliers(seconds: list[float]) -> list[bool]:
    """Which durations lie more than 3.5 robust standard deviations from the median."""
    x = np.asarray(seconds, dtype=np.float64)
    if x.size < 3:
        return [False] * x.size
    median = float(np.median(x))
    spread = MAD_TO_SD * float(np.median(np.abs(x - median)))
    if spread == 0:
        return [False] * x.size
    return [bool(z > OUTLIER_Z) for z in np.abs(x - median) / spread]


def review_quality(
    store: Store, spec: PeopleSpec | None = None, *, act: bool = True
) -> list[RaterQuality]:
    """Measure and flag every rater, by the study's people settings (``spec``, else the
    defaults), excluding (with the reason and its rule) anyone whose flags exclude them and who
    is not excluded yet, and say of each whether to approve, ask to return or keep them out.
    With ``act`` False nothing is stored: such a rater shows the exclusion they are due."""
    spec = spec or PeopleSpec()
    with store.session() as session:
        rows = session.execute(
            select(TaskRow.rater_id, TaskRow.kind, TaskRow.check, TaskRow.passed,
                   TaskRow.served_at, TaskRow.submitted_at).where(TaskRow.done)
        ).all()  # fmt: skip
        durations: dict[str, list[tuple[str, float]]] = defaultdict(list)
        by_rater: dict[str | None, list[Any]] = defaultdict(list)
        for row in rows:
            rater, kind, _check, _passed, served, submitted = row
            by_rater[rater].append(row)
            if rater is not None and served is not None and submitted is not None:
                durations[kind].append((rater, submitted - served))
        odd: dict[str, int] = defaultdict(int)
        for pairs in durations.values():
            for (rater, _), flagged in zip(
                pairs, time_outliers([d for _, d in pairs]), strict=True
            ):
                odd[rater] += flagged
        measured = measure_raters(session, RATER_LEVEL)
        out = []
        people = list(session.scalars(select(RaterRow).order_by(RaterRow.id)))
        for person in people:
            mine = by_rater[person.id]
            checks = [r for r in mine if r.check]
            measures = _kept_measures(person, measured.get(person.id, RaterMeasures()))
            if act and not person.excluded_reason:  # stored before the rule applied on submit
                act_on_flags(session, person, measures, spec)
                measures = _kept_measures(person, measures)
            flags = reviewed_flags(person, rater_flags(measures, spec))
            excluded = person.excluded_reason or exclusion_reason(flags, spec)
            decision, why = decide(measures, flags, excluded)
            times = [r.submitted_at - r.served_at for r in mine if r.served_at and r.submitted_at]
            tasks: dict[str, int] = defaultdict(int)
            for r in mine:
                if not r.check:
                    tasks[r.kind] += 1
            out.append(
                RaterQuality(
                    rater=person.id, entry=str(person.meta.get("entry", "")), tasks=dict(tasks),
                    checks=len(checks), failed=sum(1 for r in checks if r.passed is False),
                    odd_times=odd[person.id],
                    median_seconds=float(np.median(times)) if times else float("nan"),
                    excluded=excluded, measures=measures, flags=flags,
                    decision=decision, decision_reason=why,
                )
            )  # fmt: skip
        session.flush()
        counted = dict(
            session.execute(
                select(JudgmentRow.judge, func.count())
                .where(counted_judgment())
                .group_by(JudgmentRow.judge)
            ).all()
        )
    return [replace(q, counted=int(counted.get(q.rater, 0))) for q in out]
