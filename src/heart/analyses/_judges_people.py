"""Where the LLM judges and people part ways, per system: on the item-pairs both judged, each
side's Elo fitted as the boards fit it, the gap judge − people with a paired conversation
bootstrap, and Kendall τ between the two orders."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons
from heart.analyses._leaderboard import (
    INTERVAL_CONVERSATIONS,
    EvidenceRule,
    _distinct,
    _reasons,
)
from heart.analyses._pairing import wins_of
from heart.stats import (
    bootstrap_stack_by_conversation,
    elo_from_theta,
    few_conversations_factor,
    fit_bradley_terry,
    percentile_interval,
    widen,
)

Floats = npt.NDArray[np.float64]
TOGETHER = "LLM judges together"
"""The judge name of the row that pools every LLM judge's verdicts."""


@dataclass(frozen=True)
class SystemGap:
    """One system: its Elo from the judge's verdicts and from people's on the same item-pairs,
    the gap judge − people with its paired-bootstrap interval (NaN below
    ``INTERVAL_CONVERSATIONS`` conversations), and the evidence behind it."""

    system: str
    elo_judge: float
    elo_people: float
    gap: float
    gap_low: float
    gap_high: float
    verdicts_judge: int
    verdicts_people: int
    conversations: int
    preliminary: tuple[str, ...] = ()

    @property
    def apart(self) -> bool:
        """Whether the gap's interval leaves out 0."""
        return bool(self.gap_low > 0 or self.gap_high < 0)


@dataclass(frozen=True)
class JudgeVsPeople:
    """One LLM judge (or ``TOGETHER``) against people on the item-pairs both judged."""

    judge: str
    judges: tuple[str, ...]  # the LLM judges whose verdicts it counts
    systems: list[SystemGap]
    tau: float
    tau_low: float
    tau_high: float
    item_pairs: int
    conversations: int
    verdicts_judge: int
    verdicts_people: int
    rounds: int
    level: float

    @property
    def apart(self) -> list[SystemGap]:
        """The systems the judge rates above or below people beyond noise."""
        return [s for s in self.systems if s.apart]

    def sentence(self) -> str:
        """The finding in words: which systems the judge rates above or below people."""
        if not self.apart:
            return (
                f"{self.judge}: no system's gap to people leaves out zero "
                f"({self.item_pairs} item-pairs both judged, {self.conversations} conversations)."
            )
        parts = [
            f"{s.system} {abs(s.gap):.0f} Elo {'higher' if s.gap > 0 else 'lower'} "
            f"[{s.gap_low:+.0f}, {s.gap_high:+.0f}]"
            for s in self.apart
        ]
        return (
            f"{self.judge} rates {'; '.join(parts)} than people do, beyond noise "
            f"({self.item_pairs} item-pairs both judged, {self.conversations} conversations)."
        )


