"""A person's session: the steps of work they are led through in order (``people.flow``), how
many tasks each step takes, which step is next, and why a session has ended.

A step's quota is its share of ``people.tasks_per_person``; steps without a share split what
the others leave, evenly, and whole tasks go by largest remainder. A step whose work runs out
hands its unused tasks on to the next. Without ``tasks_per_person`` a step lasts as long as it
has work for the person. A session ends when its tasks are submitted (COMPLETE), when the study
has no work left for the person (NO_WORK), or when quality control excludes them (EXCLUDED).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, select

from heart.config import FlowStep, PeopleSpec
from heart.people._claims import open_to
from heart.store import RaterRow, Store, TaskRow

COMPLETE, NO_WORK, EXCLUDED = "complete", "no work", "excluded"
ENDINGS = (COMPLETE, NO_WORK, EXCLUDED)


def quotas(steps: Sequence[FlowStep], tasks: int | None) -> list[int | None]:
    """Each step's tasks out of ``tasks`` (None each when the session has no size)."""
    if tasks is None:
        return [None] * len(steps)
    given = sum(step.share or 0.0 for step in steps)
    unshared = sum(step.share is None for step in steps)
    rest = max(0.0, 1.0 - given) / unshared if unshared else 0.0
    wanted = [tasks * (step.share if step.share is not None else rest) for step in steps]
    whole = [math.floor(w + 1e-9) for w in wanted]
    by_remainder = sorted(range(len(steps)), key=lambda i: (whole[i] - wanted[i], i))
    for i in by_remainder[: tasks - sum(whole)]:
        whole[i] += 1
    return list[int | None](whole)


def next_kind(
    steps: Sequence[FlowStep],
    tasks: int | None,
    done: Mapping[str, int],
    has_work: Callable[[str], bool],
) -> str | None:
    """The kind of work to do next, given the tasks submitted of each kind (``done``) and
    whether work of a kind is open to the person; None when the session is over."""
    if tasks is not None and sum(done.values()) >= tasks:
        return None
    carried = 0
    for step, quota in zip(steps, quotas(steps, tasks), strict=True):
        mine = done.get(step.kind, 0)
        allowance = None if quota is None else quota + carried
        if (allowance is None or mine < allowance) and has_work(step.kind):
            return step.kind
        carried = 0 if allowance is None else max(0, allowance - mine)
    return None


@dataclass(frozen=True)
class SessionState:
    """Where a person's session stands: the kind of work next (None once it has ended), why it
    ended, the tasks they submitted (in all, and by kind), and how many the session holds
    (None: no limit)."""

    kind: str | None
    ended: str | None
    done: int
    tasks: int | None
    done_by_kind: Mapping[str, int] = field(default_factory=dict)

    @property
    def left(self) -> int | None:
        return None if self.tasks is None else max(0, self.tasks - self.done)


def rater_steps(spec: PeopleSpec, meta: Mapping[str, object]) -> tuple[FlowStep, ...]:
    """The flow of one person: the one their invite named (kept in their ``meta``), else the
    study's."""
    named = meta.get("flow")
    if isinstance(named, list) and named:
        return tuple(FlowStep.model_validate(step) for step in named)
    return spec.steps


def state_of(
    steps: Sequence[FlowStep],
    tasks: int | None,
    done: Mapping[str, int],
    excluded: bool,
    has_work: Callable[[str], bool],
) -> SessionState:
    """Where a session stands, from the flow, the session's size, the tasks submitted by kind,
    whether the person is excluded, and whether work of a kind is open to them (asked only of
    the kinds the flow reaches)."""
    total = sum(done.values())
    if excluded:
        return SessionState(None, EXCLUDED, total, tasks, done)
    kind = next_kind(steps, tasks, done, has_work)
    if kind is not None:
        return SessionState(kind, None, total, tasks, done)
    ended = COMPLETE if tasks is not None and total >= tasks else NO_WORK
    return SessionState(None, ended, total, tasks, done)


def session_state(store: Store, rater: str, spec: PeopleSpec, *, now: float) -> SessionState:
    """Where ``rater``'s session stands at ``now`` (an unknown rater: excluded)."""
    with store.connection() as connection:
        person = connection.execute(
            select(RaterRow.meta, RaterRow.excluded_reason).where(RaterRow.id == rater)
        ).one_or_none()
        counts = connection.execute(
            select(TaskRow.kind, func.count())
            .where(TaskRow.rater_id == rater, TaskRow.done)
            .group_by(TaskRow.kind)
        ).all()
    done = {str(kind): int(n) for kind, n in counts}
    steps = rater_steps(spec, person.meta or {} if person else {})
    return state_of(
        steps, spec.tasks_per_person, done, person is None or bool(person.excluded_reason),
        lambda kind: open_to(store, rater, kind, now=now) > 0,
    )  # fmt: skip


MIN_TIMED = 20
"""Submitted tasks before the study's own median time per task replaces its stated one."""


@dataclass(frozen=True)
class TaskTime:
    """Seconds one task takes: the median of ``tasks`` submitted tasks (serving to sending),
    or, before ``MIN_TIMED`` of them, ``people.seconds_per_task`` (``tasks`` then counts
    those there are)."""

    seconds: float
    tasks: int
    measured: bool

    def text(self) -> str:
        if self.measured:
            return f"the median of {self.tasks} tasks done so far"
        return f"the study's estimate (people.seconds_per_task), until {MIN_TIMED} tasks are done"


def task_time(store: Store, spec: PeopleSpec) -> TaskTime:
    """Seconds per task for time estimates and prices (see TaskTime)."""
    with store.connection() as connection:
        times: list[float] = [
            t
            for t in connection.scalars(
                select(TaskRow.submitted_at - TaskRow.served_at).where(
                    TaskRow.done, TaskRow.served_at.is_not(None), TaskRow.submitted_at.is_not(None)
                )
            )
            if t is not None
        ]
    if len(times) >= MIN_TIMED:
        return TaskTime(float(statistics.median(times)), len(times), True)
    return TaskTime(spec.seconds_per_task, len(times), False)


VERBS = {"write": ("write", "reply", "replies"), "judge": ("compare", "pair", "pairs"),
         "label": ("label", "reply", "replies")}  # fmt: skip
"""How a page names a number of tasks of each kind."""


def plan_text(steps: Sequence[FlowStep], tasks: int | None) -> str:
    """A session's steps in words: "write 1 reply, then compare 3 pairs"."""
    parts = []
    for step, quota in zip(steps, quotas(steps, tasks), strict=True):
        verb, one, many = VERBS[step.kind]
        if quota is None:
            parts.append(f"{verb} {many}")
        elif quota:
            parts.append(f"{verb} {quota} {one if quota == 1 else many}")
    return ", then ".join(parts)
