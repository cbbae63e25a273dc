"""Affective against general capability: a board's Elo and win rate against an external
capability index the user supplies (the paper sets HEART Elo against the Artificial Analysis
Intelligence Index: Pearson r = 0.70 over 15 models), the least-squares line of Elo on the index,
and the systems furthest above and below it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heart.analyses._latency import MIN_CORRELATION_SYSTEMS
from heart.analyses._leaderboard import Standing
from heart.capability import CapabilityIndex
from heart.stats import (
    Correlation,
    least_squares_line,
    pearson_correlation,
    spearman_correlation,
)
from heart.tables import CORRELATION_COLUMNS, Cell, CellTable, correlation_cells, number

FURTHEST = 3  # systems named above and below the line
ON_THE_LINE = 1e-6  # Elo: a residual this small is rounding, not a system off the line
CAPABILITY_COLUMNS = ["board", "system", "family", "index", "elo", "win_rate", "fitted_elo",
                      "residual"]  # fmt: skip


@dataclass(frozen=True)
class CapabilityPoint:
    """A ranked system with an index value: its Elo and win rate, the Elo the line predicts
    from its index value, and the residual (Elo minus that; NaN without a line)."""

    system: str
    family: str
    index: float
    elo: float
    win_rate: float
    fitted: float
    residual: float


@dataclass(frozen=True)
class EqualIndex:
    """Systems sharing one index value, and how far apart their Elo is."""

    index: float
    systems: list[str]
    elo_gap: float


@dataclass(frozen=True)
class CapabilityReport:
    """The board's systems with an index value (largest residual first), the correlations of
    the index with Elo and with the win rate (None below MIN_CORRELATION_SYSTEMS systems), the
    line of Elo on the index, and what could not be matched either way. ``board`` is the board's
    key (``llm-all``), empty without a board."""

    path: str
    board: str
    points: list[CapabilityPoint]
    elo_pearson: Correlation | None
    elo_spearman: Correlation | None
    win_pearson: Correlation | None
    win_spearman: Correlation | None
    slope: float
    intercept: float
    not_on_board: list[str] = field(default_factory=list)  # in the index, not ranked
    without_value: list[str] = field(default_factory=list)  # ranked, not in the index
    equal_index: list[EqualIndex] = field(default_factory=list)  # widest Elo gap first

    def tables(self) -> dict[str, CellTable]:
        """The report's tables: capability (capability.csv: one row per system of the board
        with an index value) and capability_correlations (the index's rows of
        latency_capability.csv: Pearson and Spearman of the index with Elo and with the win
        rate, none below MIN_CORRELATION_SYSTEMS systems)."""
        points: list[list[Cell]] = [
            [self.board, p.system, p.family, p.index, p.elo, number(p.win_rate),
             number(p.fitted), number(p.residual)]
            for p in self.points
        ]  # fmt: skip
        correlations = [
            correlation_cells(self.board, "index", y, c)
            for y, c in (("elo", self.elo_pearson), ("elo", self.elo_spearman),
                         ("win_rate", self.win_pearson), ("win_rate", self.win_spearman))
            if c is not None
        ]  # fmt: skip
        return {
            "capability": CellTable(CAPABILITY_COLUMNS, points),
            "capability_correlations": CellTable(CORRELATION_COLUMNS, correlations),
        }

    def to_pandas(self) -> Any:
        """capability as a data frame: one row per system with its index value, Elo, win rate,
        the Elo the line predicts from its index value, and the residual."""
        return self.tables()["capability"].to_pandas()

    @property
    def above(self) -> list[CapabilityPoint]:
        """Up to FURTHEST systems above the line, furthest first."""
        return [p for p in self.points if p.residual > ON_THE_LINE][:FURTHEST]

    @property
    def below(self) -> list[CapabilityPoint]:
        """Up to FURTHEST systems below the line, furthest first."""
        return [p for p in reversed(self.points) if p.residual < -ON_THE_LINE][:FURTHEST]


def _equal_index(points: list[CapabilityPoint]) -> list[EqualIndex]:
    groups: dict[float, list[CapabilityPoint]] = {}
    for p in points:
        groups.setdefault(p.index, []).append(p)
    out = [
        EqualIndex(value, sorted(p.system for p in group),
                   max(p.elo for p in group) - min(p.elo for p in group))
        for value, group in groups.items()
        if len(group) > 1
    ]  # fmt: skip
    return sorted(out, key=lambda e: (-e.elo_gap, e.index))


def capability_report(
    standings: Sequence[Standing],
    index: CapabilityIndex,
    board: str,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> CapabilityReport:
    """Match the ranked ``standings`` of ``board`` (its key) to the index; from
    MIN_CORRELATION_SYSTEMS matches, Pearson's r (Fisher z interval) and Spearman's ρ (interval
    from resampling systems) of the index with Elo and with the win rate; from two, the
    least-squares line of Elo on the index and every system's residual."""
    ranked = {s.system for s in standings}
    matched = [s for s in standings if s.system in index.values]
    x = np.asarray([index.values[s.system] for s in matched])
    elo = np.asarray([s.elo for s in matched])
    win = np.asarray([s.win_rate for s in matched])
    slope, intercept = least_squares_line(x, elo) if len(matched) >= 2 else (math.nan, math.nan)
    points = [
        CapabilityPoint(
            s.system, s.family, float(xi), s.elo, s.win_rate, intercept + slope * float(xi),
            s.elo - (intercept + slope * float(xi)),
        )
        for s, xi in zip(matched, x, strict=True)
    ]  # fmt: skip
    points.sort(key=lambda p: (-p.residual if not math.isnan(p.residual) else 0.0, p.system))
    enough = len(matched) >= MIN_CORRELATION_SYSTEMS
    finite_win = bool(np.isfinite(win).all())

    def spearman(y: np.ndarray) -> Correlation:
        return spearman_correlation(x, y, rounds=rounds, seed=seed, level=level)

    return CapabilityReport(
        path=index.path,
        board=board,
        points=points,
        elo_pearson=pearson_correlation(x, elo, level) if enough else None,
        elo_spearman=spearman(elo) if enough else None,
        win_pearson=pearson_correlation(x, win, level) if enough and finite_win else None,
        win_spearman=spearman(win) if enough and finite_win else None,
        slope=slope,
        intercept=intercept,
        not_on_board=[name for name in index.values if name not in ranked],
        without_value=[s.system for s in standings if s.system not in index.values],
        equal_index=_equal_index(points),
    )
