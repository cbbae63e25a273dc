"""The report in the terminal: a board for an 80-column terminal, the conclusions under it, and
the judge audit with unreliable judges and raters in red. Names and cells are shown as written,
never read as console markup."""

from __future__ import annotations

import math

from rich.console import Group
from rich.table import Table as RichTable

from heart.analyses import INTERVAL_CONVERSATIONS, Board, JudgeAudit, Standing, StyleControl
from heart.console import as_text
from heart.report._audit import AUDIT_HEADER, audit_rows, audit_verdict
from heart.report._boards import COMPOSITE, STYLE_ELO, assistance_text, board_table, rank_cell
from heart.report._conclusions import board_conclusions
from heart.report._facts import StudyFacts
from heart.report._profile import (
    axis_marks,
    composite_cell,
    flagged_axes,
    profiled,
    weights_text,
)
from heart.report._table import AXES, NO_DATA, interval

TERMINAL_COLUMNS = ["#", "system", "Elo", "95% CI", "n", "win", *AXES]
COMPOSITE_COLUMN = "Σw"
"""The weighted composite's column, after the interval, when ratings.weights sets one."""
STYLE_LINE = "SC"
"""With a style fit (unless ratings.style_control is false), the Elo and interval columns' second
line: the style-controlled Elo and its interval."""


def terminal_table(facts: StudyFacts, board: Board | None = None) -> RichTable:
    """A board (default: the main one) for an 80-column terminal; the report has every column.
    With ``ratings.weights`` the weighted composite (Σw) follows the interval, without its own
    (``terminal_profile`` shows it), and the table drops its outer edge to keep within 80
    columns; with a style fit, each row's second line gives the style-controlled Elo and its
    interval (SC) under the plain ones. Names are shown as written, never read as console
    markup."""
    board = board or facts.main
    title = f"HEART leaderboard: {facts.name}"
    title = f"{title} ({board.title})" if board else title
    weighted = board is not None and board.leaderboard.weights is not None
    styled = board is not None and board.leaderboard.style is not None
    table = RichTable(title=as_text(title, style="table.title"), show_edge=not weighted)
    # people's verdicts with the judges' help give one preference: no axis columns
    axes = AXES if board is None or board.assistance is None else []
    columns = [*TERMINAL_COLUMNS[:4], *([COMPOSITE_COLUMN] if weighted else []),
               *TERMINAL_COLUMNS[4:6], *axes]  # fmt: skip
    if styled:
        columns[2:4] = [f"{head}\n{STYLE_LINE}" for head in columns[2:4]]
    for head in columns:  # numbers whole; a long system name wraps instead
        left = head == "system"
        table.add_column(head, justify="left" if left else "right", no_wrap=not left)
    if board is None:
        table.caption = "No valid judgments yet: run `heart run`."
        return table
    full = board_table(board)
    for row in full.rows:
        cell = dict(zip(full.header, row, strict=True))
        mark = " *" if cell["evidence"] != "firm" and cell["#"] != "†" else ""
        shown = [cell["#"], cell["system"] + mark, cell["Elo"], row[4]]  # row[4]: the interval
        if styled:  # under them, the style-controlled Elo and its interval
            at = full.header.index(STYLE_ELO)
            shown[2:4] = [f"{plain}\n{controlled}" for plain, controlled
                          in zip(shown[2:4], row[at : at + 2], strict=True)]  # fmt: skip
        if weighted:
            shown.append(cell[COMPOSITE].split(" [")[0].strip("()"))
        shown += [cell["comparisons"], cell["win rate"], *(cell[a] for a in axes)]
        table.add_row(*map(as_text, shown))
    lb = board.leaderboard
    table.caption = (
        f"CI: {lb.rounds} bootstrap rounds over conversations; #: shared by systems whose "
        "intervals overlap, – without an interval; win and H-T: share of comparisons won"
        + (
            f"; Σw: Σ weight × Elo per axis ({weights_text(lb.weights)}), its CI under --axes"
            if lb.weights
            else ""
        )
        + (style_caption(lb.style) if lb.style is not None else "")
        + ("; * preliminary" if lb.preliminary else "")
        + ("; † selection-biased, not ranked" if board.best_human else "")
    )
    return table


