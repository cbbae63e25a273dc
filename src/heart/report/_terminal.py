"""The report in the terminal: a board for an 80-column terminal, the conclusions under it, and
the judge audit with unreliable judges and raters in red. Names and cells are shown as written,
never read as console markup."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table as RichTable

from heart.analyses import Board, JudgeAudit
from heart.console import as_text
from heart.report._audit import AUDIT_HEADER, audit_rows, audit_verdict
from heart.report._boards import board_table
from heart.report._conclusions import board_conclusions
from heart.report._facts import StudyFacts
from heart.report._table import AXES

TERMINAL_COLUMNS = ["#", "system", "Elo", "95% CI", "n", "win", *AXES]


def terminal_table(facts: StudyFacts, board: Board | None = None) -> RichTable:
    """A board (default: the main one) for an 80-column terminal; the report has every column.
    Names are shown as written, never read as console markup."""
    board = board or facts.main
    title = f"HEART leaderboard: {facts.name}"
    title = f"{title} ({board.title})" if board else title
    table = RichTable(title=as_text(title, style="table.title"))
    for head in TERMINAL_COLUMNS:
        table.add_column(head, justify="left" if head == "system" else "right")
    if board is None:
        table.caption = "No valid judgments yet: run `heart run`."
        return table
    for row in board_table(board).rows:
        rank, system, _family, elo, ci, _robust, _paper, n, _c, _o, _j, win, *axes, evidence = row
        mark = " *" if evidence != "firm" and rank != "†" else ""
        table.add_row(*map(as_text, (rank, system + mark, elo, ci, n, win, *axes)))
    lb = board.leaderboard
    table.caption = (
        f"CI: {lb.rounds} bootstrap rounds over conversations; #: shared by systems whose "
        "intervals overlap, – without an interval; win and H-T: share of comparisons won"
        + ("; * preliminary" if lb.preliminary else "")
        + ("; † selection-biased, not ranked" if board.best_human else "")
    )
    return table


def terminal_conclusions(facts: StudyFacts, board: Board | None = None) -> list[str]:
    """What the terminal prints under a board: its evidence, audit, clear pairs and
    preliminary systems."""
    board = board or facts.main
    return board_conclusions(board, facts.audit) if board is not None else []


RATER_COLUMNS = [
    "judge", "source", "verdicts", "flip rate (both orders)", "first shown won", "longer won",
    "control won", "audit",
]  # fmt: skip
"""The audit's columns that say something about a person (no family, re-asks or failures)."""


def _judge_columns(audits: list[JudgeAudit]) -> RichTable:
    """LLM judges, few with many checks: one column per judge, conclusions in the caption."""
    table = RichTable(title="Judge audit (LLM judges)")
    table.add_column("check")
    for audit in audits:
        table.add_column(as_text(audit.judge), style="bold red" if audit.flagged else None)
    rows = [row[1:] for row in audit_rows(audits)]
    for i, head in enumerate(AUDIT_HEADER[1:-1]):
        table.add_row(head, *(as_text(row[i]) for row in rows))
    table.caption = as_text("\n".join(f"{a.judge}: {audit_verdict(a)}" for a in audits))
    table.caption_style = "bold"
    return table


def _rater_rows(audits: list[JudgeAudit]) -> RichTable:
    """Human raters, perhaps many: one row per rater, a word for the conclusion in the last
    column, and the reasons of those flagged or cautioned in the caption."""
    table = RichTable(title="Judge audit (human raters)")
    for head in RATER_COLUMNS:
        table.add_column("rater" if head == "judge" else head)
    at = [AUDIT_HEADER.index(head) for head in RATER_COLUMNS[:-1]]
    for audit, row in zip(audits, audit_rows(audits), strict=True):
        word = "unreliable" if audit.flagged else "caution" if audit.cautions else "ok"
        cells = [*(as_text(row[i]) for i in at), as_text(word)]
        table.add_row(*cells, style="bold red" if audit.flagged else None)
    noted = [a for a in audits if a.flagged or a.cautions]
    table.caption = as_text("\n".join(f"{a.judge}: {audit_verdict(a)}" for a in noted))
    table.caption_style = "bold"
    return table


def terminal_audit(audits: list[JudgeAudit]) -> Group:
    """The judge audit for the terminal, unreliable judges and raters in red: LLM judges one
    column each, human raters one row each. Names and cells are shown as written, never read as
    console markup."""
    judges = [a for a in audits if not a.person]
    people = [a for a in audits if a.person]
    return Group(
        *([_judge_columns(judges)] if judges else []), *([_rater_rows(people)] if people else [])
    )
