"""Verdicts of people and LLM judges matched on the same item-pair: the judges' mean outcome per
pair, and a pair's outcomes as per-conversation win matrices."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
A_SHARE = np.array([1.0, 0.0, 0.5])
"""What an outcome code (a won, b won, tie) gives a: 1, 0 or half."""


def source_rows(comparisons: Comparisons, source: str) -> Bools:
    """The rows of ``comparisons`` whose judge is of ``source`` (``llm`` or ``human``)."""
    sources = np.asarray([*comparisons.judge_sources, ""], dtype=object)
    mask: Bools = sources[comparisons.judge] == source
    return mask


def pair_means(comparisons: Comparisons, rows: Bools) -> tuple[Floats, Floats]:
    """Per pair (``comparisons.pair``): the mean share of a over the verdicts of ``rows`` (ties
    half; NaN where none judged it) and how many verdicts that is."""
    m = int(comparisons.pair.max()) + 1 if len(comparisons) else 0
    pair = comparisons.pair[rows]
    count = np.bincount(pair, minlength=m).astype(np.float64)
    total = np.bincount(pair, weights=A_SHARE[comparisons.outcome[rows]], minlength=m)
    mean: Floats = np.divide(total, count, out=np.full(m, np.nan), where=count > 0)
    return mean, count


def share_matrices(
    comparisons: Comparisons, rows: Bools, share_a: Floats, weight: Floats
) -> Floats:
    """(conversations, systems, systems) win matrices of ``rows``: each puts weight·share_a on
    a over b and weight·(1 − share_a) on b over a, in its conversation (``share_a`` and
    ``weight`` one value per selected row)."""
    k, c = len(comparisons.systems), len(comparisons.conversations)
    a, b = comparisons.a[rows], comparisons.b[rows]
    conversation = comparisons.conversation[rows]
    size = c * k * k
    out = np.bincount((conversation * k + a) * k + b, weights=weight * share_a, minlength=size)
    out += np.bincount(
        (conversation * k + b) * k + a, weights=weight * (1.0 - share_a), minlength=size
    )
    matrices: Floats = out.astype(np.float64).reshape(c, k, k)
    return matrices
