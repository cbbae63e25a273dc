"""The report: the leaderboard, judge checks and study provenance, as HTML, Markdown and CSV."""

from heart.report._facts import StudyFacts, gather_facts
from heart.report._render import render_html, render_markdown, terminal_table, write_report

__all__ = [
    "StudyFacts",
    "gather_facts",
    "render_html",
    "render_markdown",
    "terminal_table",
    "write_report",
]
