"""Writing a report folder: index.html, report.md, the CSV tables and provenance.json, put in
place whole."""

from __future__ import annotations

from pathlib import Path

from heart.garbage import fewer_collections
from heart.provenance import PROVENANCE_FILE
from heart.report._as_html import render_html
from heart.report._as_markdown import render_markdown
from heart.report._document import csv_files
from heart.report._facts import StudyFacts
from heart.report._folder import report_folder


@fewer_collections()
def write_report(facts: StudyFacts, directory: Path) -> Path:
    """Write index.html, report.md, the CSV tables and provenance.json into a new folder and
    put it in place of ``directory`` once all are written (see ``report_folder``); returns the
    HTML path."""
    with report_folder(directory, report_files=(PROVENANCE_FILE,)) as folder:
        (folder / "report.md").write_text(render_markdown(facts), encoding="utf-8")
        for name, text in csv_files(facts).items():
            (folder / name).write_text(text, encoding="utf-8")
        if facts.provenance is not None:
            (folder / PROVENANCE_FILE).write_text(facts.provenance.to_json(), encoding="utf-8")
        (folder / "index.html").write_text(render_html(facts), encoding="utf-8")
    return directory / "index.html"
