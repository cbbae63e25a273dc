"""Verdicts of people and LLM judges matched on the same item-pair: the judges' mean outcome per
pair, outcomes as per-conversation win matrices, and the points of the judge-assisted board."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons
from heart.stats import conversation_win_matrices

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


def wins_of(comparisons: Comparisons, rows: Bools) -> Floats:
    """(conversations, systems, systems): the boards' weighted win matrices (ties half) of the
    verdicts ``rows`` selects, in ``comparisons``' own numbering."""
    winner, loser, tie = comparisons.winner_loser()
    return conversation_win_matrices(
        comparisons.conversation[rows], winner[rows], loser[rows], comparisons.strength[rows],
        len(comparisons.systems), len(comparisons.conversations), tie=tie[rows],
    )  # fmt: skip


@dataclass(frozen=True)
class AssistPoints:
    """The judge-assisted board's points: ``labelled`` rows (people's verdicts on item-pairs an
    LLM judge judged), ``unlabelled`` rows (one LLM row per judged item-pair), and their
    per-conversation matrices: people's outcomes y and the judges' mean f on the labelled
    points (people's weights, as the boards weigh them), f on the unlabelled (weight one
    each)."""

    labelled: Bools
    unlabelled: Bools
    y: Floats
    fl: Floats
    fu: Floats

    @property
    def stacks(self) -> tuple[Floats, Floats, Floats]:
        return self.y, self.fl, self.fu


def assist_points(comparisons: Comparisons, systems: Bools | None = None) -> AssistPoints:
    """``AssistPoints`` of ``comparisons`` (every source); ``systems``: the unlabelled points
    only between these systems (a mask over ``comparisons.systems``)."""
    llm = source_rows(comparisons, "llm")
    f, _ = pair_means(comparisons, llm)
    labelled = source_rows(comparisons, "human") & np.isfinite(f[comparisons.pair])
    first = np.zeros(len(comparisons), dtype=bool)
    first[np.unique(np.where(llm, comparisons.pair, -1), return_index=True)[1]] = True
    unlabelled = first & llm
    if systems is not None:
        unlabelled &= systems[comparisons.a] & systems[comparisons.b]
    weight = comparisons.strength[labelled]
    return AssistPoints(
        labelled=labelled,
        unlabelled=unlabelled,
        y=share_matrices(comparisons, labelled, A_SHARE[comparisons.outcome[labelled]], weight),
        fl=share_matrices(comparisons, labelled, f[comparisons.pair[labelled]], weight),
        fu=share_matrices(comparisons, unlabelled, f[comparisons.pair[unlabelled]],
                          np.ones(int(unlabelled.sum()))),
    )  # fmt: skip
