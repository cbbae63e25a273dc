"""The leaderboard: weighted Bradley–Terry Elo with three intervals, win rates and Elo per axis,
head-to-head shares, pairwise differences and the ablations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import kendalltau

from heart.analyses._comparisons import Comparisons
from heart.stats import (
    EloDifference,
    bootstrap_by_conversation,
    cluster_robust_interval,
    elo_differences,
    fit_bradley_terry,
    online_elo,
    paper_interval,
    win_matrix,
)
from heart.types import Axis

Floats = npt.NDArray[np.float64]
ONLINE_ORDERS = 20  # random orders averaged by the online-Elo ablation


@dataclass(frozen=True)
class Standing:
    """One system's row of the board: Elo with the bootstrap (default), cluster-robust and the
    paper's intervals, its comparisons, and its win rates and Elo overall and per axis (NaN on
    an axis no verdict of its comparisons judged: no data)."""

    system: str
    kind: str
    family: str
    elo: float
    low: float
    high: float
    robust_low: float
    robust_high: float
    paper_low: float
    paper_high: float
    comparisons: int
    win_rate: float
    axis_win_rates: dict[str, float]
    axis_elo: dict[str, float]


@dataclass(frozen=True)
class Ablation:
    """The board's systems rated another way, and how far the ranking moved (Kendall τ)."""

    name: str
    description: str
    elo: dict[str, float]
    kendall_tau: float


@dataclass(frozen=True)
class Leaderboard:
    standings: list[Standing]
    comparisons: int
    conversations: int
    rounds: int
    level: float
    separated: bool
    separated_rounds: int
    head_to_head: Floats  # [i, j]: share of i-vs-j comparisons won by i (ties half), in board order
    differences: list[EloDifference]  # indices in board order
    ablations: list[Ablation]

    @property
    def systems(self) -> list[str]:
        return [s.system for s in self.standings]


def _shares(comparisons: Comparisons, outcome: npt.NDArray[np.int64], k: int) -> Floats:
    """Per system: wins plus half the ties, over its comparisons (unweighted)."""
    score = np.zeros(k)
    np.add.at(score, comparisons.a, np.select([outcome == 0, outcome == 2], [1.0, 0.5], 0.0))
    np.add.at(score, comparisons.b, np.select([outcome == 1, outcome == 2], [1.0, 0.5], 0.0))
    count = comparisons.n_per_system().astype(np.float64)
    shares: Floats = np.divide(score, count, out=np.full(k, np.nan), where=count > 0)
    return shares


