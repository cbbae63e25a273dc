"""The Latency and capability figures: Elo against median time to first token on a log axis
with the real-time band, and Elo against the capability index with its least-squares line."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from heart.analyses import CapabilityReport, LatencyReport, board_title
from heart.report._figures import _png, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

TICKS_MS = [m * 10.0**e for e in range(0, 6) for m in (1, 2, 5)]
"""Labelled times on the log axis: 1, 2, 5, 10, 20, 50 ms and so on up to 500 s."""


def _family_colours(families: list[str]) -> dict[str, str]:
    """One colour of matplotlib's cycle per family, families in alphabetical order (so both
    figures colour a family alike when they show the same families)."""
    return {family: f"C{n % 10}" for n, family in enumerate(sorted(set(families)))}


def _legend(ax: Axes, colours: dict[str, str], extra: list[Line2D]) -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], marker="o", ls="", color=colour, label=family)
        for family, colour in colours.items()
    ]
    ax.legend(handles=handles + extra, fontsize=7, frameon=False, loc="center left",
              bbox_to_anchor=(1.01, 0.5))  # fmt: skip


def _milliseconds(value: float, _: object) -> str:
    return f"{value / 1000:g} s" if value >= 1000 else f"{value:g} ms"


def latency_png(report: LatencyReport) -> bytes:
    """Each system's Elo (with its interval) against its median TTFT (with its interquartile
    range) on a log axis, coloured by family; the real-time band shaded and the mean Elo of the
    systems shown dashed."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    points = report.points
    colours = _family_colours([p.family for p in points])
    fig = new_figure(7.4, 4.2)
    ax = fig.subplots()
    lowest = min(min(p.ttft_q1 for p in points), report.realtime_ms)
    highest = max(max(p.ttft_q3 for p in points), report.realtime_ms)
    # from a labelled time below the fastest to one above the slowest, with some room
    left = max([t for t in TICKS_MS if t <= lowest / 1.3], default=lowest / 2.0)
    right = min([t for t in TICKS_MS if t >= highest * 1.3], default=highest * 2.0)
    ax.axvspan(left, report.realtime_ms, color="#d9ece8", alpha=0.8, lw=0)
    ax.axvline(report.realtime_ms, color="#1f7a7a", lw=0.8)
    ax.axhline(report.mean_elo, color="#777777", lw=1, ls="--")
    for p in points:
        colour = colours[p.family]
        ax.plot([p.ttft_q1, p.ttft_q3], [p.elo, p.elo], color=colour, lw=1.2, alpha=0.7)
        if math.isfinite(p.low) and math.isfinite(p.high):
            ax.plot([p.ttft_median] * 2, [p.low, p.high], color=colour, lw=1.2, alpha=0.7)
        ax.plot([p.ttft_median], [p.elo], "o", color=colour, ms=6)
        ax.annotate(p.system, (p.ttft_median, p.elo), xytext=(4, 4), textcoords="offset points",
                    fontsize=7)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ticks = [t for t in TICKS_MS if left <= t <= right]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(_milliseconds))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("median time to first token (log scale; bar: interquartile range)", fontsize=8)
    level = f"{100 * report.spearman.level:.0f}%" if report.spearman else "95%"
    ax.set_ylabel(f"Elo (bar: {level} interval)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(color="#eeeeee", which="both")
    band = Line2D([], [], color="#d9ece8", lw=8, label=f"under {report.realtime_ms:g} ms")
    mean = Line2D([], [], color="#777777", ls="--", label="mean Elo of these systems")
    _legend(ax, colours, [band, mean])
    title = f"Elo ({board_title(report.board)}) against time to first token"
    if report.spearman is not None and not math.isnan(report.spearman.estimate):
        title += f" (Spearman ρ = {report.spearman.estimate:.2f})"
    ax.set_title(title, fontsize=10)
    return _png(fig)


def capability_png(report: CapabilityReport) -> bytes:
    """Elo against the capability index, coloured by family, with the least-squares line; the
    systems furthest above and below it named in bold."""
    from matplotlib.lines import Line2D

    points = report.points
    colours = _family_colours([p.family for p in points])
    named = {p.system for p in [*report.above, *report.below]}
    fig = new_figure(7.4, 4.2)
    ax = fig.subplots()
    x = np.asarray([p.index for p in points])
    if math.isfinite(report.slope):
        span = np.linspace(x.min(), x.max(), 2)
        ax.plot(span, report.intercept + report.slope * span, color="#777777", lw=1.2)
    for p in points:
        ax.plot([p.index], [p.elo], "o", color=colours[p.family], ms=6)
        ax.annotate(p.system, (p.index, p.elo), xytext=(4, 4), textcoords="offset points",
                    fontsize=7, fontweight="bold" if p.system in named else "normal")  # fmt: skip
    ax.set_xlabel("capability index", fontsize=8)
    ax.set_ylabel("Elo", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(color="#eeeeee")
    line = Line2D([], [], color="#777777", label="least-squares line")
    _legend(ax, colours, [line])
    title = f"Elo ({board_title(report.board)}) against the capability index"
    if report.elo_pearson is not None and not math.isnan(report.elo_pearson.estimate):
        title += f" (Pearson r = {report.elo_pearson.estimate:.2f})"
    ax.set_title(title, fontsize=10)
    return _png(fig)
