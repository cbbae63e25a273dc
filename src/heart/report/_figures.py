"""The report's figures, drawn with matplotlib (no display needed) and returned as PNG bytes."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from heart.analyses import BEST_HUMAN, AdversarialReport, Board, StrategyReport
from heart.report._colours import BAND_STOPS, USAGE_STOPS
from heart.types import Axis

if TYPE_CHECKING:
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.figure import Figure

AXES = [a.value for a in Axis]
DPI = 110


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of this size in inches. Only the report's figures need matplotlib, so it
    is imported here, when the first one is drawn."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _colour_map(name: str, stops: Sequence[str]) -> LinearSegmentedColormap:
    """The matplotlib colour map of a scale of the tables (heart.report._colours)."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list(name, list(stops))


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def heatmap_png(board: Board) -> bytes:
    """The board as a coloured grid: Elo with its interval, then overall and per-axis win rates,
    each column banded on its own scale (win rates around 50%)."""
    standings = board.leaderboard.standings
    k = len(standings)
    columns = ["Elo", "win rate", *AXES]
    elo = np.asarray([s.elo for s in standings])
    rates = np.asarray([[s.win_rate, *(s.axis_win_rates[a] for a in AXES)] for s in standings])
    spread = max(float(np.nanmax(np.abs(elo - 1500))), 1.0)
    scaled = np.column_stack([(elo - 1500) / (2 * spread) + 0.5, rates])
    fig = new_figure(1.25 * len(columns) + 2.2, 0.42 * k + 1.2)
    ax = fig.subplots()
    bands = _colour_map("heart", BAND_STOPS)
    ax.imshow(np.nan_to_num(scaled, nan=0.5), cmap=bands, vmin=0, vmax=1, aspect="auto")
    for i, s in enumerate(standings):
        ax.text(0, i, f"{s.elo:.0f} [{s.low:.0f}, {s.high:.0f}]", ha="center", va="center",
                fontsize=8)  # fmt: skip
        for j, value in enumerate(rates[i], start=1):
            text = ("–" if j == 1 else "no data") if math.isnan(value) else f"{100 * value:.0f}%"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(columns)), columns, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(k), [s.system for s in standings], fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(f"HEART leaderboard ({board.title})", fontsize=10, pad=24)
    return _png(fig)


def forest_png(board: Board) -> bytes:
    """Elo per system with the conversation-bootstrap interval (dark) and the paper's
    SE = sqrt(1/n) interval (light); the selection-biased best human in grey when present."""
    rows = list(board.leaderboard.standings)
    if board.best_human is not None:
        rows.append(board.best_human)
    k = len(rows)
    fig = new_figure(7.0, 0.34 * k + 1.3)
    ax = fig.subplots()
    y = np.arange(k)[::-1]
    for yi, s in zip(y, rows, strict=True):
        grey = s.system == BEST_HUMAN
        ax.plot([s.paper_low, s.paper_high], [yi - 0.18] * 2, color="#9bb7d4", lw=2.5,
                solid_capstyle="butt")  # fmt: skip
        ax.plot([s.low, s.high], [yi, yi], color="#888888" if grey else "#1f4e79", lw=2.5)
        ax.plot([s.elo], [yi], "o", color="#888888" if grey else "#1f4e79", ms=5)
    ax.axvline(1500, color="#bbbbbb", lw=1, ls="--")
    labels = [s.system + (" (selection-biased)" if s.system == BEST_HUMAN else "") for s in rows]
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel(
        f"Elo; dark: {100 * board.leaderboard.level:.0f}% conversation bootstrap, "
        "light: the paper's SE = √(1/n)",
        fontsize=8,
    )
    ax.set_title(f"Elo with intervals ({board.title})", fontsize=10)
    ax.grid(axis="x", color="#eeeeee")
    return _png(fig)


