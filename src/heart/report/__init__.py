"""The report: every board, agreement, the judge audit and study provenance, as one
self-contained HTML file, Markdown and CSV tables, and terminal tables."""

from heart.report._csv import csv_files
from heart.report._facts import StudyFacts, gather_facts
from heart.report._render import (
    board_warning,
    render_html,
    render_markdown,
    terminal_audit,
    terminal_conclusions,
    terminal_table,
    write_report,
)
from heart.report._tables import rater_verdict

__all__ = [
    "StudyFacts",
    "board_warning",
    "csv_files",
    "gather_facts",
    "rater_verdict",
    "render_html",
    "render_markdown",
    "terminal_audit",
    "terminal_conclusions",
    "terminal_table",
    "write_report",
]
