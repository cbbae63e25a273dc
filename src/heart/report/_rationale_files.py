"""The rationale figures as CSV files: made here from a ``RationaleReport`` alone, so that the
report's worker can make them beside the rest of the report."""

from __future__ import annotations

from heart.analyses import RationaleReport
from heart.report._csv import table_text
from heart.spreadsheet import inert


def rationale_csv(report: RationaleReport | None) -> dict[str, str]:
    """rationale-themes, -comention, -verdicts and -codes when anything is coded (words quoted
    from a rationale are made inert for spreadsheets), and -coders when an LLM coder was
    compared with the rule coder."""
    if report is None or not report.coders:
        return {}
    tables = report.tables(quoted=inert)
    if report.agreement is None:
        del tables["rationale-coders"]
    return {f"{name}.csv": table_text(table) for name, table in tables.items()}
