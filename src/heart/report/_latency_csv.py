"""The Latency and capability section's CSV files, and the TTFT cells of leaderboard.csv: every
number in its own column at full precision, an empty cell where there is no data."""

from __future__ import annotations

import math

from heart.analyses import CapabilityReport, LatencyReport
from heart.stats import Correlation

Cell = str | int | float | bool | None

TTFT_COLUMNS = ["ttft_median_ms", "ttft_q1_ms", "ttft_q3_ms", "ttft_completions"]
LATENCY_HEADER = [
    "system", "kind", "family", "completions", "ttft_completions", "ttft_median_ms", "ttft_q1_ms",
    "ttft_q3_ms", "latency_completions", "latency_median_ms", "board", "elo", "elo_low",
    "elo_high", "under_realtime_band", "no_timings",
]  # fmt: skip
CAPABILITY_HEADER = ["board", "system", "family", "index", "elo", "win_rate", "fitted_elo",
                     "residual"]  # fmt: skip
CORRELATION_HEADER = [
    "board", "x", "y", "statistic", "estimate", "low", "high", "level", "interval", "rounds",
    "undefined_rounds", "p", "systems",
]  # fmt: skip


def _number(x: float) -> float | None:
    return None if math.isnan(x) else x


def ttft_cells(latency: LatencyReport | None, system: str) -> list[Cell]:
    """The TTFT columns of one leaderboard.csv row: empty for a system without timings."""
    timing = latency.of(system) if latency is not None else None
    if timing is None or timing.missing is not None:
        return [None] * len(TTFT_COLUMNS)
    return [timing.ttft_median, timing.ttft_q1, timing.ttft_q3, timing.timed]


def _correlation_row(board: str, x: str, y: str, c: Correlation | None) -> list[Cell] | None:
    if c is None:
        return None
    statistic = "pearson_r" if c.method == "pearson" else "spearman_rho"
    return [board, x, y, statistic, _number(c.estimate), _number(c.low), _number(c.high),
            c.level, c.interval, c.rounds or None, c.undefined_rounds if c.rounds else None,
            _number(c.p_value), c.n]  # fmt: skip


def latency_files(
    latency: LatencyReport | None, capability: CapabilityReport | None
) -> dict[str, str]:
    """latency.csv (every system), and with an index capability.csv; latency_capability.csv
    holds every correlation of the section."""
    from heart.report._csv import _csv  # leaderboard.csv there takes its TTFT cells from here

    files: dict[str, str] = {}
    correlations: list[list[Cell] | None] = []
    if latency is not None:
        points = {p.system: p for p in latency.points}
        rows: list[list[Cell]] = []
        for s in latency.systems:
            p = points.get(s.system)
            timed = s.missing is None
            rows.append(
                [s.system, s.kind, s.family, s.completions, s.timed, _number(s.ttft_median),
                 _number(s.ttft_q1), _number(s.ttft_q3), s.latency_n, _number(s.latency_median),
                 latency.board if p else None, p.elo if p else None, p.low if p else None,
                 p.high if p else None, s.ttft_median < latency.realtime_ms if timed else None,
                 s.missing]
            )  # fmt: skip
        files["latency.csv"] = _csv(LATENCY_HEADER, rows)
        correlations.append(
            _correlation_row(latency.board or "", "ttft_median_ms", "elo", latency.spearman)
        )
    if capability is not None:
        files["capability.csv"] = _csv(
            CAPABILITY_HEADER,
            [[capability.board, p.system, p.family, p.index, p.elo, _number(p.win_rate),
              _number(p.fitted), _number(p.residual)] for p in capability.points],
        )  # fmt: skip
        for y, c in (
            ("elo", capability.elo_pearson),
            ("elo", capability.elo_spearman),
            ("win_rate", capability.win_pearson),
            ("win_rate", capability.win_spearman),
        ):
            correlations.append(_correlation_row(capability.board, "index", y, c))
    kept = [row for row in correlations if row is not None]
    if kept:
        files["latency_capability.csv"] = _csv(CORRELATION_HEADER, kept)
    return files
