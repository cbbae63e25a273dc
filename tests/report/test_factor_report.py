"""The report's Factor structure section in HTML, Markdown and CSV: a study with enough axis
verdicts, one with too few, one without any, and one whose judge behaves like the demo's."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from heart.report import gather_facts, write_report
from heart.store import open_store
from heart.study import create_study, open_study

from ..factor_rows import AXES, simulate_verdicts
from ..rows import Verdict, seed_verdicts


def _study(root: Path, verdicts: list[Verdict], sources: dict[str, str] | None = None) -> Path:
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_verdicts(store, verdicts, sources=sources)
    store.close()
    return root


def _report(root: Path) -> tuple[str, str, Path]:
    study = open_study(root)
    facts = gather_facts(study)
    study.close()
    html = write_report(facts, root / "report")
    markdown = (root / "report" / "report.md").read_text(encoding="utf-8")
    return html.read_text(encoding="utf-8"), markdown, root / "report"


def _section(markdown: str) -> str:
    return markdown.split("## Factor structure\n", 1)[1].split("\n## ", 1)[0]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_section_shows_loadings_alpha_the_win_rate_and_the_scree_plot(tmp_path: Path) -> None:
    root = _study(tmp_path / "study", simulate_verdicts(40, 4, seed=1))
    html, markdown, folder = _report(root)
    section = _section(markdown)
    assert "160 completions over 40 conversations, axis verdicts by g." in section
    assert "Parallel analysis retains one factor" in section
    for title in ("Axis scores", "Correlations between axis scores", "Parallel analysis",
                  "Factor loadings (1 factor)", "Reliability and relation to the win rate",
                  "Scores by system"):  # fmt: skip
        assert f"### {title}" in section
    assert "Cronbach's α over the five axis z-scores: 0." in section
    assert "rough" not in section  # 160 completions: no warning about size
    assert "<a href='#factors'>Factor structure</a>" in html
    assert html.index("id='factors'") < html.index("id='study'")
    assert "id='factor-scree'" in html and "data:image/png;base64," in html
    assert "id='factor-loadings'" in html

    # the CSVs hold the analysis's own numbers at full precision, empty where there is none
    study = open_study(root)
    report = gather_facts(study).factors
    study.close()
    assert report is not None and report.solution is not None and report.alpha is not None
    axes = _rows(folder / "factor_axes.csv")
    assert [r["axis"] for r in axes] == AXES
    for k, row in enumerate(axes):
        assert float(row["loading_1"]) == report.solution.loadings[k, 0]
        assert row["loading_2"] == ""
        assert float(row["win_r"]) == report.axes[k].win.value
        assert float(row["sd"]) == report.axes[k].sd
        assert float(row[f"r_{AXES[k]}"]) == report.correlation[k, k]  # type: ignore[index]
    summary = {r["statistic"]: r for r in _rows(folder / "factor_summary.csv")}
    assert float(summary["cronbach_alpha"]["estimate"]) == report.alpha.value
    assert float(summary["cronbach_alpha"]["low"]) == report.alpha.low
    assert summary["parallel_analysis_factors"]["estimate"] == "1"
    assert summary["factors_fitted"]["low"] == ""
    eigen = _rows(folder / "factor_eigenvalues.csv")
    assert [r["retained"] for r in eigen] == ["true", "false", "false", "false", "false"]
    scores = _rows(folder / "factor_scores.csv")
    assert len(scores) == 160 and scores[0]["factor_2"] == ""
    assert all(math.isfinite(float(r["z_H"])) and math.isfinite(float(r["factor_1"]))
               for r in scores)  # fmt: skip
    systems = _rows(folder / "factor_systems.csv")
    assert sorted(r["system"] for r in systems) == ["m0", "m1", "m2", "m3"]
    assert sum(int(r["completions"]) for r in systems) == 160


def test_too_few_completions_are_said_in_one_line(tmp_path: Path) -> None:
    root = _study(tmp_path / "study", simulate_verdicts(3, 3))
    html, markdown, folder = _report(root)
    assert _section(markdown).strip() == (
        "Factor structure needs at least 20 completions whose LLM verdicts judged all five "
        "axes; this study has 9."
    )
    assert "id='factor-scree'" not in html
    assert not list(folder.glob("factor_*.csv"))


def test_a_study_without_axis_verdicts_says_so_in_one_line(tmp_path: Path) -> None:
    verdicts = [Verdict(i, "m1", "m2", "r", "a") for i in range(30)]
    root = _study(tmp_path / "study", verdicts, sources={"r": "human"})
    _, markdown, folder = _report(root)
    assert _section(markdown).strip().startswith("No LLM verdict has judged the HEART axes yet")
    assert len(_section(markdown).strip().splitlines()) == 1
    assert not list(folder.glob("factor_*.csv"))


def test_a_judge_like_the_demos_shows_what_little_the_data_support(tmp_path: Path) -> None:
    """The demo's judge: the reply shown second wins every axis it judges with the same
    strengths, and H and T always have "no clear advantage"."""
    axes = {"H": ("none", 0), "E": ("b", 3), "A": ("b", 2), "R": ("a", 1), "T": ("none", 0)}
    verdicts = [
        Verdict(i, x, y, "g", "b", 3,
                axes={a: {"winner": w, "strength": s} for a, (w, s) in axes.items()})
        for i in range(12)
        for x, y in (("m1", "m2"), ("m1", "m3"), ("m2", "m3"))
    ]  # fmt: skip
    root = _study(tmp_path / "study", verdicts)
    html, markdown, folder = _report(root)
    section = _section(markdown)
    assert "**The judge audit flags g as unreliable: these axis scores inherit its biases.**" in (
        section
    )
    assert "**Only 36 completions: the figures below are rough sketches" in section
    assert "No factor model: H and T never told two replies apart" in section
    assert "Perfectly correlated axis scores (|r| = 1): E and A, E and R, A and R." in section
    assert "### Axis scores" in section and "### Scores by system" in section
    assert "### Factor loadings" not in section and "id='factor-scree'" not in html
    axes_csv = _rows(folder / "factor_axes.csv")
    assert axes_csv[0]["win_r"] == "" and axes_csv[0]["loading_1"] == ""
    assert float(axes_csv[1]["win_r"]) == pytest.approx(1.0)
    assert "cronbach_alpha" not in {r["statistic"] for r in _rows(folder / "factor_summary.csv")}
