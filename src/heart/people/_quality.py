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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from heart.config import PeopleSpec
from heart.people._flags import (
    APPROVE,
    RATER_LEVEL,
    RaterFlag,
    decide,
    exclusion_reason,
    rater_flags,
)
from heart.people._measures import RaterMeasures, measure_raters
from heart.people._tasks import JUDGE, reopen
from heart.store import JudgmentRow, RaterRow, Store, TaskRow, counted_judgment

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
    """Measure ``rater`` again and exclude them if a flag of theirs excludes (and they are not
    excluded yet); the reason, or None."""
    person = session.get(RaterRow, rater)
    if person is None or person.excluded_reason:
        return None
    with_others = "agreement" in spec.exclude_flags  # the only flag that reads other raters
    measures = measure_raters(session, RATER_LEVEL, [rater], agreement=with_others)[rater]
    reason = exclusion_reason(rater_flags(measures, spec), spec)
    if reason:
        exclude(session, rater, reason)
    return reason


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
        measures = measure_raters(session, RATER_LEVEL, [rater], agreement=agreement)[rater]
    flags = rater_flags(measures, spec)
    decision, why = decide(measures, flags, stored or exclusion_reason(flags, spec))
    return decision, why, measures


def exclude(session: Session, rater: str, reason: str) -> None:
    """Exclude ``rater`` with ``reason``: give back the seats they hold unfinished, and reopen
    the pairs they judged (their verdicts stay in the store, left out of the analyses). Their
    check seats stay theirs, as the evidence."""
    person = session.get(RaterRow, rater)
    assert person is not None
    person.excluded_reason = reason
    mine = TaskRow.rater_id == rater
    judged = and_(TaskRow.done, TaskRow.kind == JUDGE, TaskRow.check.is_(None))
    reopen(session, and_(mine, ~TaskRow.done | judged))


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
            measures = measured.get(person.id, RaterMeasures())
            flags = rater_flags(measures, spec)
            reason = exclusion_reason(flags, spec)
            if act and reason and not person.excluded_reason:
                exclude(session, person.id, reason)  # stored before the rule applied on submit
            excluded = person.excluded_reason or reason
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
