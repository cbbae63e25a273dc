"""The tables behind the report's CSV files as plain cells: one number per column at full
precision (an estimate, its interval and its count apart), None where there is no data. The
report writes them as CSV; notebooks read the same rows as data frames."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

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


class ColumnRows(Sequence[tuple[Cell, ...]]):
    """Rows kept as columns (a table of millions of rows is built and written column by
    column); read as rows like any other."""

    def __init__(self, columns: Sequence[Sequence[Cell]]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @overload
    def __getitem__(self, index: int) -> tuple[Cell, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Cell, ...]]: ...
    def __getitem__(self, index: int | slice) -> tuple[Cell, ...] | list[tuple[Cell, ...]]:
        if isinstance(index, slice):
            return list(zip(*(column[index] for column in self.columns), strict=True))
        return tuple(column[index] for column in self.columns)

    def __iter__(self) -> Iterator[tuple[Cell, ...]]:
        return zip(*self.columns, strict=True)


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
    "ColumnRows",
    "correlation_cells",
    "number",
    "share_cells",
]
