"""A study's size before paying for it: from a pilot's verdicts (or stated assumptions), the
conversations, LLM-judge verdicts and people's verdicts a target needs, with and without the
judges' help, simulated by resampling the pilot's conversations."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons
from heart.analyses._pairing import assist_points, wins_of
from heart.stats import (
    ELO_SCALE,
    assisted_covariances,
    board_covariances,
    gap_power,
    half_widths,
    resampled_counts,
    smallest_size,
)

Floats = npt.NDArray[np.float64]
REACH = 0.8
"""The share of simulated studies that must meet a half-width target (and the power of a gap
target)."""
STUDIES = 200  # simulated studies per size tried


@dataclass(frozen=True)
class PlanTarget:
    """What the study must show: every system's interval at most ``half_width`` Elo each side,
    or 80% power to tell apart two systems ``gap`` Elo apart."""

    half_width: float | None = None
    gap: float | None = None
    level: float = 0.95

    def __post_init__(self) -> None:
        if (self.half_width is None) == (self.gap is None):
            raise ValueError("a plan needs one target: a half-width or a gap")
        for value in (self.half_width, self.gap):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"a target must be a positive number of Elo, got {value}")

    def text(self) -> str:
        if self.half_width is not None:
            return (
                f"every system's {self.level:.0%} interval within ±{self.half_width:g} Elo in "
                f"{REACH:.0%} of studies"
            )
        return f"{REACH:.0%} power to tell apart two systems {self.gap:g} Elo apart"


@dataclass(frozen=True)
class Prices:
    """What one unit of work costs: an LLM-judge verdict (dollars, NaN: not known), and a
    person's task (seconds, and pay per hour in ``currency``, None: not set)."""

    usd_per_judge_verdict: float
    seconds_per_task: float
    seconds_measured: bool
    pay_per_hour: float | None
    currency: str


@dataclass(frozen=True)
class StudyPlan:
    """The size a target needs (None: out of reach below ``MAX_CONVERSATIONS``), what it costs,
    and what the study already has. ``conversations`` and ``items`` are the study's size;
    verdict counts follow the pilot's verdicts per conversation."""

    target: PlanTarget
    basis: str  # "pilot" or "assumptions"
    conversations: int | None
    items: int | None
    judge_verdicts: int | None
    people_conversations: int | None
    people_verdicts: int | None
    people_verdicts_assisted: int | None
    prices: Prices
    have: dict[str, int] = field(default_factory=dict)
    systems: int = 0
    studies: int = STUDIES
    notes: tuple[str, ...] = ()

    def _rater_hours(self, verdicts: int | None) -> float:
        if verdicts is None:
            return math.nan
        return verdicts * self.prices.seconds_per_task / 3600.0

    @property
    def rater_hours(self) -> float:
        return self._rater_hours(self.people_verdicts)

    @property
    def rater_hours_assisted(self) -> float:
        return self._rater_hours(self.people_verdicts_assisted)

    @property
    def judge_usd(self) -> float:
        if self.judge_verdicts is None:
            return math.nan
        return self.judge_verdicts * self.prices.usd_per_judge_verdict

    def rater_pay(self, hours: float) -> float:
        pay = self.prices.pay_per_hour
        return math.nan if pay is None else hours * pay

    def to_json(self) -> dict[str, Any]:
        """The plan for scripts: sizes, dollars of judging, rater pay and hours."""

        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "target": {"half_width": self.target.half_width, "gap": self.target.gap,
                       "level": self.target.level, "reach": REACH},
            "basis": self.basis,
            "items": self.items,
            "conversations": self.conversations,
            "judge_verdicts": self.judge_verdicts,
            "people_verdicts": self.people_verdicts,
            "people_verdicts_assisted": self.people_verdicts_assisted,
            "usd": finite(self.judge_usd),
            "rater_hours": finite(self.rater_hours),
            "rater_hours_assisted": finite(self.rater_hours_assisted),
            "rater_pay": finite(self.rater_pay(self.rater_hours)),
            "rater_pay_assisted": finite(self.rater_pay(self.rater_hours_assisted)),
            "currency": self.prices.currency,
            "have": dict(self.have),
            "simulated_studies": self.studies,
            "notes": list(self.notes),
        }  # fmt: skip


