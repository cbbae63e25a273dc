"""The report: the leaderboard, judge checks and study provenance, as HTML, Markdown and CSV."""

from heart.report._facts import StudyFacts, gather_facts
from heart.report._render import (
    board_warning,
    render_html,
    render_markdown,
    terminal_audit,
    terminal_table,
    write_report,
)

__all__ = [
    "StudyFacts",
    "board_warning",
    "gather_facts",
    "render_html",
    "render_markdown",
    "terminal_audit",
    "terminal_table",
    "write_report",
]
