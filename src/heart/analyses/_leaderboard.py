"""The leaderboard: weighted Bradley–Terry Elo with three intervals, win rates and Elo per axis,
head-to-head shares, pairwise differences and the ablations, each system with the evidence
behind it: ranks admit ties, thin evidence is marked preliminary, and no interval is shown
where the conversations are too few to estimate one honestly."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import kendalltau

from heart.analyses._axes import fit_axes, weighted_composite
from heart.analyses._comparisons import Comparisons
from heart.analyses._style import StyleControl, StyleInputs, build_style_control
from heart.frames import records_frame
from heart.stats import (
    EloDifference,
    FlipSearch,
    bootstrap_by_conversation,
    clearly_above,
    cluster_robust_interval,
    conversation_win_matrices,
    elo_differences,
    elo_from_theta,
    few_conversations_factor,
    fit_bradley_terry,
    online_elo,
    paper_interval,
    tied_ranks,
    widen,
    win_matrix,
)

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
ONLINE_ORDERS = 20  # random orders averaged by the online-Elo ablation
INTERVAL_CONVERSATIONS = 5  # fewest conversations a system's interval can honestly rest on


@dataclass(frozen=True)
class EvidenceRule:
    """When a system's standing is firm. Below ``conversations`` conversations or
    ``comparisons`` comparisons it is preliminary; below ``INTERVAL_CONVERSATIONS``
    conversations it has no interval, no rank and no clear difference."""

    conversations: int = 10
    comparisons: int = 50


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
    conversations: int = 0  # conversations its comparisons came from
    opponents: int = 0  # systems it was compared with
    judges: int = 0  # judges and raters whose verdicts compared it
    rank: int = 0  # 1 + systems whose interval lies wholly above; 0: not ranked (no interval)
    preliminary: tuple[str, ...] = ()  # why its standing is not firm yet; empty: it is
    style_elo: float = float("nan")  # Elo with style controlled (NaN: style control off)
    style_low: float = float("nan")  # its bootstrap interval, widened as the plain one
    style_high: float = float("nan")
    # the five-axis profile: per axis the interval of ``axis_elo`` (widened as the plain one;
    # NaN below INTERVAL_CONVERSATIONS conversations on the axis) and the verdicts and
    # conversations behind it
    axis_low: dict[str, float] = field(default_factory=dict)
    axis_high: dict[str, float] = field(default_factory=dict)
    axis_comparisons: dict[str, int] = field(default_factory=dict)
    axis_conversations: dict[str, int] = field(default_factory=dict)
    composite_elo: float = float("nan")  # Σ weight·Elo per axis (NaN: no ratings.weights)
    composite_low: float = float("nan")  # its interval from the same bootstrap rounds
    composite_high: float = float("nan")
    # how much its place above the next system rests on: the fewest verdicts, and conversations,
    # whose removal puts that system at or above it (NaN: the last system, no removal found, or
    # not searched); ``flip_narrowed`` false: the search ran out of refits, so an upper bound
    flip_verdicts: float = float("nan")
    flip_conversations: float = float("nan")
    flip_narrowed: bool = True

    @property
    def ranked(self) -> bool:
        return self.rank > 0


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
    rule: EvidenceRule = EvidenceRule()
    judges: tuple[str, ...] = ()  # every judge and rater whose verdicts the board counts
    style: StyleControl | None = None  # the style-controlled fit (None: style control off)
    axis_judges: dict[str, tuple[str, ...]] = field(default_factory=dict)  # who judged each axis
    weights: dict[str, float] | None = None  # the composite's weights by axis (None: no composite)

    @property
    def systems(self) -> list[str]:
        return [s.system for s in self.standings]

    @property
    def preliminary(self) -> list[Standing]:
        return [s for s in self.standings if s.preliminary]

    @property
    def clear_pairs(self) -> list[EloDifference]:
        return [d for d in self.differences if d.clear]

    def axis_preliminary(self, standing: Standing, axis: str) -> tuple[str, ...]:
        """Why ``standing``'s Elo on ``axis`` is not firm (the board's rule on that axis's
        verdicts and conversations); empty when it is."""
        return _reasons(
            standing.axis_comparisons.get(axis, 0),
            standing.axis_conversations.get(axis, 0),
            False,
            math.isfinite(standing.axis_low.get(axis, math.nan)),
            self.rule,
        )

    def to_pandas(self) -> Any:
        """One row per system in board order: every field of its :class:`Standing`, the axes
        spread into ``axis_win_rates_H``, ``axis_elo_H``, ``axis_low_H``..., an empty cell for
        no data."""
        return records_frame(self.standings)


def _shares(comparisons: Comparisons, outcome: npt.NDArray[np.int64], k: int) -> Floats:
    """Per system: wins plus half the ties, over its comparisons (unweighted)."""
    score = np.zeros(k)
    np.add.at(score, comparisons.a, np.select([outcome == 0, outcome == 2], [1.0, 0.5], 0.0))
    np.add.at(score, comparisons.b, np.select([outcome == 1, outcome == 2], [1.0, 0.5], 0.0))
    count = comparisons.n_per_system().astype(np.float64)
    shares: Floats = np.divide(score, count, out=np.full(k, np.nan), where=count > 0)
    return shares


def per_conversation_wins(comparisons: Comparisons, weighted: bool = True) -> Floats:
    """(conversations, systems, systems) weighted win matrices, ties split half and half."""
    winner, loser, tie = comparisons.winner_loser()
    return conversation_win_matrices(
        comparisons.conversation, winner, loser, comparisons.strength if weighted else None,
        len(comparisons.systems), len(comparisons.conversations), tie=tie,
    )  # fmt: skip


def _tau(x: Floats, y: Floats) -> float:
    tau = kendalltau(x, y).statistic
    return float(tau) if np.isfinite(tau) else float("nan")


def _ablations(
    comparisons: Comparisons, elo: Floats, seed: int, style: StyleControl | None
) -> list[Ablation]:
    """Unweighted outcomes, the weakest verdicts as ties, online Elo and (when fitted) style
    control, beside the default."""
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
    if style is not None:
        kept = ", ".join(c.feature for c in style.coefficients) or "none"
        variants.append(
            (
                "style-controlled",
                f"Bradley–Terry with style covariates (kept: {kept}): Elo net of what reply "
                "length, questions, markdown and stock warmth win on their own",
                style.elo,
            )
        )
    return [
        Ablation(
            name,
            text,
            {s: float(v) for s, v in zip(comparisons.systems, values, strict=True)},
            _tau(elo, values),
        )
        for name, text, values in variants
    ]


@dataclass(frozen=True)
class _Evidence:
    """Per system: conversations, opponents and judges behind its comparisons, and whether they
    all come from a single human rater."""

    conversations: Ints
    opponents: Ints
    judges: Ints
    one_rater: npt.NDArray[np.bool_]


def _distinct(owner: Ints, value: Ints, k: int) -> Ints:
    """Per owner 0..k-1, how many distinct values (small non-negative ints) it has."""
    seen = np.zeros((k, int(value.max()) + 1 if value.size else 0), dtype=bool)
    seen[owner, value] = True
    counts: Ints = seen.sum(axis=1)
    return counts


def _evidence(comparisons: Comparisons) -> _Evidence:
    k = len(comparisons.systems)
    both = np.concatenate([comparisons.a, comparisons.b])
    judge = np.concatenate([comparisons.judge, comparisons.judge])
    human = np.asarray([s == "human" for s in comparisons.judge_sources], dtype=bool)
    people = np.bincount(both, weights=human[judge], minlength=k)
    judges = _distinct(both, judge, k)
    return _Evidence(
        conversations=_distinct(both, np.tile(comparisons.conversation, 2), k),
        opponents=_distinct(both, np.concatenate([comparisons.b, comparisons.a]), k),
        judges=judges,
        one_rater=(judges == 1) & (people == np.bincount(both, minlength=k)),
    )


def _reasons(
    n: int, conversations: int, one_rater: bool, interval: bool, rule: EvidenceRule
) -> tuple[str, ...]:
    """Why a system's standing is preliminary (empty when it is firm)."""
    out = []
    if conversations < INTERVAL_CONVERSATIONS:
        plural = "s" if conversations != 1 else ""
        out.append(
            f"{conversations} conversation{plural}: an interval needs {INTERVAL_CONVERSATIONS}, "
            "so none is shown"
        )
    else:
        if not interval:
            out.append(
                "no interval: fewer than two systems have enough conversations to anchor the scale"
            )
        if conversations < rule.conversations:
            out.append(f"{conversations} conversations (fewer than {rule.conversations})")
    if n < rule.comparisons:
        out.append(f"{n} comparisons (fewer than {rule.comparisons})")
    if one_rater:
        out.append("every verdict comes from one rater")
    return tuple(out)


