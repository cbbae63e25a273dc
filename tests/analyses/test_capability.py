"""A board against an external capability index: the paper's Table 1 (Pearson r = 0.70, equal
index values over 100 Elo apart), a residual ranking worked out by hand, and what is left out."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from heart.analyses import Standing, capability_report
from heart.capability import CapabilityIndex

from ..stats.test_correlation import PAPER_ELO, PAPER_INDEX, PAPER_WIN

PAPER_MODELS = [
    "GPT-5", "GPT-o3", "Claude 4.5 Haiku", "Kimi K2", "Claude 4.5 Sonnet", "GPT-4.1 mini",
    "Claude 3.7 Sonnet", "Claude 4 Opus", "GPT-4o", "Gemini 2.5 Pro", "Gemini 3 Pro Preview",
    "Llama-4 Maverick", "Gemini 2.5 Flash", "Llama-3.1-405B", "Llama-3.1-70B",
]  # fmt: skip


def _standing(system: str, elo: float, win_rate: float = 0.5, kind: str = "model") -> Standing:
    return Standing(
        system=system, kind=kind, family=system.split("-")[0], elo=elo, low=elo - 50,
        high=elo + 50, robust_low=elo - 50, robust_high=elo + 50, paper_low=elo - 40,
        paper_high=elo + 40, comparisons=100, win_rate=win_rate, axis_win_rates={}, axis_elo={},
    )  # fmt: skip


def _index(values: dict[str, float]) -> CapabilityIndex:
    return CapabilityIndex("aa.csv", values, {name: n + 2 for n, name in enumerate(values)})


def test_the_papers_table_gives_r_070_and_gaps_at_equal_index_values() -> None:
    standings = [
        _standing(m, e, w / 100) for m, e, w in zip(PAPER_MODELS, PAPER_ELO, PAPER_WIN, strict=True)
    ]
    index = _index(dict(zip(PAPER_MODELS, map(float, PAPER_INDEX), strict=True)))
    report = capability_report(standings, index, "llm-all", rounds=500, seed=1)
    assert report.elo_pearson is not None and round(report.elo_pearson.estimate, 2) == 0.70
    assert report.elo_pearson.estimate == pytest.approx(
        stats.pearsonr(PAPER_INDEX, PAPER_ELO).statistic, abs=1e-12
    )
    assert report.elo_spearman is not None and report.elo_spearman.estimate == pytest.approx(
        stats.spearmanr(PAPER_INDEX, PAPER_ELO).statistic, abs=1e-12
    )
    assert report.win_pearson is not None and report.win_pearson.estimate == pytest.approx(
        stats.pearsonr(PAPER_INDEX, PAPER_WIN).statistic, abs=1e-12
    )
    assert report.win_spearman is not None and report.win_spearman.n == 15
    fit = stats.linregress(PAPER_INDEX, PAPER_ELO)
    assert (report.slope, report.intercept) == pytest.approx((fit.slope, fit.intercept))
    # GPT-o3 and Gemini 3 Pro Preview share an index of 65, over 100 Elo apart
    widest = report.equal_index[0]
    assert (widest.index, widest.systems) == (65.0, ["GPT-o3", "Gemini 3 Pro Preview"])
    assert widest.elo_gap == pytest.approx(1587.5 - 1471.0)
    assert [e.index for e in report.equal_index] == [65.0, 36.0, 42.0]  # widest gap first
    assert report.not_on_board == [] and report.without_value == []


def test_residuals_are_ranked_as_worked_out_by_hand() -> None:
    # Elo = 1350 + 50·index plus deviations that sum to zero and are orthogonal to the index,
    # so the least-squares line is exactly that line and the residuals are the deviations
    deviations = {"a": 20.0, "b": -40.0, "c": 0.0, "d": 40.0, "e": -20.0}
    values = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0}
    standings = [_standing(s, 1350 + 50 * values[s] + deviations[s]) for s in "abcde"]
    standings.append(_standing("human", 1500.0, kind="human"))  # ranked, not in the index
    index = _index({**values, "retired": 9.0})  # in the index, not on this board
    report = capability_report(standings, index, "llm-all", rounds=200)
    assert (report.slope, report.intercept) == pytest.approx((50.0, 1350.0))
    assert [p.system for p in report.points] == ["d", "a", "c", "e", "b"]
    assert [p.residual for p in report.points] == pytest.approx([40.0, 20.0, 0.0, -20.0, -40.0])
    assert report.points[0].fitted == pytest.approx(1550.0)
    assert [p.system for p in report.above] == ["d", "a"]
    assert [p.system for p in report.below] == ["b", "e"]
    assert report.without_value == ["human"] and report.not_on_board == ["retired"]
    assert report.elo_pearson is not None and report.elo_pearson.n == 5


def test_below_three_systems_nothing_is_correlated() -> None:
    standings = [_standing("a", 1520.0), _standing("b", 1480.0), _standing("c", 1500.0)]
    report = capability_report(standings, _index({"a": 3.0, "b": 1.0}), "board", rounds=50)
    assert report.elo_pearson is None and report.elo_spearman is None
    assert report.win_pearson is None and report.win_spearman is None
    assert [p.residual for p in report.points] == pytest.approx([0.0, 0.0])  # a line through 2
    lone = capability_report(standings, _index({"a": 3.0}), "board", rounds=50)
    assert math.isnan(lone.slope) and math.isnan(lone.points[0].residual)