@dataclass(frozen=True)
class _Pilot:
    """A pilot's verdicts as per-conversation matrices: the LLM judges', people's, and for the
    judge-assisted board people's labelled points (y and f), the judges' f on the conversations
    people judged, and on the others."""

    judges: Floats
    people: Floats
    labelled: tuple[Floats, Floats, Floats]
    judged_only: Floats
    judge_per_conversation: float
    people_per_conversation: float
    items_per_conversation: float


def _pilot(comparisons: Comparisons) -> _Pilot:
    llm, human = comparisons.source_rows("llm"), comparisons.source_rows("human")
    c = len(comparisons.conversations)

    def stack(rows: npt.NDArray[np.bool_]) -> Floats:
        """The rows' win matrices of the conversations they hold."""
        return wins_of(comparisons, rows)[np.isin(np.arange(c), comparisons.conversation[rows])]

    points = assist_points(comparisons)
    labelled, (y, fl, fu) = points.labelled, points.stacks
    with_people = np.isin(np.arange(c), comparisons.conversation[labelled])
    with_judges = np.isin(np.arange(c), comparisons.conversation[llm])
    judged_conversations = max(int(with_judges.sum()), 1)
    people_conversations = max(int(np.isin(np.arange(c), comparisons.conversation[human]).sum()), 1)
    return _Pilot(
        judges=stack(llm),
        people=stack(human),
        labelled=(y[with_people], fl[with_people], fu[with_people]),
        judged_only=fu[with_judges & ~with_people],
        judge_per_conversation=int(llm.sum()) / judged_conversations,
        people_per_conversation=int(human.sum()) / people_conversations,
        items_per_conversation=len(comparisons.items) / max(c, 1),
    )


def _meets(target: PlanTarget, covariance: Floats, size: int) -> float:
    """The share of simulated studies (covariances) that meet the target at ``size``."""
    if target.half_width is not None:
        widest = half_widths(covariance, size, target.level).max(axis=1)
        return float(np.mean(widest <= target.half_width))
    assert target.gap is not None
    return float(np.mean(gap_power(covariance, target.gap, target.level)))


def _size_for(stack: Floats, target: PlanTarget, seed: int, studies: int) -> int | None:
    """The fewest conversations, drawn from ``stack``'s, that meet ``target``."""
    if stack.shape[0] < 2:
        return None

    def share(size: int) -> float:
        rng = np.random.default_rng(seed)  # the same draws at every size tried
        counts = resampled_counts(stack.shape[0], size, studies, rng)
        return _meets(target, board_covariances(stack, counts), size)

    return smallest_size(share, REACH, stack.shape[0])


