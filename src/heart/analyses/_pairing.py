"""Verdicts of people and LLM judges matched on the same item-pair: the judges' mean outcome per
pair, outcomes as per-conversation win matrices, and the points of the judge-assisted board."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons
from heart.stats import conversation_win_matrices, share_wins

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


def pair_means(comparisons: Comparisons, rows: Bools) -> tuple[Floats, Floats]:
    """Per pair (``comparisons.pair``): the mean share of a over the verdicts of ``rows`` (ties
    half; NaN where none judged it) and how many verdicts that is."""
    m = int(comparisons.pair.max()) + 1 if len(comparisons) else 0
    pair = comparisons.pair[rows]
    count = np.bincount(pair, minlength=m).astype(np.float64)
    total = np.bincount(pair, weights=comparisons.a_share[rows], minlength=m)
    mean: Floats = np.divide(total, count, out=np.full(m, np.nan), where=count > 0)
    return mean, count


def share_matrices(
    comparisons: Comparisons, rows: Bools, share_a: Floats, weight: Floats
) -> Floats:
    """(conversations, systems, systems) win matrices of ``rows`` (``share_wins``): each puts
    weight·share_a on a over b and weight·(1 − share_a) on b over a, in its conversation
    (``share_a`` and ``weight`` one value per selected row)."""
    return share_wins(
        comparisons.a[rows], comparisons.b[rows], share_a, weight, len(comparisons.systems),
        comparisons.conversation[rows], len(comparisons.conversations),
    )  # fmt: skip


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
    llm = comparisons.source_rows("llm")
    f, _ = pair_means(comparisons, llm)
    labelled = comparisons.source_rows("human") & np.isfinite(f[comparisons.pair])
    first = np.zeros(len(comparisons), dtype=bool)
    first[np.unique(np.where(llm, comparisons.pair, -1), return_index=True)[1]] = True
    unlabelled = first & llm
    if systems is not None:
        unlabelled &= systems[comparisons.a] & systems[comparisons.b]
    weight = comparisons.strength[labelled]
    return AssistPoints(
        labelled=labelled,
        unlabelled=unlabelled,
        y=share_matrices(comparisons, labelled, comparisons.a_share[labelled], weight),
        fl=share_matrices(comparisons, labelled, f[comparisons.pair[labelled]], weight),
        fu=share_matrices(comparisons, unlabelled, f[comparisons.pair[unlabelled]],
                          np.ones(int(unlabelled.sum()))),
    )  # fmt: skip