SEPARATED_STYLE = "a style or a system decides every win, so the fit needed the ridge guard"


def _style_evidence(
    style: StyleControl,
    comparisons: Comparisons,
    evidence: _Evidence,
    measured: npt.NDArray[np.bool_],
    rule: EvidenceRule,
) -> StyleControl:
    """The style fit judged as a system is, on every comparison of the board (each coefficient
    rests on all of them): preliminary below ``rule`` or when the fit needed the ridge guard,
    and without coefficient intervals when no system of the board has one."""
    played = comparisons.n_per_system() > 0
    reasons = _reasons(
        len(comparisons),
        len(comparisons.conversations),
        bool(played.any() and evidence.one_rater[played].all()),
        bool(measured.any()),
        rule,
    ) + ((SEPARATED_STYLE,) if style.separated else ())
    coefficients = (
        style.coefficients
        if measured.any()
        else [replace(c, low=math.nan, high=math.nan) for c in style.coefficients]
    )
    return replace(style, coefficients=coefficients, preliminary=reasons)


def build_leaderboard(
    comparisons: Comparisons,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    rule: EvidenceRule = EvidenceRule(),
    ablations: bool = True,
    style: StyleInputs | None = None,
    weights: Mapping[str, float] | None = None,
    axis_intervals: bool = True,
    fragility: bool | None = None,
) -> Leaderboard:
    """Fit the board from every comparison given: Elo (strength-weighted Bradley–Terry), the
    conversation bootstrap interval (the default), the cluster-robust and the paper's SE =
    sqrt(1/n) intervals, win rates and Elo per axis, pairwise differences with
    Benjamini–Hochberg, head-to-head shares and (unless ``ablations`` is false) the ablations.

    Evidence decides what is shown: Elo is centred on the systems with at least
    ``INTERVAL_CONVERSATIONS`` conversations (when two or more have them), only those get
    intervals, widened for their number of conversations (``few_conversations_factor``), and
    ranks and clear pairs follow Arena's rule on those intervals. A pair is clear only when
    neither system's verdicts all come from one rater. Systems below ``rule`` are preliminary.
    With ``style`` each system also gets its style-controlled Elo (``build_style_control``, same
    anchor, draws and widening), and the ablations its ranking. Per axis, Elo comes with its
    own bootstrap interval from the same draws (``fit_axes``; none when ``axis_intervals`` is
    false) and, with ``weights`` (by axis letter, summing to one), each system gets the weighted
    composite of its axes with an interval from those rounds (``weighted_composite``).
    """
    k = len(comparisons.systems)
    winner, loser, tie = comparisons.winner_loser()
    wins = win_matrix(winner, loser, comparisons.strength, k, tie=tie)
    fit = fit_bradley_terry(wins)
    evidence = _evidence(comparisons)
    measured = evidence.conversations >= INTERVAL_CONVERSATIONS
    if measured.sum() < 2:  # one well-measured system cannot anchor the scale alone
        measured[:] = False
    anchor = measured if measured.any() else None
    elo = elo_from_theta(fit.theta, anchor)
    per_conversation = per_conversation_wins(comparisons)
    boot = bootstrap_by_conversation(
        per_conversation, rounds=rounds, seed=seed, level=level, anchor=anchor
    )
    factor = np.where(measured, few_conversations_factor(evidence.conversations, level), np.nan)
    low, high = widen(elo, boot.low, boot.high, factor)
    robust = cluster_robust_interval(fit.theta, per_conversation, level, anchor)
    robust_low, robust_high = widen(elo, robust[0], robust[1], factor)
    n_i = comparisons.n_per_system()
    paper_low, paper_high = paper_interval(fit.theta, n_i, level=level, anchor=anchor)
    paper_low, paper_high = (
        np.where(measured, paper_low, np.nan),
        np.where(measured, paper_high, np.nan),
    )
    ranks = tied_ranks(low, high)
    styled = (
        None
        if style is None
        else build_style_control(
            comparisons, style, rounds=rounds, seed=seed, level=level, anchor=anchor
        )
    )  # fmt: skip
    if styled is not None:
        styled = _style_evidence(styled, comparisons, evidence, measured, rule)
    nan = np.full(k, np.nan)
    style_elo = nan if styled is None else styled.elo
    style_low, style_high = (
        (nan, nan) if styled is None else widen(style_elo, styled.low, styled.high, factor)
    )
    overall = _shares(comparisons, comparisons.outcome, k)
    axes = fit_axes(
        comparisons, rounds=rounds, seed=seed, level=level,
        min_conversations=INTERVAL_CONVERSATIONS, intervals=axis_intervals,
    )  # fmt: skip
    composite = None if weights is None else weighted_composite(axes, weights, level)
    order = sorted(
        range(k), key=lambda i: (ranks[i] == 0, ranks[i], -elo[i], comparisons.systems[i])
    )
    standings = [
        Standing(
            system=comparisons.systems[i],
            kind=comparisons.system_kinds[i],
            family=comparisons.system_families[i],
            elo=float(elo[i]),
            low=float(low[i]),
            high=float(high[i]),
            robust_low=float(robust_low[i]),
            robust_high=float(robust_high[i]),
            paper_low=float(paper_low[i]),
            paper_high=float(paper_high[i]),
            comparisons=int(n_i[i]),
            win_rate=float(overall[i]),
            axis_win_rates={a: float(f.win_rate[i]) for a, f in axes.items()},
            axis_elo={a: float(f.elo[i]) for a, f in axes.items()},
            conversations=int(evidence.conversations[i]),
            opponents=int(evidence.opponents[i]),
            judges=int(evidence.judges[i]),
            rank=int(ranks[i]),
            preliminary=_reasons(
                int(n_i[i]),
                int(evidence.conversations[i]),
                bool(evidence.one_rater[i]),
                bool(measured[i]),
                rule,
            ),
            style_elo=float(style_elo[i]),
            style_low=float(style_low[i]),
            style_high=float(style_high[i]),
            axis_low={a: float(f.low[i]) for a, f in axes.items()},
            axis_high={a: float(f.high[i]) for a, f in axes.items()},
            axis_comparisons={a: int(f.comparisons[i]) for a, f in axes.items()},
            axis_conversations={a: int(f.conversations[i]) for a, f in axes.items()},
            composite_elo=float(nan[i] if composite is None else composite.elo[i]),
            composite_low=float(nan[i] if composite is None else composite.low[i]),
            composite_high=float(nan[i] if composite is None else composite.high[i]),
        )
        for i in order
    ]
    if ablations if fragility is None else fragility:
        standings = fragile_orders(comparisons, standings)
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
        differences=_differences(elo, boot.elo_rounds, low, high, evidence, measured, order, level),
        ablations=_ablations(comparisons, elo, seed, styled) if ablations else [],
        rule=rule,
        judges=tuple(comparisons.judges),
        style=styled,
        axis_judges={a: f.judges for a, f in axes.items()},
        weights=None if weights is None else dict(weights),
    )


