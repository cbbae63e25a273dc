"""The leaderboard: weighted Bradley–Terry Elo with a conversation bootstrap, win rates per axis."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons
from heart.stats import bootstrap_by_conversation, fit_bradley_terry, paper_interval, win_matrix
from heart.types import Axis


@dataclass(frozen=True)
class Standing:
    """One system's row of the board."""

    system: str
    elo: float
    low: float
    high: float
    paper_low: float
    paper_high: float
    comparisons: int
    win_rate: float
    axis_win_rates: dict[str, float]


@dataclass(frozen=True)
class Leaderboard:
    standings: list[Standing]
    comparisons: int
    conversations: int
    rounds: int
    level: float
    separated: bool


def _shares(
    comparisons: Comparisons, outcome: npt.NDArray[np.int64], k: int
) -> npt.NDArray[np.float64]:
    """Per system: wins plus half the ties, over its comparisons (unweighted)."""
    score = np.zeros(k)
    count = np.zeros(k)
    np.add.at(score, comparisons.a, np.select([outcome == 0, outcome == 2], [1.0, 0.5], 0.0))
    np.add.at(score, comparisons.b, np.select([outcome == 1, outcome == 2], [1.0, 0.5], 0.0))
    np.add.at(count, comparisons.a, 1)
    np.add.at(count, comparisons.b, 1)
    shares: npt.NDArray[np.float64] = np.divide(
        score, count, out=np.full(k, np.nan), where=count > 0
    )
    return shares


def per_conversation_wins(
    comparisons: Comparisons, weighted: bool = True
) -> npt.NDArray[np.float64]:
    """(conversations, systems, systems) weighted win matrices, ties split half and half."""
    k, c = len(comparisons.systems), len(comparisons.conversations)
    winner, loser, tie = comparisons.winner_loser()
    weight = comparisons.strength if weighted else np.ones(len(comparisons))
    share = np.where(tie, 0.5, 1.0) * weight
    tensor = np.zeros((c, k, k))
    np.add.at(tensor, (comparisons.conversation, winner, loser), share)
    np.add.at(tensor, (comparisons.conversation[tie], loser[tie], winner[tie]), share[tie])
    return tensor


def build_leaderboard(
    comparisons: Comparisons, *, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> Leaderboard:
    """Fit the board: Elo (weighted BT), bootstrap interval over conversations, the paper's
    SE = sqrt(1/n) interval, overall and per-axis win rates."""
    k = len(comparisons.systems)
    winner, loser, tie = comparisons.winner_loser()
    wins = win_matrix(winner, loser, comparisons.strength, k, tie=tie)
    fit = fit_bradley_terry(wins)
    boot = bootstrap_by_conversation(
        per_conversation_wins(comparisons), rounds=rounds, seed=seed, level=level
    )
    n_i = np.bincount(comparisons.a, minlength=k) + np.bincount(comparisons.b, minlength=k)
    paper_low, paper_high = paper_interval(fit.theta, n_i, level=level)
    overall = _shares(comparisons, comparisons.outcome, k)
    axes = {
        axis.value: _shares(comparisons, comparisons.axis_outcome[:, i], k)
        for i, axis in enumerate(Axis)
    }
    standings = [
        Standing(
            system=comparisons.systems[i],
            elo=float(fit.elo[i]),
            low=float(boot.low[i]),
            high=float(boot.high[i]),
            paper_low=float(paper_low[i]),
            paper_high=float(paper_high[i]),
            comparisons=int(n_i[i]),
            win_rate=float(overall[i]),
            axis_win_rates={a: float(v[i]) for a, v in axes.items()},
        )
        for i in range(k)
    ]
    standings.sort(key=lambda s: -s.elo)
    return Leaderboard(
        standings=standings,
        comparisons=len(comparisons),
        conversations=len(comparisons.conversations),
        rounds=rounds,
        level=level,
        separated=fit.separated,
    )
