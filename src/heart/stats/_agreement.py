"""Inter-rater agreement: Fleiss' kappa on category counts, Krippendorff's alpha on raw labels."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from heart.stats._bootstrap import conversation_draws
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._types import FloatArray, IntArray


def category_table(labels: IntArray, n_categories: int) -> FloatArray:
    """Per unit, how many raters chose each category: (units, raters) codes → (units, categories).

    Codes run from 0 to ``n_categories - 1``; any negative code marks a missing rating.
    """
    if n_categories < 1:
        raise ValueError(f"n_categories must be a positive integer, got {n_categories}")
    lab = np.asarray(labels)
    if lab.ndim != 2:
        raise ValueError(f"labels must have shape (units, raters), got {lab.shape}")
    if not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(
            f"labels must be integer category codes (negative for missing), got dtype {lab.dtype}"
        )
    if lab.size and lab.max() >= n_categories:
        unit, rater = np.argwhere(lab >= n_categories)[0]
        raise ValueError(
            f"unit {unit}, rater {rater}: label {lab[unit, rater]} is outside "
            f"[0, {n_categories - 1}]; use a negative code for a missing rating"
        )
    units = lab.shape[0]
    unit_idx, rater_idx = np.nonzero(lab >= 0)
    flat = unit_idx * n_categories + lab[unit_idx, rater_idx]
    counts = np.bincount(flat, minlength=units * n_categories)
    return counts.reshape(units, n_categories).astype(np.float64)


def fleiss_kappa(table: FloatArray) -> float:
    """Fleiss' kappa from a (units, categories) table of counts with the same n >= 2 per unit.

    NaN when expected agreement is 1, i.e. every rating falls in a single category.
    """
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
        raise ValueError(f"table must have shape (units, categories) with both >= 1, got {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t != np.round(t)):
        raise ValueError("table must hold non-negative whole-number counts")
    per_unit = t.sum(axis=1)
    n = per_unit[0]
    if np.any(per_unit != n):
        bad = int(np.flatnonzero(per_unit != n)[0])
        raise ValueError(
            f"unit {bad} has {per_unit[bad]:g} ratings but unit 0 has {n:g}; Fleiss' kappa needs "
            "the same number of ratings per unit (drop or complete the uneven units, or use "
            "krippendorff_alpha)"
        )
    if n < 2:
        raise ValueError(f"every unit needs at least 2 ratings, got {n:g}")
    totals = t.sum(axis=0)
    if np.count_nonzero(totals) <= 1:
        return math.nan
    observed = float(((t * t).sum(axis=1) - n).mean() / (n * (n - 1)))
    share = totals / totals.sum()
    expected = float(share @ share)
    return (observed - expected) / (1.0 - expected)


def _unit_values(data: FloatArray) -> tuple[FloatArray, FloatArray, IntArray]:
    """The pairable units of a (raters, units) array: each kept unit's count of every distinct
    value (units, values), the distinct values, and the kept units' column numbers."""
    rater_idx, unit_idx = np.nonzero(~np.isnan(data))
    values, codes = np.unique(data[rater_idx, unit_idx], return_inverse=True)
    v = values.size
    units = data.shape[1]
    counts = np.bincount(unit_idx * v + codes, minlength=units * v).reshape(units, v)
    kept = np.flatnonzero(counts.sum(axis=1) >= 2)
    return counts[kept].astype(np.float64), values, kept


def _coincidences(counts: FloatArray, group: IntArray, groups: int) -> FloatArray:
    """The coincidence matrix (groups, values, values) of each group of units, from the units'
    value counts and the group each unit is in."""
    scaled = counts / (counts.sum(axis=1, keepdims=True) - 1.0)
    v = counts.shape[1]
    out: FloatArray = np.zeros((groups, v, v))
    for g in np.unique(group):
        mine = group == g
        out[g] = scaled[mine].T @ counts[mine] - np.diag(scaled[mine].sum(axis=0))
    return out


def _alpha_from_coincidences(
    coincidence: FloatArray, level: Literal["nominal", "ordinal"]
) -> FloatArray:
    """Alpha from coincidence matrices (..., values, values); NaN where there is no
    disagreement to expect."""
    marginal = coincidence.sum(axis=-1)
    total = marginal.sum(axis=-1)
    v = coincidence.shape[-1]
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(v), coincidence.shape)
    else:
        mid = np.cumsum(marginal, axis=-1) - marginal / 2.0
        delta = (mid[..., :, None] - mid[..., None, :]) ** 2
    expected = np.einsum("...i,...ij,...j->...", marginal, delta, marginal)
    observed = (coincidence * delta).sum(axis=(-2, -1))
    out: FloatArray = np.full(total.shape, np.nan)
    np.divide((total - 1.0) * observed, expected, out=out, where=expected > 0)
    return 1.0 - out


def _check_reliability(reliability: FloatArray, level: str) -> FloatArray:
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"level must be 'nominal' or 'ordinal', got {level!r}")
    data = np.asarray(reliability, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"reliability must have shape (raters, units), got {data.shape}")
    if np.any(np.isinf(data)):
        raise ValueError("reliability must hold finite codes or NaN for a missing rating")
    return data


def krippendorff_alpha(reliability: FloatArray, level: Literal["nominal", "ordinal"]) -> float:
    """Krippendorff's alpha from a (raters, units) array of category codes, NaN for missing.

    Units with fewer than 2 values are dropped. Ordinal distances use the ranks implied by the
    sorted distinct values and their coincidence marginals. NaN when the pairable values are all
    one value (or none).
    """
    data = _check_reliability(reliability, level)
    counts, values, _ = _unit_values(data)
    if values.size < 2 or counts.shape[0] == 0:
        return math.nan
    whole = _coincidences(counts, np.zeros(counts.shape[0], dtype=np.int64), 1)[0]
    return float(_alpha_from_coincidences(whole, level))


def bootstrap_krippendorff_alpha_by_conversation(
    reliability: FloatArray,
    conversation: IntArray,
    level: Literal["nominal", "ordinal"],
    *,
    rounds: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of ``krippendorff_alpha`` when the conversations the units (columns)
    belong to, ``conversation[u]`` in 0..C-1, are resampled with replacement (the draws of
    ``conversation_draws``, all rounds at once). NaNs when no unit is pairable."""
    _check_level(confidence)
    data = _check_reliability(reliability, level)
    conv = np.asarray(conversation, dtype=np.int64).reshape(-1)
    if conv.size != data.shape[1] or (conv.size and conv.min() < 0):
        raise ValueError(
            f"conversation must give each of the {data.shape[1]} units a number from 0, "
            f"got {conv.size} numbers"
        )
    counts, values, kept = _unit_values(data)
    if values.size < 2 or counts.shape[0] == 0:
        return (math.nan, math.nan)
    c, v = int(conv.max()) + 1, values.size
    per_conversation = _coincidences(counts, conv[kept], c).reshape(c, v * v)
    drawn = (conversation_draws(c, rounds=rounds, seed=seed) @ per_conversation).reshape(-1, v, v)
    low, high = percentile_interval(_alpha_from_coincidences(drawn, level)[:, None], confidence)
    return float(low[0]), float(high[0])
