"""The tables behind the report's CSV files as plain cells: one number per column at full
precision (an estimate, its interval and its count apart), None where there is no data. The
report writes them as CSV; notebooks read the same rows as data frames."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heart.stats import Correlation, Share

Cell = str | int | float | bool | None
SHARE_COLUMNS = ("hits", "n", "estimate", "low", "high")
CORRELATION_COLUMNS = (
    "board", "x", "y", "statistic", "estimate", "low", "high", "level", "interval", "rounds",
    "undefined_rounds", "p", "systems",
)  # fmt: skip


def share_cells(share: Share | None) -> list[Cell]:
    """hits, n, estimate, low, high; empty when there is no share."""
    if share is None or not share.n:
        return [None] * len(SHARE_COLUMNS)
    return [share.hits, share.n, share.value, share.low, share.high]


def number(x: float) -> float | None:
    """A float cell, empty for NaN."""
    return None if math.isnan(x) else x


def correlation_cells(board: str, x: str, y: str, c: Correlation) -> list[Cell]:
    """One row of CORRELATION_COLUMNS: ``y`` against ``x`` across the systems of ``board``."""
    statistic = "pearson_r" if c.method == "pearson" else "spearman_rho"
    return [board, x, y, statistic, number(c.estimate), number(c.low), number(c.high),
            c.level, c.interval, c.rounds or None, c.undefined_rounds if c.rounds else None,
            number(c.p_value), c.n]  # fmt: skip


@dataclass(frozen=True)
class CellTable:
    """Named columns and rows of plain cells: what one CSV file of the report holds."""

    columns: Sequence[str]
    rows: Sequence[Sequence[Cell]]

    def __len__(self) -> int:
        return len(self.rows)

    def to_pandas(self) -> Any:
        """A data frame with these columns (even when there are no rows), one row per row."""
        from heart.frames import frame

        return frame((dict(zip(self.columns, row, strict=True)) for row in self.rows),
                     self.columns)  # fmt: skip


__all__ = [
    "CORRELATION_COLUMNS",
    "SHARE_COLUMNS",
    "Cell",
    "CellTable",
    "correlation_cells",
    "number",
    "share_cells",
]
