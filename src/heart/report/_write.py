"""Writing a report folder: index.html, report.md, the CSV tables and provenance.json, put in
place whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from heart.garbage import fewer_collections
from heart.provenance import PROVENANCE_FILE
from heart.report._as_html import document_html
from heart.report._as_markdown import document_markdown
from heart.report._aside import ReportAside
from heart.report._document import csv_files, document, figure_draws
from heart.report._facts import StudyFacts
from heart.report._figures import draw_figures
from heart.report._folder import report_folder

Draws = dict[str, Callable[[], bytes]]


def _halves(draws: Draws) -> tuple[Draws, Draws]:
    """The figures in two halves: the first in reading order (the main board's, which take
    longest, among them) and the rest."""
    keys = list(draws)
    half = (len(keys) + 1) // 2
    return {k: draws[k] for k in keys[:half]}, {k: draws[k] for k in keys[half:]}


@fewer_collections()
def write_report(facts: StudyFacts, directory: Path, aside: ReportAside | None = None) -> Path:
    """Write index.html, report.md, the CSV tables and provenance.json into a new folder and
    put it in place of ``directory`` once all are written (see ``report_folder``); returns the
    HTML path. With ``aside`` (a large study's worker, which the caller closes), the first half
    of the figures is drawn there while this process writes the other files and draws the
    rest; without, all here. The bytes are the same."""
    doc = document(facts)
    there, here = _halves(figure_draws(doc)) if aside is not None else ({}, figure_draws(doc))
    with report_folder(directory, report_files=(PROVENANCE_FILE,)) as folder:
        if aside is not None:
            aside.draw(there)
        (folder / "report.md").write_text(document_markdown(doc), encoding="utf-8")
        for name, text in csv_files(facts).items():
            (folder / name).write_text(text, encoding="utf-8")
        if facts.provenance is not None:
            (folder / PROVENANCE_FILE).write_text(facts.provenance.to_json(), encoding="utf-8")
        pngs = draw_figures(here)
        if aside is not None:
            pngs.update(aside.figures())
        (folder / "index.html").write_text(document_html(doc, pngs), encoding="utf-8")
    return directory / "index.html"
