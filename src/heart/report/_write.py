"""Writing a report folder: index.html, report.md, the CSV tables and provenance.json, put in
place whole."""

from __future__ import annotations

from pathlib import Path

from heart.garbage import fewer_collections
from heart.provenance import PROVENANCE_FILE
from heart.report._as_html import document_html
from heart.report._as_markdown import document_markdown
from heart.report._document import csv_files, document, figure_draws
from heart.report._drawing import FiguresAside, draw_figures
from heart.report._facts import StudyFacts
from heart.report._folder import report_folder


@fewer_collections()
def write_report(facts: StudyFacts, directory: Path, figures: FiguresAside | None = None) -> Path:
    """Write index.html, report.md, the CSV tables and provenance.json into a new folder and
    put it in place of ``directory`` once all are written (see ``report_folder``); returns the
    HTML path. With ``figures`` (a worker started early, see ``figures_aside``), the figures
    are drawn there while the other files are written, and it is closed whatever happens;
    without, they are drawn here. The bytes are the same."""
    try:
        doc = document(facts)
        draws = figure_draws(doc)
        with report_folder(directory, report_files=(PROVENANCE_FILE,)) as folder:
            if figures is not None:
                figures.draw(draws)
            (folder / "report.md").write_text(document_markdown(doc), encoding="utf-8")
            for name, text in csv_files(facts).items():
                (folder / name).write_text(text, encoding="utf-8")
            if facts.provenance is not None:
                (folder / PROVENANCE_FILE).write_text(facts.provenance.to_json(), "utf-8")
            pngs = draw_figures(draws) if figures is None else figures.result()
            (folder / "index.html").write_text(document_html(doc, pngs), encoding="utf-8")
    finally:
        if figures is not None:
            figures.close()
    return directory / "index.html"