def scree_png(
    eigenvalues: Sequence[float], thresholds: Sequence[float], percentile: float
) -> bytes:
    """The scree plot of the axes' correlation matrix: observed eigenvalues against the
    parallel-analysis line (the same percentile of random data's), retained ones filled."""
    k = len(eigenvalues)
    x = np.arange(1, k + 1)
    observed = np.asarray(eigenvalues, dtype=np.float64)
    line = np.asarray(thresholds, dtype=np.float64)
    beaten = observed > line
    kept = k if beaten.all() else int(np.argmin(beaten))
    fig = new_figure(5.2, 3.2)
    ax = fig.subplots()
    ax.plot(x, observed, color="#1f4e79", lw=1.5, label="observed eigenvalue")
    ax.plot(x[:kept], observed[:kept], "o", color="#1f4e79", ms=6, label="retained")
    ax.plot(x[kept:], observed[kept:], "o", mfc="white", color="#1f4e79", ms=6)
    ax.plot(x, line, "--", color="#c8553d", lw=1.5,
            label=f"random data, {percentile:.0f}th percentile")  # fmt: skip
    ax.set_xticks(x)
    ax.set_xlabel("component", fontsize=8)
    ax.set_ylabel("eigenvalue", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.grid(color="#eeeeee")
    ax.legend(fontsize=8, frameon=False)
    ax.set_title("Scree plot of the axis scores with parallel analysis", fontsize=10)
    return _png(fig)


def hostility_png(report: AdversarialReport) -> bytes:
    """One panel per escalation profile with kept items: each item's target hostility per
    seeker turn (line) and the rater's score (points)."""
    profiles = [p.profile for p in report.profiles if p.kept]
    fig = new_figure(3.2 * len(profiles) + 0.6, 2.9)
    axes = np.atleast_1d(fig.subplots(1, len(profiles), sharey=True, squeeze=False)[0])
    for ax, profile in zip(axes, profiles, strict=True):
        for n, kept in enumerate(k for k in report.kept if k.profile == profile):
            turns = np.arange(1, len(kept.targets) + 1)
            colour = f"C{n % 10}"
            ax.plot(turns, kept.targets, color=colour, lw=1.5, alpha=0.6)
            ax.plot(turns, kept.ratings, "o", color=colour, ms=4)
        ax.set_title(profile, fontsize=9)
        ax.set_xlabel("seeker turn", fontsize=8)
        longest = max(len(k.targets) for k in report.kept if k.profile == profile)
        ax.set_xticks(range(1, longest + 1))
        ax.set_ylim(-0.5, 10.5)
        ax.grid(color="#eeeeee")
    axes[0].set_ylabel("hostility (line: target, dots: rated)", fontsize=8)
    fig.suptitle("Kept adversarial items: target against rated hostility", fontsize=10, y=1.04)
    return _png(fig)


def strategy_heatmap_png(report: StrategyReport) -> bytes:
    """Usage of each strategy (rows, most used overall first) by each family (columns), in
    percent of the family's replies."""
    families = report.families
    index = [report.taxonomy.index(name) for name in report.order]
    rates = np.asarray([[u.diversity.rates[i] for u in families] for i in index])
    fig = new_figure(1.15 * len(families) + 3.4, 0.36 * len(index) + 1.6)
    ax = fig.subplots()
    usage = _colour_map("usage", USAGE_STOPS)
    image = ax.imshow(100 * rates, cmap=usage, vmin=0, vmax=100, aspect="auto")
    for i in range(len(index)):
        for j in range(len(families)):
            value = 100 * rates[i, j]
            text = "–" if math.isnan(value) else f"{value:.0f}"
            colour = "white" if value >= 55 else "#222222"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
    labels = [f"{u.group}\nn={u.diversity.replies}" for u in families]
    ax.set_xticks(range(len(families)), labels, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(index)), report.order, fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label("% of the family's replies", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    ax.set_title("Strategy use by family (% of each family's replies)", fontsize=10, pad=30)
    return _png(fig)
