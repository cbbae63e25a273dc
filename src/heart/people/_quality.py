"""Quality control of human work: gold and attention checks, and odd completion times.

A rater who fails half or more of the checks they took is excluded from the analyses as soon
as the failing answer is stored: the rater and their work stay in the store, with the reason,
they get no more tasks, and the pairs they judged go back to the pool so that every pair still
gets its number of raters who count. A task's time is from serving to
submitting; times far from the median of their kind (robust z-score over 3.5, from the
median absolute deviation) are flagged for a look, not excluded.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from heart.people._tasks import JUDGE, reopen
from heart.store import JudgmentRow, RaterRow, Store, TaskRow, counted_judgment

OUTLIER_Z = 3.5
MAD_TO_SD = 1.4826  # MAD of a normal distribution times this is its standard deviation


@dataclass(frozen=True)
class RaterQuality:
    rater: str
    entry: str
    tasks: dict[str, int]  # kind -> submitted
    checks: int
    failed: int
    odd_times: int
    median_seconds: float
    excluded: str | None
    counted: int = 0  # verdicts the analyses count (none once excluded)


def exclusion_reason(checks: int, failed: int) -> str | None:
    """Why a rater who failed ``failed`` of ``checks`` checks is excluded, or None."""
    if checks and 2 * failed >= checks:
        return f"failed {failed} of {checks} quality checks"
    return None


def judge_checks(session: Session, rater: str) -> tuple[int, int]:
    """How many checks ``rater`` has submitted, and how many of them they failed."""
    checks, failed = session.execute(
        select(func.count(), func.count().filter(~TaskRow.passed)).where(
            TaskRow.rater_id == rater, TaskRow.done, TaskRow.check.is_not(None)
        )
    ).one()
    return int(checks), int(failed)


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


def review_quality(store: Store) -> list[RaterQuality]:
    """Score every rater's checks and times, excluding (with the reason) anyone who failed half
    or more of their checks and is not excluded yet."""
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
        out = []
        people = list(session.scalars(select(RaterRow).order_by(RaterRow.id)))
        for person in people:
            mine = by_rater[person.id]
            checks = [r for r in mine if r.check]
            failed = sum(1 for r in checks if r.passed is False)
            reason = exclusion_reason(len(checks), failed)
            if reason and not person.excluded_reason:
                exclude(session, person.id, reason)  # stored before the rule applied on submit
            times = [r.submitted_at - r.served_at for r in mine if r.served_at and r.submitted_at]
            tasks: dict[str, int] = defaultdict(int)
            for r in mine:
                if not r.check:
                    tasks[r.kind] += 1
            out.append(
                RaterQuality(
                    rater=person.id, entry=str(person.meta.get("entry", "")), tasks=dict(tasks),
                    checks=len(checks), failed=failed, odd_times=odd[person.id],
                    median_seconds=float(np.median(times)) if times else float("nan"),
                    excluded=person.excluded_reason,
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
