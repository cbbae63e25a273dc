"""Style control in the report: the controlled Elo beside the plain one, the coefficients with
the paragraph that explains them, and style.csv; none of it when the switch is off."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from sqlalchemy import update

from heart import pipeline
from heart.config import parse_study
from heart.store import CompletionRow, Store
from heart.study import Study

from ..rows import Verdict, seed_verdicts

CONFIG = """name: style
systems: [{name: m1, kind: model, family: m1, model: {provider: embedded}}]
ratings: {bootstrap_rounds: 40, style_control: %s}
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
    study = Study(tmp_path, parse_study(CONFIG % "true"), store)
    pipeline.report(study)
    markdown = (study.report_dir / "report.md").read_text(encoding="utf-8")
    assert "Elo, style-controlled" in markdown
    assert "Style control: LLM judges, all items" in markdown
    assert "The style-controlled Elo refits the same Bradley–Terry model" in markdown
    rows = list(csv.DictReader(io.StringIO((study.report_dir / "style.csv").read_text("utf-8"))))
    coefficient = [r for r in rows if r["what"] == "coefficient"]
    assert [r["name"] for r in coefficient] == ["length"]
    assert float(coefficient[0]["low"]) <= float(coefficient[0]["value"])
    assert {r["name"] for r in rows if r["what"] == "left out"} == {
        "questions", "markdown", "warmth",
    }  # fmt: skip
    assert {r["name"] for r in rows if r["what"] == "elo"} == {"long", "mid", "short"}


def test_report_has_no_style_control_when_off(store: Store, tmp_path: Path) -> None:
    _seed(store)
    study = Study(tmp_path, parse_study(CONFIG % "false"), store)
    pipeline.report(study)
    markdown = (study.report_dir / "report.md").read_text(encoding="utf-8")
    assert "style-controlled" not in markdown
    assert not (study.report_dir / "style.csv").exists()