def kendall_tau_rows(x: Floats, y: Floats) -> Floats:
    """Kendall τ-b between ``x`` and ``y`` along the last axis, row by row (…, K); NaN where a
    row has a NaN or no pair is ordered on either side."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        tau: Floats = (sx * sy).sum(axis=(-2, -1)) / np.sqrt(
            (sx * sx).sum(axis=(-2, -1)) * (sy * sy).sum(axis=(-2, -1))
        )
    return tau


def _one(
    comparisons: Comparisons,
    judge_rows: npt.NDArray[np.bool_],
    name: str,
    *,
    rounds: int,
    seed: int,
    level: float,
    rule: EvidenceRule,
) -> JudgeVsPeople | None:
    people = comparisons.source_rows("human")
    m = int(comparisons.pair.max()) + 1
    both = np.zeros(m, dtype=bool)
    both[comparisons.pair[judge_rows]] = True
    heard = np.zeros(m, dtype=bool)
    heard[comparisons.pair[people]] = True
    shared = both & heard
    keep = (judge_rows | people) & shared[comparisons.pair]
    if not keep.any():
        return None
    mine = comparisons.select(keep)
    human = mine.source_rows("human")
    k = len(mine.systems)
    stack = np.stack([wins_of(mine, ~human), wins_of(mine, human)])
    counts = np.stack([
        np.bincount(np.concatenate([mine.a[rows], mine.b[rows]]), minlength=k)
        for rows in (~human, human)
    ])  # fmt: skip
    played = (counts > 0).all(axis=0)
    if played.sum() < 2:
        return None
    both_sides = np.concatenate([mine.a, mine.b])
    conversations = _distinct(both_sides, np.tile(mine.conversation, 2), k)
    measured = played & (conversations >= INTERVAL_CONVERSATIONS)
    if measured.sum() < 2:
        measured[:] = False
    anchor = np.asarray(measured if measured.any() else played, dtype=bool)
    elo = np.stack([elo_from_theta(fit_bradley_terry(stack[s].sum(axis=0)).theta, anchor)
                    for s in range(2)])  # fmt: skip
    boot = bootstrap_stack_by_conversation(
        stack, rounds=rounds, seed=seed, level=level, anchors=np.stack([anchor, anchor])
    )
    gap = elo[0] - elo[1]
    gap_rounds = boot[0].elo_rounds - boot[1].elo_rounds
    low, high = percentile_interval(gap_rounds, level)
    factor = np.where(measured, few_conversations_factor(conversations, level), np.nan)
    low, high = widen(gap, low, high, factor)
    shown = np.flatnonzero(played)
    tau_rounds = kendall_tau_rows(boot[0].elo_rounds[:, shown], boot[1].elo_rounds[:, shown])
    tau_low, tau_high = (
        percentile_interval(tau_rounds[:, None], level) if measured.sum() >= 2 else (None, None)
    )
    one_rater = len(set(mine.judge[human].tolist())) == 1
    systems = [
        SystemGap(
            system=mine.systems[i], elo_judge=float(elo[0, i]), elo_people=float(elo[1, i]),
            gap=float(gap[i]), gap_low=float(low[i]), gap_high=float(high[i]),
            verdicts_judge=int(counts[0, i]), verdicts_people=int(counts[1, i]),
            conversations=int(conversations[i]),
            preliminary=_reasons(int(counts[1, i]), int(conversations[i]), one_rater,
                                 bool(measured[i]), rule),
        )
        for i in sorted(shown.tolist(), key=lambda i: -gap[i])
    ]  # fmt: skip
    return JudgeVsPeople(
        judge=name,
        judges=tuple(sorted({mine.judges[j] for j in mine.judge[~human].tolist()})),
        systems=systems,
        tau=float(kendall_tau_rows(elo[0, shown], elo[1, shown])),
        tau_low=math.nan if tau_low is None else float(tau_low[0]),
        tau_high=math.nan if tau_high is None else float(tau_high[0]),
        item_pairs=int(shared.sum()),
        conversations=len(mine.conversations),
        verdicts_judge=int((~human).sum()),
        verdicts_people=int(human.sum()),
        rounds=rounds,
        level=level,
    )


def judges_against_people(
    comparisons: Comparisons,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    rule: EvidenceRule | None = None,
) -> list[JudgeVsPeople]:
    """Each LLM judge, and (with more than one) the LLM judges together, against people on the
    item-pairs both judged (``comparisons``: every source); a judge that shares no item-pair
    with people, or fewer than two systems, is left out."""
    rule = rule or EvidenceRule()
    if not len(comparisons):
        return []
    llm = comparisons.source_rows("llm")
    if not llm.any() or not comparisons.source_rows("human").any():
        return []
    judges = sorted({comparisons.judges[j] for j in comparisons.judge[llm].tolist()})
    out = []
    names = np.asarray([*comparisons.judges, ""], dtype=object)[comparisons.judge]
    runs = [(j, llm & (names == j)) for j in judges]
    if len(judges) > 1:
        runs.append((TOGETHER, llm))
    for name, rows in runs:
        found = _one(comparisons, rows, name, rounds=rounds, seed=seed, level=level, rule=rule)
        if found is not None:
            out.append(found)
    return out
