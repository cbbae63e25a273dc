"""Cohen's κ: chance-corrected agreement of two raters on the same units."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def cohen_kappa(first: npt.ArrayLike, second: npt.ArrayLike) -> float:
    """κ = (p_o − p_e) / (1 − p_e) for two raters' labels of the same units (any hashable
    labels; booleans for "mentions a theme"). p_o is the share of units they label alike and p_e
    the share expected from each rater's own label frequencies. NaN when there are no units, or
    when chance alone predicts full agreement (both give one and the same label throughout)."""
    x, y = np.asarray(first).reshape(-1), np.asarray(second).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"both raters must label the same units, got {x.size} and {y.size}")
    if not x.size:
        return float("nan")
    labels, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
    k = labels.size
    table = np.zeros((k, k))
    np.add.at(table, (codes[: x.size], codes[x.size :]), 1.0)
    table /= x.size
    observed = float(np.trace(table))
    expected = float(table.sum(axis=1) @ table.sum(axis=0))
    if np.isclose(expected, 1.0):
        return float("nan")
    return (observed - expected) / (1.0 - expected)
