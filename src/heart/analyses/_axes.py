"""The five-axis profile: a Bradley–Terry fit per HEART axis with its conversation-bootstrap
interval and the evidence behind it, and the weighted composite of those fits that a study's
``ratings.weights`` asks for, with an interval from the same resampled conversations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons, axis_weight
from heart.stats import (
    bootstrap_stack_by_conversation,
    conversation_win_matrices,
    elo_from_theta,
    few_conversations_factor,
    fit_bradley_terry,
    overall_win_rate,
    percentile_interval,
    widen,
)
from heart.types import Axis

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
AXIS_LETTERS = tuple(axis.value for axis in Axis)


@dataclass(frozen=True, eq=False)
class AxisFit:
    """One axis over a board's systems (board order of ``Comparisons.systems``): win rate, Elo
    and its interval (NaN where no verdict on the system judged the axis; the interval NaN
    where the system met others on the axis in fewer than ``min_conversations``
    conversations), the verdicts and conversations behind each, the judges who gave them, and
    the Elo of every bootstrap round (rounds, systems; none when intervals were not asked)."""

    axis: str
    win_rate: Floats
    elo: Floats
    low: Floats
    high: Floats
    comparisons: Ints
    conversations: Ints
    judges: tuple[str, ...]
    elo_rounds: Floats | None
    measured: npt.NDArray[np.bool_]


def _distinct_conversations(rows: Comparisons, given: npt.NDArray[np.bool_], k: int) -> Ints:
    both = np.concatenate([rows.a[given], rows.b[given]])
    conversation = np.tile(rows.conversation[given], 2)
    seen = np.zeros((k, len(rows.conversations)), dtype=bool)
    seen[both, conversation] = True
    counts: Ints = seen.sum(axis=1)
    return counts


@dataclass(frozen=True, eq=False)
class _AxisPoint:
    """An axis fitted on all its verdicts, with what its bootstrap needs (none without any)."""

    fit: AxisFit
    per_conversation: Floats | None  # (conversations, systems, systems)
    anchor: npt.NDArray[np.bool_]


def _fit_point(comparisons: Comparisons, axis: Axis, min_conversations: int) -> _AxisPoint:
    """The axis's verdicts (each weighted by its strength, "none" a tie of weight one) fitted
    over every system of ``comparisons``, Elo centred as the board's: on the systems with at
    least ``min_conversations`` conversations on the axis when two or more have them, else on
    every system the axis compared."""
    i = list(Axis).index(axis)
    k, c = len(comparisons.systems), len(comparisons.conversations)
    given = comparisons.axis_given[:, i]
    nan = np.full(k, np.nan)
    n = np.bincount(comparisons.a[given], minlength=k) + np.bincount(
        comparisons.b[given], minlength=k
    )
    if not given.any():
        zero = np.zeros(k, dtype=np.int64)
        empty = AxisFit(axis.value, nan, nan, nan, nan, zero, zero, (), None, zero > 0)
        return _AxisPoint(empty, None, zero > 0)
    outcome = comparisons.axis_outcome[given, i]
    a, b = comparisons.a[given], comparisons.b[given]
    winner, loser, tie = np.where(outcome == 1, b, a), np.where(outcome == 1, a, b), outcome == 2
    weight = axis_weight(outcome, comparisons.axis_strength[given, i])
    conversations = _distinct_conversations(comparisons, given, k)
    compared = n > 0
    measured = conversations >= min_conversations
    if measured.sum() < 2:  # one well-measured system cannot anchor the scale alone
        measured[:] = False
    anchor = measured if measured.any() else compared
    per_conversation = conversation_win_matrices(
        comparisons.conversation[given], winner, loser, weight, k, c, tie=tie
    )
    theta = fit_bradley_terry(per_conversation.sum(axis=0)).theta
    judges = tuple(comparisons.judges[j] for j in np.unique(comparisons.judge[given]).tolist())
    fit = AxisFit(
        axis=axis.value,
        win_rate=overall_win_rate(winner, loser, tie, k),
        elo=np.where(compared, elo_from_theta(theta, anchor), np.nan),
        low=nan,
        high=nan,
        comparisons=n.astype(np.int64),
        conversations=conversations,
        judges=judges,
        elo_rounds=None,
        measured=measured,
    )
    return _AxisPoint(fit, per_conversation, anchor)


def fit_axes(
    comparisons: Comparisons,
    *,
    rounds: int,
    seed: int,
    level: float,
    min_conversations: int,
    intervals: bool = True,
) -> dict[str, AxisFit]:
    """Each of the five axes fitted on its own verdicts (by letter), with (unless
    ``intervals`` is false) its conversation-bootstrap interval, widened as the board's and
    only for systems with ``min_conversations`` conversations on the axis. The axes' bootstraps
    run as one batch over the board's own conversations with its seed, so round r of every
    axis draws the same conversations as round r of the board."""
    points = {axis.value: _fit_point(comparisons, axis, min_conversations) for axis in Axis}
    judged = [a for a, p in points.items() if p.per_conversation is not None]
    out = {a: p.fit for a, p in points.items()}
    if not intervals or not judged:
        return out
    boots = bootstrap_stack_by_conversation(
        np.stack([points[a].per_conversation for a in judged]),  # type: ignore[misc]
        rounds=rounds, seed=seed, level=level,
        anchors=np.stack([points[a].anchor for a in judged]),
    )  # fmt: skip
    for a, boot in zip(judged, boots, strict=True):
        fit = out[a]
        factor = np.where(fit.measured, few_conversations_factor(fit.conversations, level), np.nan)
        low, high = widen(fit.elo, boot.low, boot.high, factor)
        out[a] = replace(fit, low=low, high=high, elo_rounds=boot.elo_rounds)
    return out


@dataclass(frozen=True, eq=False)
class Composite:
    """The weighted composite per system (board order): Σ weight·(Elo on the axis), its
    interval, and the conversations of its thinnest weighted axis. NaN where a weighted axis
    has no Elo for the system; the interval NaN where a weighted axis has none."""

    elo: Floats
    low: Floats
    high: Floats
    conversations: Ints


def weighted_composite(
    fits: Mapping[str, AxisFit], weights: Mapping[str, float], level: float
) -> Composite:
    """Σ_a w_a·Elo_a per system from the axes' fits (``weights`` by letter, summing to one), and
    its interval from the same sum in each bootstrap round: the axes' rounds share their
    resampled conversations, so the interval carries the correlation between the axes. Widened
    as the board's intervals are, for the fewest conversations among the weighted axes."""
    used = [a for a in AXIS_LETTERS if weights.get(a, 0.0) > 0]
    if not used:
        raise ValueError("weights must give at least one axis a positive weight")
    w = np.asarray([weights[a] for a in used])
    elo = np.tensordot(w, np.stack([fits[a].elo for a in used]), axes=1)
    fewest = np.min(np.stack([fits[a].conversations for a in used]), axis=0)
    measured = np.logical_and.reduce([fits[a].measured for a in used])
    boots = [fits[a].elo_rounds for a in used]
    if any(b is None for b in boots):
        nan = np.full(elo.shape, np.nan)
        return Composite(elo, nan, nan, fewest)
    rounds = np.tensordot(w, np.stack([b for b in boots if b is not None]), axes=1)
    low, high = percentile_interval(rounds, level)
    factor = np.where(measured, few_conversations_factor(fewest, level), np.nan)
    low, high = widen(elo, low, high, factor)
    return Composite(elo, low, high, fewest)
