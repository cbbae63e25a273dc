"""Style control in the report: the controlled Elo beside the plain one, the coefficients with
the paragraph that explains them, and style.csv, marked preliminary on a small board; none of it
when the switch is off."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rich.console import Console
from sqlalchemy import update

from heart import pipeline
from heart.config import parse_study
from heart.report import gather_boards, terminal_table
from heart.store import CompletionRow, Store
from heart.study import Study

from ..rows import Verdict, seed_verdicts

CONFIG = """name: style
systems: [{name: m1, kind: model, family: m1, model: {provider: embedded}}]
ratings: {bootstrap_rounds: 40%s}
"""


def _seed(store: Store) -> None:
    """Twelve conversations of three systems whose replies differ in length only."""
    verdicts = []
    for i in range(12):
        verdicts.append(Verdict(i, "long", "short", "g", "a" if i % 4 else "b", 3))
        verdicts.append(Verdict(i, "mid", "long", "g", "b" if i % 3 else "a", 3))
        verdicts.append(Verdict(i, "short", "mid", "g", "a" if i % 2 else "b", 3))
    seed_verdicts(store, verdicts)
    with store.session() as s:
        for system, n in {"long": 60, "mid": 25, "short": 8}.items():
            s.execute(
                update(CompletionRow)
                .where(CompletionRow.system == system)
                .values(text=" ".join(["word"] * n))
            )
        s.commit()


def test_report_shows_style_control_when_switched_on(store: Store, tmp_path: Path) -> None:
    _seed(store)
    study = Study(tmp_path, parse_study(CONFIG % ", style_control: true"), store)
    pipeline.report(study)
    markdown = (study.report_dir / "report.md").read_text(encoding="utf-8")
    assert "Elo, style-controlled" in markdown
    assert "Style control: LLM judges, all items" in markdown
    assert "The style-controlled Elo refits the same Bradley–Terry model" in markdown
    rows = list(csv.DictReader(io.StringIO((study.report_dir / "style.csv").read_text("utf-8"))))
    coefficient = [r for r in rows if r["what"] == "coefficient"]
    assert [r["name"] for r in coefficient] == ["length"]
    assert float(coefficient[0]["low"]) <= float(coefficient[0]["value"])
    # 36 verdicts: below the evidence rule's 50, so the whole style fit is preliminary
    reason = "36 comparisons (fewer than 50)"
    assert coefficient[0]["note"] == f"preliminary: {reason}"
    for row in (r for r in rows if r["what"] == "elo"):  # the system's own reasons, the fit's
        assert row["note"].endswith(f"; style fit preliminary: {reason}")
        assert row["note"].startswith("preliminary: 24 comparisons (fewer than 50)")
    style = markdown.split("Style control: LLM judges, all items", 1)[1]
    assert f"| length | ({float(coefficient[0]['value']):.2f}) |" in style
    assert f"Preliminary, read as a first look: {reason}." in style
    board = markdown.split("## LLM judges, all items", 1)[1]
    long = next(r for r in rows if r["what"] == "elo" and r["name"] == "long")
    assert f"| ({float(long['value']):.0f}) |" in board
    assert f"the style fit is preliminary ({reason})" in board
    assert {r["name"] for r in rows if r["what"] == "left out"} == {
        "questions", "markdown", "warmth",
    }  # fmt: skip
    assert {r["name"] for r in rows if r["what"] == "elo"} == {"long", "mid", "short"}


def test_report_has_no_style_control_when_off(store: Store, tmp_path: Path) -> None:
    _seed(store)
    study = Study(tmp_path, parse_study(CONFIG % ", style_control: false"), store)
    pipeline.report(study)
    markdown = (study.report_dir / "report.md").read_text(encoding="utf-8")
    assert "style-controlled" not in markdown
    assert not (study.report_dir / "style.csv").exists()


def test_terminal_board_shows_the_style_controlled_elo_under_the_plain_one(
    store: Store, tmp_path: Path
) -> None:
    _seed(store)
    study = Study(tmp_path, parse_study(CONFIG % ", style_control: true"), store)
    facts = gather_boards(study)
    board = facts.find("llm", "all")
    assert board is not None and board.leaderboard.style is not None
    console = Console(record=True, width=120)  # wide enough for this board's "no data" cells
    console.print(terminal_table(facts, board))
    text = console.export_text()
    long = next(s for s in board.leaderboard.standings if s.system == "long")
    plain = f"{long.elo:.0f}"
    controlled = f"({long.style_elo:.0f})"  # in parentheses: a preliminary fit
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if f" {plain} " in line and "long" in line)
    assert controlled in lines[at + 1]
    assert f"{long.style_low:.0f}–{long.style_high:.0f}" in lines[at + 1]
    assert "SC (second line): Elo and CI controlled for" in " ".join(text.split())
    plain_board = gather_boards(
        Study(tmp_path, parse_study(CONFIG % ", style_control: false"), store)
    )
    shown = Console(record=True, width=80)
    shown.print(terminal_table(plain_board, plain_board.find("llm", "all")))
    assert "SC" not in shown.export_text()
