"""The core of the report's tables: a titled table of text cells, built once and rendered as
Markdown, HTML or rich, and the few ways a number is written in a cell."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from heart.stats import Share
from heart.types import Axis

AXES = [a.value for a in Axis]
MAX_DIFFERENCE_ROWS = 40
"""Beyond this many pairs a table lists only the clear or significant ones (its CSV has all)."""
NO_DATA = "no data"
"""An axis cell of a system whose verdicts did not judge that axis (people, imports)."""


@dataclass
class Table:
    """A titled table of text cells (no title: no heading of its own). ``colours`` (optional)
    gives each cell's background, ``flagged`` the rows to mark as a warning."""

    title: str
    header: list[str]
    rows: list[list[str]]
    note: str = ""
    key: str = ""
    colours: list[list[str | None]] = field(default_factory=list)
    flagged: list[bool] = field(default_factory=list)


def pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.0f}%"


def num(x: float, digits: int = 0) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def interval(low: float, high: float) -> str:
    """Like ``1480–1530``; a dash when either end is missing or infinite."""
    if math.isinf(low) or math.isinf(high) or math.isnan(low) or math.isnan(high):
        return "–"
    return f"{low:.0f}–{high:.0f}"


def axis_cell(x: float, text: str) -> str:
    return NO_DATA if math.isnan(x) else text


def share_text(share: Share | None) -> str:
    """Like ``62% [55–68%] of 120``; a dash without a share."""
    return share.text() if share is not None else "–"


def pick_columns(table: Table, columns: list[str], title: str, note: str, key: str) -> Table:
    """A narrower table of some of ``table``'s columns, in the order given, with their colours."""
    at = [table.header.index(c) for c in columns]
    colours = [[row[i] if i < len(row) else None for i in at] for row in table.colours]
    return Table(
        title,
        columns,
        [[row[i] for i in at] for row in table.rows],
        note,
        key,
        colours,
        table.flagged,
    )


def conclusion(flagged: bool, problems: Sequence[str], cautions: Sequence[str]) -> str:
    """A reliability check's conclusion in words (a judge's audit, the hostility rater's)."""
    if flagged:
        return "UNRELIABLE: " + "; ".join(problems) + "."
    if cautions:
        return "Caution: " + "; ".join(cautions) + "."
    return "no problem found"
