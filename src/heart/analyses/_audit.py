"""The judge audit: per judge or rater, how its verdicts lean on things that should not matter.

Every source is audited alike: LLM judges heart called, people in the web app, and judges of
either kind whose verdicts were imported from a judgments file. For each: the flip rate (of the
pairs it saw in both A/B orders with a winner both times, those whose winner changed), the share
of verdicts won by the reply shown first, by the longer reply, by the generic-warmth control, and
(LLM judges) by the judge's own family where it rated its own family. Each share carries a Wilson
interval. A judge is flagged unreliable when its flip rate or position preference says its
verdicts track the order of presentation rather than the replies; other leanings are listed as
cautions.

A tie ("about the same") favours neither position nor reply, so it takes no part in any share:
the first-position share is the share of the verdicts that named a winner, and the audit says
how many ties it left out. People are held to the same rules as LLM judges.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import Text, cast, func, select

from heart.analyses._comparisons import Comparisons, load_comparisons
from heart.stats import Share, wilson_interval
from heart.store import JudgeRow, JudgmentRow, Store, imported_judgment
from heart.types import JudgeSource, Status, SystemKind

POSITION_LIMIT = 0.70  # first-shown share beyond 70/30 (interval clear of 1/2) → unreliable
FLIP_LIMIT = 0.25  # flip rate whose interval lies above 25% → unreliable
LEANING_LIMIT = 0.70  # longer-reply or own-family share beyond 70% (interval clear of 1/2)


def wilson_share(hits: int, n: int, level: float) -> Share | None:
    """``hits`` of ``n`` with its Wilson interval at ``level``; None when ``n`` is 0."""
    if n == 0:
        return None
    low, high = wilson_interval(hits, n, level)
    return Share(hits, n, low, high)


@dataclass(frozen=True)
class VerdictCounts:
    """What became of a judge's answers: valid, failed, valid only after a re-ask, and valid ones
    imported from a judgments file (``heart.store.imported_judgment``)."""

    ok: int = 0
    failed: int = 0
    reasked: int = 0
    imported: int = 0


@dataclass(frozen=True)
class JudgeAudit:
    """One judge's or rater's audit, with the evidence behind it: ``verdicts`` counted (ties
    included; ``ties`` of them named no winner), ``both_orders`` pairs seen in both orders, the
    ``source`` (llm or human) and, in ``counts``, how many verdicts were imported."""

    judge: str
    family: str
    verdicts: int
    first_position: Share | None
    flip: Share | None
    longer: Share | None
    control: Share | None
    own_family: Share | None
    counts: VerdictCounts
    problems: tuple[str, ...]  # why the judge is unreliable
    cautions: tuple[str, ...]  # leanings worth knowing
    source: str = JudgeSource.LLM.value
    ties: int = 0
    both_orders: int = 0

    @property
    def flagged(self) -> bool:
        return bool(self.problems)

    @property
    def person(self) -> bool:
        """A human rater, not an LLM judge."""
        return self.source == JudgeSource.HUMAN

    @property
    def imported(self) -> bool:
        """Some of its verdicts came in by import (per ``counts``)."""
        return self.counts.imported > 0


def _leaning(share: Share) -> tuple[bool, Share]:
    """Whether ``share`` leans to its own side (more than half), and the share of the side it
    leans to: ``share`` itself, or the rest of its verdicts (the Wilson interval mirrors)."""
    if share.value > 0.5:
        return True, share
    return False, Share(share.n - share.hits, share.n, 1 - share.high, 1 - share.low)


def _clear_of_half(share: Share | None, limit: float) -> bool:
    """The share is beyond ``limit`` (either way) and its interval excludes one half."""
    if share is None:
        return False
    beyond = share.value >= limit or share.value <= 1 - limit
    return beyond and (share.low > 0.5 or share.high < 0.5)


def position_problem(first: Share | None) -> str | None:
    """Why verdicts track the order of presentation rather than the replies, or None: the share
    won by the reply shown first is beyond 70/30 and its interval is clear of one half."""
    if first is None or not _clear_of_half(first, POSITION_LIMIT):
        return None
    to_first, won = _leaning(first)
    return f"the reply shown {'first' if to_first else 'second'} won {won.text()} verdicts"


def _flip_share(
    comparisons: Comparisons, rows: npt.NDArray[np.bool_], level: float
) -> tuple[Share | None, int]:
    """Of the pairs the judge saw in both orders with a winner both times, how many changed
    winner; and how many pairs it saw in both orders at all."""
    pair, order_ab = comparisons.pair[rows], comparisons.order_ab[rows].astype(np.int64)
    last = pair.size - 1 - np.unique((pair * 2 + order_ab)[::-1], return_index=True)[1]
    pairs, place = np.unique(pair[last], return_inverse=True)
    seen = np.full((pairs.size, 2), -1, dtype=np.int64)  # outcome per order, the later verdict
    seen[place.reshape(-1), order_ab[last]] = comparisons.outcome[rows][last]
    both = (seen >= 0).all(axis=1)
    decided = both & (seen != 2).all(axis=1)
    changed = decided & (seen[:, 0] != seen[:, 1])
    return wilson_share(int(changed.sum()), int(decided.sum()), level), int(both.sum())


def audit_judges(
    comparisons: Comparisons,
    counts: dict[str, VerdictCounts] | None = None,
    level: float = 0.95,
) -> list[JudgeAudit]:
    """The audit of every judge and rater in ``comparisons``, LLM judges first (ties take no
    part in the shares; own family is a leaning of LLM judges only)."""
    counts = counts or {}
    a_won = comparisons.outcome == 0
    decided = comparisons.outcome != 2
    a, b = comparisons.a, comparisons.b
    # what does not depend on the judge, worked out once
    differ_in_length = comparisons.length_a != comparisons.length_b
    longer_won = np.where(comparisons.length_a > comparisons.length_b, a_won, ~a_won)
    control = np.asarray([k == SystemKind.CONTROL for k in comparisons.system_kinds], dtype=bool)
    one_control = control[a] != control[b]
    control_won = np.where(control[a], a_won, ~a_won)
    audits = []
    for j, judge in enumerate(comparisons.judges):
        theirs = comparisons.judge == j
        mine = theirs & decided
        first = wilson_share(int(comparisons.first_won[mine].sum()), int(mine.sum()), level)
        flip, both_orders = _flip_share(comparisons, theirs, level)

        differ = mine & differ_in_length
        longer = wilson_share(int(longer_won[differ].sum()), int(differ.sum()), level)

        vs_control = mine & one_control
        control_share = wilson_share(
            int(control_won[vs_control].sum()), int(vs_control.sum()), level
        )

        fam, source = comparisons.judge_families[j], comparisons.judge_sources[j]
        own = None
        if source == JudgeSource.LLM and fam:  # people's "family" is every human reply
            ours = np.asarray([f == fam for f in comparisons.system_families], dtype=bool)
            own_a, own_b = ours[a], ours[b]
            one_own = mine & (own_a != own_b)
            own_won = np.where(own_a, a_won, ~a_won)
            own = wilson_share(int(own_won[one_own].sum()), int(one_own.sum()), level)

        problems, cautions = [], []
        if position := position_problem(first):
            problems.append(position)
        if flip is not None and flip.low > FLIP_LIMIT:
            problems.append(f"its winner changed when the order was swapped in {flip.text()} pairs")
        if longer is not None and _clear_of_half(longer, LEANING_LIMIT):
            to_longer, won = _leaning(longer)
            side = "longer" if to_longer else "shorter"
            cautions.append(f"prefers the {side} reply ({won.text()})")
        if control_share is not None and control_share.low > 0.5:
            cautions.append(
                f"prefers the generic-warmth control to real replies ({control_share.text()})"
            )
        if own is not None and own.value >= LEANING_LIMIT and own.low > 0.5:
            cautions.append(f"prefers its own family's replies ({own.text()})")
        audits.append(
            JudgeAudit(
                judge=judge,
                family=fam,
                verdicts=int(theirs.sum()),
                first_position=first,
                flip=flip,
                longer=longer,
                control=control_share,
                own_family=own,
                counts=counts.get(judge, VerdictCounts()),
                problems=tuple(problems),
                cautions=tuple(cautions),
                source=source,
                ties=int((theirs & ~decided).sum()),
                both_orders=both_orders,
            )
        )
    return sorted(audits, key=lambda a: (a.person, a.judge))


def audit_every_judge(store: Store, level: float = 0.95) -> list[JudgeAudit]:
    """The audit of every judge and rater whose verdicts count, of either source, collected by
    heart or imported."""
    return audit_judges(load_comparisons(store, source="all"), verdict_counts(store), level)


def verdict_counts(store: Store, *, source: JudgeSource | None = None) -> dict[str, VerdictCounts]:
    """Per judge (of ``source``, or every judge): valid verdicts, failed ones, valid ones that
    needed a re-ask (counted in the database: a re-asked verdict stores a non-empty list of
    refused answers), and valid ones that came in by import."""
    answers = select(
        JudgmentRow.judge,
        JudgmentRow.status,
        (func.length(cast(JudgmentRow.refused, Text)) > 2).label("reasked"),
        imported_judgment().label("imported"),
    ).join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
    if source is not None:
        answers = answers.where(JudgeRow.source == source)
    each = answers.subquery()
    columns = (each.c.judge, each.c.status, each.c.reasked, each.c.imported)
    query = select(*columns, func.count()).group_by(*columns)
    tally: dict[str, Counter[str]] = {}
    with store.session() as session:
        for judge, status, was_reasked, was_imported, n in session.execute(query):
            counter = tally.setdefault(judge, Counter())
            counter[status] += n
            if status == Status.OK and was_reasked:
                counter["reasked"] += n
            if status == Status.OK and was_imported:
                counter["imported"] += n
    return {
        judge: VerdictCounts(
            ok=c[Status.OK], failed=c[Status.FAILED], reasked=c["reasked"], imported=c["imported"]
        )
        for judge, c in tally.items()
    }