def style_caption(style: StyleControl) -> str:
    """What the second lines (SC) mean, and whether the style fit is firm."""
    return (
        "; SC (second line): Elo and CI controlled for reply length, questions, markdown and "
        "stock warmth" + (", a preliminary fit in parentheses" if style.preliminary else "")
    )


def terminal_profile(facts: StudyFacts, board: Board | None = None) -> RichTable:
    """A board's five-axis profile (default: the main one's) for an 80-column terminal: per
    system, in the board's order, its Elo on each axis over its interval and the verdicts (v)
    and conversations (c) behind it; ``*`` preliminary, ``!`` judged by a judge the audit flags,
    the Elo in parentheses without an interval, ``no data`` where no verdict judged the axis;
    with ``ratings.weights``, the weighted composite and its interval under each name."""
    board = board or facts.main
    title = f"Five-axis profile: {facts.name}"
    title = f"{title} ({board.title})" if board else title
    table = RichTable(title=as_text(title, style="table.title"))
    for head in ["#", "system", *AXES]:
        table.add_column(head, justify="left" if head == "system" else "right")
    if board is None:
        table.caption = "No valid judgments yet: run `heart run`."
        return table
    flagged = flagged_axes(board, facts.audit)
    for s in profiled(board):
        name = s.system + (" *" if s.preliminary else "")
        if board.leaderboard.weights is not None:
            elo, _, low_high = composite_cell(s).partition(" [")
            name += f"\n{COMPOSITE_COLUMN} {elo}" + (
                f"\n{low_high.rstrip(']')}" if low_high else ""
            )
        cells = [rank_cell(s), name]
        cells += [_axis_lines(board, s, axis, bool(flagged[axis])) for axis in AXES]
        table.add_row(*map(as_text, cells))
    table.caption = as_text(profile_caption(board, flagged))
    return table


def _axis_lines(board: Board, s: Standing, axis: str, flagged: bool) -> str:
    """A profile cell in three short lines: Elo and marks, interval, verdicts and
    conversations (``no data`` alone where none judged the axis)."""
    elo = s.axis_elo[axis]
    if math.isnan(elo):
        return NO_DATA
    low, high = s.axis_low[axis], s.axis_high[axis]
    measured = math.isfinite(low)
    marks = axis_marks(board, s, axis, flagged)
    first = (f"{elo:.0f}" if measured else f"({elo:.0f})") + (f" {marks}" if marks else "")
    counts = f"{s.axis_comparisons[axis]}v {s.axis_conversations[axis]}c"
    return "\n".join([first, interval(low, high) if measured else "no CI", counts])


def profile_caption(board: Board, flagged: dict[str, tuple[str, ...]]) -> str:
    """What the terminal profile's cells and marks mean."""
    lb = board.leaderboard
    names = sorted({j for judges in flagged.values() for j in judges})
    return (
        f"Per axis: Elo, its {100 * lb.level:.0f}% CI from {lb.rounds} bootstrap rounds over "
        "conversations, the verdicts (v) that judged the axis and their conversations (c); "
        f"(Elo), no CI: fewer than {INTERVAL_CONVERSATIONS} conversations on the axis; "
        "* preliminary (fewer than "
        f"{lb.rule.conversations} conversations or {lb.rule.comparisons} verdicts)"
        + (f"; ! judged by {', '.join(names)}, flagged unreliable by the audit" if names else "")
        + (
            f"; {COMPOSITE_COLUMN} under a name: Σ weight × Elo per axis "
            f"({weights_text(lb.weights)}) and its CI"
            if lb.weights
            else ""
        )
        + "; rows in the board's order (#: its rank)"
    )


def terminal_conclusions(facts: StudyFacts, board: Board | None = None) -> list[str]:
    """What the terminal prints under a board: what the judges added (the judge-assisted
    board), its evidence, audit, clear pairs and preliminary systems."""
    board = board or facts.main
    if board is None:
        return []
    helped = [] if board.assistance is None else [assistance_text(board.assistance)]
    return [*helped, *board_conclusions(board, facts.audit)]


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