def fragile_orders(comparisons: Comparisons, standings: list[Standing]) -> list[Standing]:
    """``standings`` (board order) with, on each but the last, the fewest verdicts and the
    fewest conversations whose removal puts the next system at or above it
    (``FlipSearch``)."""
    index = {s: i for i, s in enumerate(comparisons.systems)}
    search = FlipSearch(
        comparisons.a, comparisons.b, comparisons.a_share, comparisons.strength,
        len(comparisons.systems),
    )  # fmt: skip
    units = (np.arange(len(comparisons)), comparisons.conversation)
    out = list(standings)
    for n in range(len(standings) - 1):
        upper, lower = index[standings[n].system], index[standings[n + 1].system]
        found = [search.count(unit, upper, lower) for unit in units]
        verdicts, conversations = (float("nan") if f.count is None else float(f.count)
                                   for f in found)  # fmt: skip
        out[n] = replace(
            out[n], flip_verdicts=verdicts, flip_conversations=conversations,
            flip_narrowed=all(f.narrowed for f in found),
        )  # fmt: skip
    return out


def _differences(
    elo: Floats,
    elo_rounds: Floats,
    low: Floats,
    high: Floats,
    evidence: _Evidence,
    measured: npt.NDArray[np.bool_],
    order: list[int],
    level: float,
) -> list[EloDifference]:
    """Pairwise differences in board order: bootstrap intervals widened for the fewer
    conversations of the two, significant only between systems with intervals, and clear when
    the two intervals lie apart on evidence from more than one rater."""
    at = np.asarray(order, dtype=np.int64)
    diffs = elo_differences(elo[at], elo_rounds[:, at], level)
    i = at[np.asarray([d.i for d in diffs], dtype=np.int64)]
    j = at[np.asarray([d.j for d in diffs], dtype=np.int64)]
    both = measured[i] & measured[j]
    fewer = np.minimum(evidence.conversations[i], evidence.conversations[j])
    factor = np.where(both, few_conversations_factor(fewer, level), np.nan)
    d_low, d_high = widen(
        np.asarray([d.difference for d in diffs]), np.asarray([d.low for d in diffs]),
        np.asarray([d.high for d in diffs]), factor,
    )  # fmt: skip
    above = clearly_above(low, high)
    apart = above[i, j] | above[j, i]
    clear = both & ~evidence.one_rater[i] & ~evidence.one_rater[j] & apart
    return [
        replace(
            d,
            low=float(d_low[n]),
            high=float(d_high[n]),
            significant=d.significant and bool(both[n]),
            clear=bool(clear[n]),
        )
        for n, d in enumerate(diffs)
    ]
