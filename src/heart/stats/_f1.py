"""F1 of a multi-label classifier against a reference, per label and macro-averaged, with
intervals from resampling conversations.

Inputs are (replies, labels) boolean matrices, and optionally which cells count (a cell left out,
say where the classifier was unsure, takes no part). A label that neither side marks on any
counted cell has no F1 (NaN, as scikit-learn's ``zero_division=nan``) and stays out of the
macro average.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from heart.stats._bootstrap import conversation_draws
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._types import BoolArray, FloatArray


def _f1(tp: FloatArray, fp: FloatArray, fn: FloatArray) -> FloatArray:
    """2·tp / (2·tp + fp + fn), elementwise; NaN where the denominator is 0."""
    denominator = 2.0 * tp + fp + fn
    out: FloatArray = np.divide(
        2.0 * tp, denominator, out=np.full(denominator.shape, np.nan), where=denominator > 0
    )
    return out


def _macro(f1: FloatArray) -> FloatArray:
    """The mean over the last axis of the defined F1s (NaN when none is)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a round with no defined F1
        out: FloatArray = np.nanmean(f1, axis=-1)
    return out


def _cells(
    truth: BoolArray, predicted: BoolArray, counted: BoolArray | None
) -> tuple[BoolArray, BoolArray, BoolArray]:
    t, p = np.asarray(truth), np.asarray(predicted)
    c = np.ones(t.shape, dtype=bool) if counted is None else np.asarray(counted)
    if t.ndim != 2 or t.shape != p.shape or t.shape != c.shape:
        raise ValueError(
            "truth, predicted and counted must be (replies, labels) matrices of one shape, got "
            f"{t.shape}, {p.shape} and {c.shape}"
        )
    if not (t.dtype == p.dtype == c.dtype == np.bool_):
        raise ValueError("truth, predicted and counted must be boolean")
    return t, p, c


def f1_scores(
    truth: BoolArray, predicted: BoolArray, counted: BoolArray | None = None
) -> tuple[FloatArray, float]:
    """F1 per label over the counted cells, and their macro average."""
    t, p, c = _cells(truth, predicted, counted)
    tp = (t & p & c).sum(axis=0).astype(np.float64)
    fp = (~t & p & c).sum(axis=0).astype(np.float64)
    fn = (t & ~p & c).sum(axis=0).astype(np.float64)
    f1 = _f1(tp, fp, fn)
    return f1, float(_macro(f1))


@dataclass(frozen=True, eq=False)
class F1Result:
    """F1 per label (with true and false positives and false negatives, and a percentile
    interval from resampling conversations) and the macro F1 with its interval. ``replies``
    counts the replies with at least one counted cell."""

    f1: FloatArray
    low: FloatArray
    high: FloatArray
    tp: FloatArray
    fp: FloatArray
    fn: FloatArray
    macro: float
    macro_low: float
    macro_high: float
    replies: int
    level: float
    rounds: int


def f1_by_conversation(
    truth: BoolArray,
    predicted: BoolArray,
    conversation: FloatArray | list[str] | list[int],
    counted: BoolArray | None = None,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> F1Result:
    """F1 per label and macro F1, with intervals from resampling conversations.

    ``conversation[n]`` names reply n's conversation. Each round draws conversations with
    replacement (``conversation_draws``), sums their true positives, false positives and false
    negatives, and recomputes every F1 and the macro average of the labels defined in that round.
    """
    _check_level(level)
    t, p, c = _cells(truth, predicted, counted)
    convs = np.asarray(conversation)
    if convs.shape != (t.shape[0],):
        raise ValueError(f"conversation must name one conversation per reply ({t.shape[0]})")
    # per conversation counts, (C, labels) each
    names, index = np.unique(convs, return_inverse=True)
    member = np.zeros((names.size, t.shape[0]))
    member[index, np.arange(t.shape[0])] = 1.0
    per = [member @ (cells & c).astype(np.float64) for cells in (t & p, ~t & p, t & ~p)]
    tp, fp, fn = (x.sum(axis=0) for x in per)
    f1 = _f1(tp, fp, fn)
    if names.size == 0:
        nan = np.full(t.shape[1], np.nan)
        return F1Result(f1, nan, nan, tp, fp, fn, float("nan"), float("nan"), float("nan"), 0,
                        level, rounds)  # fmt: skip
    draws = conversation_draws(names.size, rounds=rounds, seed=seed)
    f1_rounds = _f1(*(draws @ x for x in per))
    low, high = percentile_interval(f1_rounds, level)
    macro_low, macro_high = percentile_interval(_macro(f1_rounds)[:, None], level)
    return F1Result(
        f1=f1,
        low=low,
        high=high,
        tp=tp,
        fp=fp,
        fn=fn,
        macro=float(_macro(f1)),
        macro_low=float(macro_low[0]),
        macro_high=float(macro_high[0]),
        replies=int(c.any(axis=1).sum()),
        level=level,
        rounds=rounds,
    )