def plan_study(
    comparisons: Comparisons,
    target: PlanTarget,
    prices: Prices,
    *,
    seed: int = 0,
    studies: int = STUDIES,
    basis: str = "pilot",
    have: dict[str, int] | None = None,
) -> StudyPlan:
    """The study's size for ``target`` from the pilot ``comparisons`` (every source): the
    conversations the LLM judges' board needs, the people's verdicts the people's board needs,
    and the people's verdicts the judge-assisted board needs with the judges on the planned
    conversations, each the smallest size at which ``REACH`` of ``studies`` simulated studies
    meet the target (resampling the pilot's conversations); ``have``: what the study holds
    (default: the pilot's ``holdings``, for a pilot made from assumptions the study's own)."""
    pilot = _pilot(comparisons)
    notes = []
    conversations = _size_for(pilot.judges, target, seed, studies) if pilot.judges.size else None
    people_conversations = (
        _size_for(pilot.people, target, seed, studies) if pilot.people.size else None
    )
    assisted = None
    if pilot.labelled[0].shape[0] >= 2 and conversations is not None:
        judges = max(conversations, pilot.judges.shape[0])

        def share(size: int) -> float:
            rng = np.random.default_rng(seed)
            covariance = assisted_covariances(
                pilot.labelled, pilot.judged_only, size, max(judges, size),
                max(studies // 4, 20), rng,
            )  # fmt: skip
            return _meets(target, covariance, size)

        cap = people_conversations or judges
        found = smallest_size(share, REACH, pilot.labelled[0].shape[0], cap=max(cap, 2))
        assisted = None if found is None else round(found * pilot.people_per_conversation)
    for name, stack, size in (("LLM judges'", pilot.judges, conversations),
                              ("people's", pilot.people, people_conversations)):  # fmt: skip
        if stack.shape[0] == 0:
            notes.append(f"no {name} verdicts yet: the {name} board is not planned")
        elif stack.shape[0] < 2:
            notes.append(
                f"the {name} verdicts come from one conversation: too few to resample (give "
                "--systems to plan from assumptions)"
            )
        elif size is None:
            notes.append(f"the {name} board cannot meet the target below a million conversations")
    if pilot.people.shape[0] >= 2 and pilot.labelled[0].shape[0] < 2:
        notes.append("people and judges share fewer than two conversations: no assisted plan")
    if not math.isfinite(prices.usd_per_judge_verdict):
        notes.append("no judge verdict carries a price yet: dollars not estimated")
    items = (
        None if conversations is None else math.ceil(conversations * pilot.items_per_conversation)
    )
    return StudyPlan(
        target=target,
        basis=basis,
        conversations=conversations,
        items=items,
        judge_verdicts=None
        if conversations is None
        else round(conversations * pilot.judge_per_conversation),
        people_conversations=people_conversations,
        people_verdicts=None
        if people_conversations is None
        else round(people_conversations * pilot.people_per_conversation),
        people_verdicts_assisted=assisted,
        prices=prices,
        have=holdings(comparisons) if have is None else have,
        systems=len(comparisons.systems),
        studies=studies,
        notes=tuple(notes),
    )


def holdings(comparisons: Comparisons) -> dict[str, int]:
    """What a study already holds: conversations and items judged, LLM-judge and people's
    verdicts."""
    return {
        "conversations": len(comparisons.conversations),
        "items": len(comparisons.items),
        "judge_verdicts": int(comparisons.source_rows("llm").sum()),
        "people_verdicts": int(comparisons.source_rows("human").sum()),
    }


def assumed_pilot(
    systems: int, gap: float, agreement: float, *, conversations: int = 200, seed: int = 0
) -> Comparisons:
    """A pilot made from stated assumptions, for a study with no verdicts yet: ``systems``
    systems ``gap`` Elo apart in a row, each conversation one item whose every pair one LLM
    judge and one person judge; the judge agrees with the person on ``agreement`` of them."""
    if systems < 2:
        raise ValueError(f"a plan needs at least two systems, got {systems}")
    if not 0.5 <= agreement <= 1.0:
        raise ValueError(f"agreement must lie between 0.5 and 1, got {agreement}")
    rng = np.random.default_rng(seed)
    theta = -np.arange(systems) * gap / ELO_SCALE
    i, j = np.triu_indices(systems, 1)
    m = i.size
    a = np.tile(i, conversations)
    b = np.tile(j, conversations)
    conversation = np.repeat(np.arange(conversations), m)
    person = (rng.random(a.size) >= 1 / (1 + np.exp(-(theta[a] - theta[b])))).astype(np.int64)
    judge = np.where(rng.random(a.size) < agreement, person, 1 - person)
    n = a.size
    pair = np.arange(n)

    def both(x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return np.concatenate([x, x])

    rows = 2 * n
    names = [f"system {s + 1}" for s in range(systems)]
    outcome = np.concatenate([judge, person])
    return Comparisons(
        systems=names, judges=["judge", "person"],
        conversations=[f"c{c}" for c in range(conversations)],
        a=both(a), b=both(b), outcome=outcome, strength=np.ones(rows),
        axis_outcome=np.full((rows, 5), 2, dtype=np.int64),
        judge=np.repeat(np.array([0, 1]), n), conversation=both(conversation),
        first_won=outcome == 0, length_a=np.ones(rows, dtype=np.int64),
        length_b=np.ones(rows, dtype=np.int64), pair=both(pair),
        order_ab=np.ones(rows, dtype=bool), system_kinds=["model"] * systems,
        system_families=names, judge_families=["llm", "human"], judge_sources=["llm", "human"],
        items=[f"i{c}" for c in range(conversations)], item=both(conversation),
        item_subsets=["regular"] * conversations,
        completions=[f"r{x}" for x in range(2 * n)], completion_a=both(pair),
        completion_b=both(pair + n), axis_strength=np.zeros((rows, 5)),
        axis_given=np.zeros((rows, 5), dtype=bool), judgments=[f"v{r}" for r in range(rows)],
    )  # fmt: skip
