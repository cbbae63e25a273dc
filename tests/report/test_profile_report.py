"""The weighted composite (ratings.weights) and the five-axis profile on the smallest study: one
conversation, one LLM judge, raters' verdicts imported in either order; checked by hand in the
report's CSV files, its Markdown and the terminal."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from ..helpers import heart
from ..verdict_study import make_study

ELO_SCALE = 400 / math.log(10)
WEIGHTS = "ratings:\n  bootstrap_rounds: 200\n  weights: {H: 1, E: 3}\n"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The study reported twice, its raters' files imported in the orders "12" and "21"."""
    out = {}
    for order in ("12", "21"):
        root = make_study(tmp_path_factory.mktemp(f"weighted-{order}") / "s", imports=order)
        with (root / "study.yaml").open("a", encoding="utf-8") as handle:
            handle.write(WEIGHTS)
        heart("report", "--study", root)
        out[order] = root
    return out


def test_composite_on_one_conversation_is_the_weighted_sum_without_an_interval(
    reports: dict[str, Path],
) -> None:
    board = {r["system"]: r for r in _rows(reports["12"] / "report" / "leaderboard.csv")
             if r["board"] == "llm-all"}  # fmt: skip
    # judge-g on gpt vs claude, shown in both orders: H gpt 2 to claude 1 (gpt ahead by ln 2);
    # E a tie and claude 1 (claude ahead by ln 3); weights 1:3 scaled to 1/4 and 3/4
    h = 1500 + ELO_SCALE * math.log(2) / 2
    e = 1500 - ELO_SCALE * math.log(3) / 2
    gpt = board["gpt"]
    assert float(gpt["elo_H"]) == pytest.approx(h) and float(gpt["elo_E"]) == pytest.approx(e)
    assert float(gpt["composite_elo"]) == pytest.approx(h / 4 + 3 * e / 4)
    assert float(board["claude"]["composite_elo"]) == pytest.approx(3000 - h / 4 - 3 * e / 4)
    # one conversation: no interval for the composite, as none for the overall Elo
    assert (gpt["composite_low"], gpt["composite_high"], gpt["low"]) == ("", "", "")
    profile = {(r["board"], r["system"], r["axis"]): r
               for r in _rows(reports["12"] / "report" / "axis_profile.csv")}  # fmt: skip
    cell = profile[("llm-all", "gpt", "E")]
    assert (cell["low"], cell["verdicts"], cell["conversations"], cell["weight"]) == (
        "", "2", "1", "0.75",
    )  # fmt: skip
    assert cell["preliminary_reasons"].startswith("1 conversation: an interval needs 5")
    assert profile[("llm-all", "gpt", "T")]["weight"] == "0.0"
    # people's verdicts judge no axis: the human board has no composite to show
    people = [r for r in _rows(reports["12"] / "report" / "leaderboard.csv")
              if r["board"] == "human-all"]  # fmt: skip
    assert people and all(r["composite_elo"] == "" for r in people)


def test_report_and_terminal_show_the_composite_beside_the_overall_elo(
    reports: dict[str, Path],
) -> None:
    md = (reports["12"] / "report" / "report.md").read_text(encoding="utf-8")
    composite = 1500 + ELO_SCALE * (math.log(2) - 3 * math.log(3)) / 8
    board = md.split("## LLM judges, all items", 1)[1]
    assert "| 95% CI (conversation bootstrap) | weighted composite [CI] |" in board
    assert f"| ({composite:.0f}) |" in board  # in parentheses: no interval
    assert "Σ weight × Elo per axis (E 75%, H 25%, from ratings.weights)" in board
    profile = board.split("### Elo per axis: LLM judges, all items", 1)[1]
    h = 1500 + ELO_SCALE * math.log(2) / 2
    assert f"| gpt | ({h:.0f}) · 2 v, 1 c \\* |" in profile  # "*" escaped in Markdown
    out = heart("leaderboard", "--study", reports["12"], "--axes").stdout
    assert "Σw" in out and f"{composite:.0f}" in out
    assert "(E 75%, H 25%)" in " ".join(out.split())


def test_profile_and_composite_are_the_same_whatever_order_data_came_in(
    reports: dict[str, Path],
) -> None:
    for name in ("leaderboard.csv", "axis_profile.csv"):
        first, second = (_rows(reports[o] / "report" / name) for o in ("12", "21"))
        assert first == second, name