def _winner_loser(
    comparisons: Comparisons, outcome: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    b_won = outcome == 1
    return (
        np.where(b_won, comparisons.b, comparisons.a),
        np.where(b_won, comparisons.a, comparisons.b),
        outcome == 2,
    )


def per_conversation_wins(comparisons: Comparisons, weighted: bool = True) -> Floats:
    """(conversations, systems, systems) weighted win matrices, ties split half and half."""
    k, c = len(comparisons.systems), len(comparisons.conversations)
    winner, loser, tie = comparisons.winner_loser()
    weight = comparisons.strength if weighted else np.ones(len(comparisons))
    share = np.where(tie, 0.5, 1.0) * weight
    flat = np.bincount(
        (comparisons.conversation * k + winner) * k + loser, weights=share, minlength=c * k * k
    ).astype(np.float64)
    flat += np.bincount(
        (comparisons.conversation[tie] * k + loser[tie]) * k + winner[tie],
        weights=share[tie],
        minlength=c * k * k,
    )
    return flat.reshape(c, k, k)


def _axis_results(comparisons: Comparisons, k: int) -> tuple[dict[str, Floats], dict[str, Floats]]:
    """Win rates and Elo per axis, from the verdicts that judged the axis (each weighted by its
    strength, "none" a tie of weight one); NaN for a system no such verdict compared."""
    rates, elos = {}, {}
    for i, axis in enumerate(Axis):
        given = comparisons.axis_given[:, i]
        rates[axis.value] = np.full(k, np.nan)
        elos[axis.value] = np.full(k, np.nan)
        if not given.any():
            continue
        judged = comparisons.select(given)
        kept = [comparisons.systems.index(s) for s in judged.systems]
        outcome = judged.axis_outcome[:, i]
        winner, loser, tie = _winner_loser(judged, outcome)
        weight = np.where(tie, 1.0, np.maximum(judged.axis_strength[:, i], 1.0))
        fit = fit_bradley_terry(win_matrix(winner, loser, weight, len(kept), tie=tie))
        rates[axis.value][kept] = _shares(judged, outcome, len(kept))
        elos[axis.value][kept] = fit.elo
    return rates, elos


def _tau(x: Floats, y: Floats) -> float:
    tau = kendalltau(x, y).statistic
    return float(tau) if np.isfinite(tau) else float("nan")


def _ablations(comparisons: Comparisons, elo: Floats, seed: int) -> list[Ablation]:
    """Unweighted outcomes, the weakest verdicts as ties, and online Elo, beside the default."""
    k = len(comparisons.systems)
    winner, loser, tie = comparisons.winner_loser()
    unweighted = fit_bradley_terry(win_matrix(winner, loser, None, k, tie=tie)).elo
    weakest = tie | (comparisons.strength <= 1)
    ties = fit_bradley_terry(win_matrix(winner, loser, comparisons.strength, k, tie=weakest)).elo
    online = online_elo(winner, loser, tie, k, permutations=ONLINE_ORDERS, seed=seed)
    variants = [
        ("unweighted", "every verdict counts once, whatever its strength", unweighted),
        (
            "ties allowed",
            "verdicts of the weakest strength (1 of 5) count as ties, half to each side",
            ties,
        ),
        (
            "online Elo",
            f"sequential Elo updates (K = 4), averaged over {ONLINE_ORDERS} random orders",
            online,
        ),
    ]
    return [
        Ablation(
            name,
            text,
            {s: float(v) for s, v in zip(comparisons.systems, values, strict=True)},
            _tau(elo, values),
        )
        for name, text, values in variants
    ]


def build_leaderboard(
    comparisons: Comparisons, *, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> Leaderboard:
    """Fit the board from every comparison given: Elo (strength-weighted Bradley–Terry), the
    conversation bootstrap interval (the default), the cluster-robust and the paper's SE =
    sqrt(1/n) intervals, win rates and Elo per axis, pairwise differences with
    Benjamini–Hochberg, head-to-head shares and the ablations."""
    k = len(comparisons.systems)
    winner, loser, tie = comparisons.winner_loser()
    wins = win_matrix(winner, loser, comparisons.strength, k, tie=tie)
    fit = fit_bradley_terry(wins)
    per_conversation = per_conversation_wins(comparisons)
    boot = bootstrap_by_conversation(per_conversation, rounds=rounds, seed=seed, level=level)
    robust_low, robust_high, _ = cluster_robust_interval(fit.theta, per_conversation, level)
    n_i = comparisons.n_per_system()
    paper_low, paper_high = paper_interval(fit.theta, n_i, level=level)
    overall = _shares(comparisons, comparisons.outcome, k)
    axis_rates, axis_elo = _axis_results(comparisons, k)
    order = sorted(range(k), key=lambda i: (-fit.elo[i], comparisons.systems[i]))
    standings = [
        Standing(
            system=comparisons.systems[i],
            kind=comparisons.system_kinds[i],
            family=comparisons.system_families[i],
            elo=float(fit.elo[i]),
            low=float(boot.low[i]),
            high=float(boot.high[i]),
            robust_low=float(robust_low[i]),
            robust_high=float(robust_high[i]),
            paper_low=float(paper_low[i]),
            paper_high=float(paper_high[i]),
            comparisons=int(n_i[i]),
            win_rate=float(overall[i]),
            axis_win_rates={a: float(v[i]) for a, v in axis_rates.items()},
            axis_elo={a: float(v[i]) for a, v in axis_elo.items()},
        )
        for i in order
    ]
    raw = win_matrix(winner, loser, None, k, tie=tie)[np.ix_(order, order)]
    met = raw + raw.T
    head_to_head = np.divide(raw, met, out=np.full((k, k), np.nan), where=met > 0)
    return Leaderboard(
        standings=standings,
        comparisons=len(comparisons),
        conversations=len(comparisons.conversations),
        rounds=rounds,
        level=level,
        separated=fit.separated,
        separated_rounds=boot.separated_rounds,
        head_to_head=head_to_head,
        differences=elo_differences(fit.elo[order], boot.elo_rounds[:, order], level),
        ablations=_ablations(comparisons, fit.elo, seed),
    )
