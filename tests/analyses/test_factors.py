"""The factor structure of the axes: per-completion scores by hand, the known structure of
simulated judges recovered, and studies with too little data or axes that never vary."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from heart.analyses import (
    MIN_FACTOR_COMPLETIONS,
    axis_scores,
    factor_structure,
    load_comparisons,
)
from heart.store import Store

from ..factor_rows import (
    AXES,
    ONE_FACTOR,
    TWO_FACTORS,
    TWO_PHI,
    as_comparisons,
    simulate_verdicts,
)
from ..rows import Verdict, seed_verdicts


def _axes(**cells: tuple[str, int]) -> dict[str, dict[str, object]]:
    return {a: {"winner": w, "strength": s} for a, (w, s) in cells.items()}


def test_axis_scores_are_mean_signed_strengths(store: Store) -> None:
    verdicts = [
        Verdict(0, "m1", "m2", "g", "a", 3,
                axes=_axes(H=("a", 3), E=("b", 2), A=("none", 0), R=("a", 1), T=("a", 1))),
        Verdict(0, "m1", "m3", "g", "b", 2,
                axes=_axes(H=("a", 1), E=("a", 4), A=("b", 5), R=("none", 0), T=("b", 2))),
        # a second judge judges only some axes; a person judges none
        Verdict(0, "m2", "m3", "j", "tie", 1, axes=_axes(H=("b", 2), E=("a", 3))),
        Verdict(0, "m2", "m3", "r", "a", 5),
        # an imported LLM verdict with no axes: its replies have no axis score
        Verdict(1, "m1", "m2", "g", "a", 1),
    ]  # fmt: skip
    seed_verdicts(store, verdicts, sources={"r": "human"})
    comparisons = load_comparisons(store, source="llm")
    scores = axis_scores(comparisons)
    row = {c: i for i, c in enumerate(scores.completions)}
    expected = {
        "cp-0-m1": [(3 + 1) / 2, (-2 + 4) / 2, (0 - 5) / 2, (1 + 0) / 2, (1 - 2) / 2],
        "cp-0-m2": [(-3 - 2) / 2, (2 + 3) / 2, 0.0, -1.0, -1.0],
        "cp-0-m3": [(-1 + 2) / 2, (-4 - 3) / 2, 5.0, 0.0, 2.0],
    }
    for completion, values in expected.items():
        np.testing.assert_allclose(scores.scores[row[completion]], values)
        assert scores.comparisons[row[completion]] == 2  # the person's verdict is not read
    np.testing.assert_array_equal(scores.verdicts[row["cp-0-m2"]], [2, 2, 1, 1, 1])
    assert np.isnan(scores.scores[row["cp-1-m1"]]).all()
    assert scores.complete.tolist() == [True, True, True, False, False]
    # win rates over every LLM comparison, ties half: m2 lost to m1 and tied with m3
    assert scores.win_rate[row["cp-0-m1"]] == 0.5
    assert scores.win_rate[row["cp-0-m2"]] == 0.25
    assert scores.win_rate[row["cp-0-m3"]] == 0.75
    assert scores.win_rate[row["cp-1-m1"]] == 1.0
    assert scores.systems[scores.system[row["cp-0-m3"]]] == "m3"
    assert scores.conversations[scores.conversation[row["cp-1-m2"]]] == "c1"


@pytest.mark.parametrize("seed", [0, 1])
def test_one_simulated_skill_gives_one_factor(seed: int) -> None:
    report = factor_structure(
        as_comparisons(simulate_verdicts(150, 4, ONE_FACTOR, seed=seed)), rounds=200, seed=seed
    )
    assert report.completions == 600 and report.left_out == 0 and report.conversations == 150
    assert report.suggested == 1 and report.solution is not None
    assert report.solution.factors == 1 and report.solution.rotation == "none"
    assert np.all(report.solution.loadings > 0.55)
    assert report.alpha is not None and 0.8 < report.alpha.value < 0.95
    assert report.alpha.low < report.alpha.value < report.alpha.high
    (win,) = report.factor_win
    assert win.value > 0.8 and win.low < win.value < win.high
    assert report.problem == "" and report.constant == []


@pytest.mark.parametrize("seed", [0, 1])
def test_two_simulated_skills_give_two_factors_with_their_axes(seed: int) -> None:
    verdicts = simulate_verdicts(150, 4, TWO_FACTORS, TWO_PHI, seed=seed)
    report = factor_structure(as_comparisons(verdicts), rounds=200, seed=seed)
    assert report.suggested == 2 and report.solution is not None
    loadings = report.solution.loadings
    own = np.abs(loadings[[0, 1, 2, 3, 4], [0, 0, 0, 1, 1]])
    other = np.abs(loadings[[0, 1, 2, 3, 4], [1, 1, 1, 0, 0]])
    assert np.all(own > 0.55) and np.all(other < 0.15)
    assert 0.1 < report.solution.factor_correlation[0, 1] < 0.5
    assert len(report.factor_win) == 2
    # correlations with the win rate equal a hand computation on the same scores
    assert report.z is not None and report.scores is not None
    win = report.scores.win_rate[report.scores.complete]
    expected = np.corrcoef(report.z.mean(axis=1), win)[0, 1]
    assert report.axis_mean_win is not None
    assert report.axis_mean_win.value == pytest.approx(expected, abs=1e-12)
    assert report.axes[0].win.value == pytest.approx(np.corrcoef(report.z[:, 0], win)[0, 1])


def test_the_same_seed_gives_the_same_structure() -> None:
    comparisons = as_comparisons(simulate_verdicts(40, 3, seed=3))
    first = factor_structure(comparisons, rounds=100, seed=9)
    again = factor_structure(comparisons, rounds=100, seed=9)
    assert first.alpha == again.alpha and first.factor_win == again.factor_win
    assert first.parallel is not None and again.parallel is not None
    np.testing.assert_array_equal(first.parallel.thresholds, again.parallel.thresholds)


def test_too_few_completions_are_counted_and_nothing_more() -> None:
    few = (MIN_FACTOR_COMPLETIONS - 1) // 3
    report = factor_structure(as_comparisons(simulate_verdicts(few, 3)), rounds=50)
    assert report.completions == 3 * few < MIN_FACTOR_COMPLETIONS
    assert not report.enough and report.judges == ["g"]
    assert report.axes == [] and report.parallel is None and report.solution is None


def test_verdicts_without_axes_leave_nothing_to_analyse() -> None:
    verdicts = [Verdict(i, "m1", "m2", "r", "a") for i in range(30)]
    verdicts += [Verdict(i, "m1", "m2", "g", "b") for i in range(30)]  # an LLM import, no axes
    report = factor_structure(as_comparisons(verdicts, sources={"r": "human"}), rounds=50)
    assert report.judges == [] and report.completions == 0 and report.left_out == 60


def test_an_axis_that_never_separates_replies_stops_the_model_but_not_the_summary() -> None:
    """As in the demo: a judge that answers "none" on H and T whatever it reads."""
    verdicts = simulate_verdicts(12, 3, seed=4)
    for v in verdicts:
        v.axes["H"] = v.axes["T"] = {"winner": "none", "strength": 0}
    report = factor_structure(as_comparisons(verdicts), rounds=50)
    assert report.enough and report.rough and report.constant == ["H", "T"]
    assert report.problem.startswith("H and T never told two replies apart")
    assert report.parallel is None and report.solution is None and report.alpha is None
    assert [a.axis for a in report.axes] == AXES
    assert np.isnan(report.axes[0].win.value) and not np.isnan(report.axes[1].win.value)
    assert report.axis_mean_win is not None and report.axis_mean_win.value > 0
    assert len(report.systems) == 3 and all(s.factors == [] for s in report.systems)


def test_collinear_axes_are_named_and_stop_the_model() -> None:
    """A judge that gives every verdict the same axis winners and strengths: each axis score is
    a multiple of the same position effect."""
    verdicts = [
        Verdict(i, x, y, "g", "b", 3,
                axes=_axes(H=("b", 1), E=("b", 3), A=("b", 2), R=("a", 1), T=("b", 4)))
        for i in range(10)
        for x, y in (("m1", "m2"), ("m1", "m3"), ("m2", "m3"))
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = factor_structure(as_comparisons(verdicts), rounds=50)
    assert ("H", "E") in report.collinear and ("E", "R") in report.collinear
    assert report.problem.startswith("some axes are exact linear combinations")
    assert report.parallel is None and report.solution is None
    # z-scores four copies of one signal and one of its negative: the row sums are 3 times it,
    # so α = 5/4 · (1 − 5/9) = 5/9
    assert report.alpha is not None and report.alpha.value == pytest.approx(5 / 9)
