"""Inter-rater agreement: Fleiss' kappa on category counts, Krippendorff's alpha on raw labels."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

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


def krippendorff_alpha(reliability: FloatArray, level: Literal["nominal", "ordinal"]) -> float:
    """Krippendorff's alpha from a (raters, units) array of category codes, NaN for missing.

    Units with fewer than 2 values are dropped. Ordinal distances use the ranks implied by the
    sorted distinct values and their coincidence marginals. NaN when the pairable values are all
    one value (or none).
    """
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"level must be 'nominal' or 'ordinal', got {level!r}")
    data = np.asarray(reliability, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"reliability must have shape (raters, units), got {data.shape}")
    if np.any(np.isinf(data)):
        raise ValueError("reliability must hold finite codes or NaN for a missing rating")
    rater_idx, unit_idx = np.nonzero(~np.isnan(data))
    values, codes = np.unique(data[rater_idx, unit_idx], return_inverse=True)
    v = values.size
    if v < 2:
        return math.nan
    units = data.shape[1]
    counts = np.bincount(unit_idx * v + codes, minlength=units * v).reshape(units, v)
    counts = counts[counts.sum(axis=1) >= 2].astype(np.float64)
    if counts.shape[0] == 0:
        return math.nan
    scaled = counts / (counts.sum(axis=1, keepdims=True) - 1.0)
    coincidence = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    marginal = coincidence.sum(axis=0)
    total = float(marginal.sum())
    if level == "nominal":
        delta = 1.0 - np.eye(v)
    else:
        mid = np.cumsum(marginal) - marginal / 2.0
        delta = (mid[:, None] - mid[None, :]) ** 2
    expected = float(marginal @ delta @ marginal)
    if expected == 0.0:
        return math.nan
    return 1.0 - (total - 1.0) * float((coincidence * delta).sum()) / expected
