"""Regular against adversarial items: each system's Elo on both, the shift with an interval from
resampling conversations (the same draws for both subsets), and whether the order changes."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import kendalltau

from heart.analyses._agreement import human_llm_agreement
from heart.analyses._comparisons import Comparisons, Source
from heart.analyses._leaderboard import per_conversation_wins
from heart.stats import Share, bootstrap_by_conversation, fit_bradley_terry, percentile_interval
from heart.types import Subset

Floats = npt.NDArray[np.float64]
SUBSETS = (Subset.REGULAR.value, Subset.ADVERSARIAL.value)


@dataclass(frozen=True)
class SubsetShift:
    """One system on both subsets: Elo on each (centred on the systems both subsets rank),
    adversarial minus regular with its interval, and its rank on each."""

    system: str
    regular: float
    adversarial: float
    shift: float
    low: float
    high: float
    rank_regular: int
    rank_adversarial: int


@dataclass(frozen=True)
class SubsetComparison:
    """Every system both subsets rank, the rank agreement (Kendall τ) of the two orders, and
    human–LLM agreement on each subset."""

    source: Source
    shifts: list[SubsetShift]
    kendall_tau: float
    only_regular: list[str]  # systems with no adversarial comparison (the ESConv original)
    agreement: dict[str, Share | None]
    rounds: int
    level: float

    @property
    def order_changes(self) -> bool:
        by_regular = sorted(self.shifts, key=lambda s: s.rank_regular)
        return [s.system for s in by_regular] != [
            s.system for s in sorted(self.shifts, key=lambda s: s.rank_adversarial)
        ]


def _on_conversations(sub: Comparisons, conversations: list[str]) -> Floats:
    """The subset's per-conversation win matrices on the study's list of conversations."""
    per = per_conversation_wins(sub)
    k = len(sub.systems)
    out = np.zeros((len(conversations), k, k))
    out[[conversations.index(c) for c in sub.conversations]] = per
    return out


def _centred(elo: Floats, common: list[int]) -> Floats:
    """Elo moved so the systems both subsets rank average 1500 (per row when 2-D)."""
    with warnings.catch_warnings():  # a bootstrap round that drew none of a subset's items
        warnings.simplefilter("ignore", RuntimeWarning)
        out: Floats = elo - np.nanmean(elo[..., common], axis=-1, keepdims=True) + 1500.0
    return out


def compare_subsets(
    comparisons: Comparisons, source: Source, *, rounds: int = 1000, seed: int = 0,
    level: float = 0.95,
) -> SubsetComparison | None:  # fmt: skip
    """The shift from regular to adversarial items of ``source``'s verdicts, or None when
    either subset has fewer than two systems in common with the other."""
    mine = comparisons.by_source(source)
    regular, adversarial = (mine.by_subset(s) for s in SUBSETS)
    common = sorted(set(regular.systems) & set(adversarial.systems))
    if len(regular) == 0 or len(adversarial) == 0 or len(common) < 2:
        return None
    conversations = sorted(set(regular.conversations) | set(adversarial.conversations))
    fits, draws, places = [], [], []
    for sub in (regular, adversarial):
        wins = _on_conversations(sub, conversations)
        place = [sub.systems.index(s) for s in common]
        fits.append(_centred(fit_bradley_terry(wins.sum(axis=0)).elo, place)[place])
        boot = bootstrap_by_conversation(wins, rounds=rounds, seed=seed, level=level)
        draws.append(_centred(boot.elo_rounds, place)[:, place])
        places.append(place)
    shift_rounds = draws[1] - draws[0]
    low, high = percentile_interval(shift_rounds, level)
    rank = [np.argsort(np.argsort(-fit)) + 1 for fit in fits]
    shifts = [
        SubsetShift(
            system, float(fits[0][i]), float(fits[1][i]), float(fits[1][i] - fits[0][i]),
            float(low[i]), float(high[i]), int(rank[0][i]), int(rank[1][i]),
        )
        for i, system in enumerate(common)
    ]  # fmt: skip
    tau = kendalltau(fits[0], fits[1]).statistic
    return SubsetComparison(
        source=source,
        shifts=sorted(shifts, key=lambda s: s.rank_regular),
        kendall_tau=float(tau) if np.isfinite(tau) else float("nan"),
        only_regular=sorted(set(regular.systems) - set(adversarial.systems)),
        agreement={
            s: human_llm_agreement(comparisons.by_subset(s), rounds=rounds, seed=seed, level=level)
            for s in SUBSETS
        },
        rounds=rounds,
        level=level,
    )
