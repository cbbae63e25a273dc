"""The report: every board, the judge audit, agreement, the analyses and study provenance, as
one self-contained HTML file, Markdown and CSV tables, and terminal tables.

One module per section (``_boards``, ``_audit``, ``_agreement``, ``_judges_people``,
``_adversarial``,
``_rationales``, ``_strategies``, ``_factors``, ``_latency``, ``_study``) owns its tables,
figures and CSV files, over a small core (``_table``, ``_section``, ``_csv``, ``_figures``,
``_markdown``, ``_folder``); ``_document`` puts the sections in reading order, and
``_as_markdown``, ``_as_html``, ``_terminal`` and ``_write`` render them (on a large study with
a worker process, ``_aside``)."""

from heart.report._adversarial import rater_verdict
from heart.report._as_html import render_html
from heart.report._as_markdown import render_markdown
from heart.report._aside import ReportAside, rationale_report, report_aside
from heart.report._document import csv_files
from heart.report._facts import (
    StudyFacts,
    capability_against,
    factor_report,
    gather_boards,
    gather_facts,
    strategy_report,
)
from heart.report._judges_people import tau_text
from heart.report._overview import board_warning
from heart.report._plan import plan_lines
from heart.report._terminal import (
    terminal_audit,
    terminal_conclusions,
    terminal_profile,
    terminal_table,
)
from heart.report._write import write_report

__all__ = [
    "ReportAside",
    "StudyFacts",
    "board_warning",
    "capability_against",
    "csv_files",
    "factor_report",
    "gather_boards",
    "gather_facts",
    "plan_lines",
    "rater_verdict",
    "rationale_report",
    "render_html",
    "render_markdown",
    "report_aside",
    "strategy_report",
    "tau_text",
    "terminal_audit",
    "terminal_conclusions",
    "terminal_profile",
    "terminal_table",
    "write_report",
]
