"""The report's Latency and capability section: every system's time to first token, Elo against
it on a log axis with the real-time band, and Elo against an external capability index; its
tables, figures and CSV files, and the median-TTFT cells of the leaderboard."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from heart.analyses import (
    BEST_HUMAN,
    MIN_CORRELATION_SYSTEMS,
    CapabilityPoint,
    CapabilityReport,
    LatencyReport,
    SystemLatency,
    board_title,
)
from heart.report._csv import Cell, csv_text, number, table_text
from heart.report._facts import StudyFacts
from heart.report._figures import new_figure, png_bytes
from heart.report._section import Block, Figure, Section
from heart.report._table import Table, pct
from heart.stats import Correlation
from heart.tables import CORRELATION_COLUMNS, correlation_cells
from heart.types import SystemKind

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

TTFT_HEADER = "median TTFT [IQR]"
SHORT_MISSING = {
    SystemKind.HUMAN.value: "people",
    SystemKind.DATASET.value: "corpus",
    SystemKind.CONTROL.value: "fixed text",
}
INTRO = (
    "Time to first token (TTFT) is how long a model took to send the first token of its reply, "
    "measured on streamed calls (a cached reply keeps the time of the call that made it); total "
    "latency is the whole call. The paper reads a median TTFT under {band} ms as the budget of a "
    "real-time voice agent, which must also fit speech recognition and synthesis within about a "
    "second, and treats TTFT as a rough stand-in for a model's size: it also depends on the "
    "provider's hardware and load, so read it as a property of the endpoint measured."
)
BY_SYSTEMS = (
    "Intervals on correlations resample systems, not conversations: with a few systems, which "
    "systems happened to be measured is a far larger source of doubt than each one's Elo, and a "
    "conversation bootstrap, which keeps the same systems in every round, would hide it."
)
NO_TIMINGS = (
    "No completion carries a time to first token. A model records it when its reply is streamed "
    "(every provider heart-bench calls streams); people, the ESConv original, controls and "
    "completions imported from a file carry none. Add a model system and run `heart generate` "
    "to measure it."
)
NO_INDEX = (
    "No capability index given. Set ratings.capability_index in study.yaml to a CSV file with "
    "the columns system and value (a path relative to the study folder), or pass `heart report "
    "--index FILE`; the report then sets each system's Elo and win rate against it (Pearson's "
    "r and Spearman's ρ, a least-squares line and the systems furthest from it)."
)


def milliseconds(x: float) -> str:
    """A time in ms, as ms below a second and as seconds from one."""
    if math.isnan(x):
        return "–"
    return f"{x:.0f} ms" if x < 1000 else f"{x / 1000:.2f} s"


def ttft_text(median: float, q1: float, q3: float) -> str:
    """Like ``412 ms [380–460]`` or ``2.10 s [1.80–2.50]`` (the quartiles in the median's unit)."""
    if math.isnan(median):
        return "–"
    if median < 1000:
        return f"{median:.0f} ms [{q1:.0f}–{q3:.0f}]"
    return f"{median / 1000:.2f} s [{q1 / 1000:.2f}–{q3 / 1000:.2f}]"


def _missing_short(timing: SystemLatency) -> str:
    if timing.kind in SHORT_MISSING:
        return SHORT_MISSING[timing.kind]
    return "not streamed" if timing.completions else "no replies"


def ttft_cell(latency: LatencyReport | None, system: str) -> str:
    """The leaderboard's cell for ``system``: its median TTFT and quartiles, or a dash and why
    there are none."""
    if system == BEST_HUMAN:
        return "–, people"
    timing = latency.of(system) if latency is not None else None
    if timing is None:
        return "–"
    if timing.missing is not None:
        return f"–, {_missing_short(timing)}"
    return ttft_text(timing.ttft_median, timing.ttft_q1, timing.ttft_q3)


def with_ttft(table: Table, latency: LatencyReport | None) -> Table:
    """The leaderboard table with a median-TTFT column (the system is in its second column);
    unchanged when no system of the study has timings."""
    if latency is None or not latency.timed:
        return table
    return replace(
        table,
        header=[*table.header, TTFT_HEADER],
        rows=[[*row, ttft_cell(latency, row[1])] for row in table.rows],
        colours=[[*colours, None] for colours in table.colours],
        note=table.note
        + " Median TTFT: time to first token over the system's streamed replies, with the "
        "interquartile range (see Latency and capability).",
    )


def _correlation(c: Correlation | None) -> tuple[str, str]:
    """The estimate, and its interval (a dash where undefined)."""
    if c is None or math.isnan(c.estimate):
        return "–", "–"
    if math.isnan(c.low) or math.isnan(c.high):
        return f"{c.estimate:.2f}", "–"
    between = " to " if c.low < 0 or c.high < 0 else "–"
    return f"{c.estimate:.2f}", f"{c.low:.2f}{between}{c.high:.2f}"


def _p(c: Correlation | None) -> str:
    if c is None or math.isnan(c.p_value):
        return "–"
    return "< 0.001" if c.p_value < 0.001 else f"{c.p_value:.3f}"


def _p_is(c: Correlation) -> str:
    """Like ``p = 0.035`` or ``p < 0.001``."""
    text = _p(c)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _rounds_note(c: Correlation) -> str:
    text = f"{c.rounds:,} resamples of the systems"
    if c.undefined_rounds:
        text += f"; {c.undefined_rounds} drew one distinct value on a side and were left out"
    return text


def _names(names: list[str]) -> str:
    return ", ".join(names)


def latency_table(report: LatencyReport) -> Table:
    """Every system's TTFT and total latency, or why it has none."""
    rows = []
    for s in report.systems:
        if s.missing is not None:
            note = f"no timings: {s.missing}"
        else:
            note = "under the real-time band" if s.ttft_median < report.realtime_ms else ""
            if s.timed < s.completions:
                note = "; ".join(x for x in (note, f"{s.timed} of {s.completions} streamed") if x)
        rows.append(
            [s.system, s.kind, s.family, str(s.completions), str(s.timed),
             milliseconds(s.ttft_median),
             "–" if s.missing else f"{milliseconds(s.ttft_q1)}–{milliseconds(s.ttft_q3)}",
             milliseconds(s.latency_median), note]
        )  # fmt: skip
    return Table(
        "Time to first token by system",
        ["system", "kind", "family", "replies", "with TTFT", "median TTFT", "interquartile range",
         "median total latency", "note"],
        rows,
        "Over each system's valid replies that carry a time to first token; quartiles by linear "
        f"interpolation. Real-time band: a median TTFT under {report.realtime_ms:g} ms.",
        "latency-systems",
    )  # fmt: skip


def _spearman_line(report: LatencyReport) -> str:
    names = [p.system for p in report.points]
    if report.spearman is None:
        return (
            f"Spearman's ρ of Elo with median TTFT needs at least {MIN_CORRELATION_SYSTEMS} "
            f"systems with timings on the board ({board_title(report.board)}); it has "
            f"{len(names)}: {_names(names)}."
        )
    c = report.spearman
    rho, interval = _correlation(c)
    return (
        f"Spearman's ρ of Elo ({board_title(report.board)}) with median TTFT over {c.n} "
        f"systems: {rho} [{interval}], {_p_is(c)} ({100 * c.level:.0f}% percentile interval from "
        f"{_rounds_note(c)}). The paper found ρ = 0.53 over its models. {BY_SYSTEMS}"
    )


def _band_line(report: LatencyReport) -> str:
    fast = report.realtime
    band = f"{report.realtime_ms:g} ms"
    if not fast:
        return f"No system of the board has a median TTFT under {band}."
    listed = ", ".join(f"{p.system} (Elo {p.elo:.0f})" for p in fast)
    above = [p for p in fast if p.elo > report.mean_elo]
    tail = (
        f"; above the mean Elo of the systems shown ({report.mean_elo:.0f}): "
        f"{_names([p.system for p in above])}"
        if above
        else f"; none is above the mean Elo of the systems shown ({report.mean_elo:.0f})"
    )
    return f"Median TTFT under {band}: {listed}{tail}."


def _latency_blocks(report: LatencyReport) -> list[Block]:
    blocks: list[Block] = [INTRO.format(band=f"{report.realtime_ms:g}")]
    if not report.timed:
        blocks.append(NO_TIMINGS)
        blocks.append(latency_table(report))
        return blocks
    blocks.append(latency_table(report))
    if report.board is None:
        blocks.append("No board yet, so no Elo to set against TTFT: run `heart judge`.")
        return blocks
    if not report.points:
        blocks.append(
            f"No system with timings is ranked on the board ({board_title(report.board)})."
        )
        return blocks
    blocks.append(Figure("latency-figure", "Elo against median time to first token",
                            partial(latency_png, report)))  # fmt: skip
    blocks += [_spearman_line(report), _band_line(report)]
    return blocks


def correlation_table(report: CapabilityReport) -> Table:
    c = report.elo_pearson
    level = f"{100 * c.level:.0f}%" if c is not None else "95%"
    rows = []
    for against, statistic, method, value in (
        ("Elo", "Pearson r", "Fisher z", report.elo_pearson),
        ("Elo", "Spearman ρ", "resampling systems", report.elo_spearman),
        ("win rate", "Pearson r", "Fisher z", report.win_pearson),
        ("win rate", "Spearman ρ", "resampling systems", report.win_spearman),
    ):
        estimate, interval = _correlation(value)
        n = str(value.n) if value is not None else "–"
        rows.append([against, statistic, estimate, interval, method, _p(value), n])
    spearman = report.elo_spearman
    rounds = _rounds_note(spearman) if spearman is not None else "resamples of the systems"
    return Table(
        "Correlation with the capability index",
        ["index against", "statistic", "estimate", f"{level} interval", "interval from", "p",
         "systems"],
        rows,
        "Pearson's interval comes from the Fisher z transform (it assumes the two measures are "
        f"roughly jointly normal); Spearman's is a percentile interval from {rounds}. p: "
        f"two-sided t test of no correlation. {BY_SYSTEMS} The paper found r = 0.70 between Elo "
        "and the Artificial Analysis Intelligence Index over 15 models.",
        "capability-correlations",
    )  # fmt: skip


def capability_table(report: CapabilityReport) -> Table:
    def signed(x: float) -> str:
        return "–" if math.isnan(x) else f"{x:+.0f}"

    rows = [
        [p.system, p.family, f"{p.index:g}", f"{p.elo:.0f}", pct(p.win_rate),
         "–" if math.isnan(p.fitted) else f"{p.fitted:.0f}", signed(p.residual)]
        for p in report.points
    ]  # fmt: skip
    note = "Largest residual first: Elo minus the Elo the least-squares line predicts"
    if math.isfinite(report.slope):
        note += f" (Elo = {report.intercept:.1f} {'+' if report.slope >= 0 else '−'} "
        note += f"{abs(report.slope):.2f} × index)"
    return Table(
        f"Capability index against Elo: {board_title(report.board)}",
        ["system", "family", "index", "Elo", "win rate", "Elo on the line", "residual"],
        rows,
        note + ".",
        "capability",
    )


def _furthest_line(report: CapabilityReport) -> str | None:
    def listed(points: list[CapabilityPoint]) -> str:
        return ", ".join(f"{p.system} ({p.residual:+.0f} Elo)" for p in points)

    parts = []
    if report.above:
        parts.append(f"furthest above the line: {listed(report.above)}")
    if report.below:
        parts.append(f"furthest below: {listed(report.below)}")
    if not parts:
        return None
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def _equal_line(report: CapabilityReport) -> str | None:
    if not report.equal_index:
        return None
    widest = report.equal_index[0]
    text = (
        f"Systems with the same index value differ by up to {widest.elo_gap:.0f} Elo "
        f"({_names(widest.systems)} at {widest.index:g})"
    )
    others = [f"{_names(e.systems)} at {e.index:g}: {e.elo_gap:.0f}" for e in
              report.equal_index[1:]]  # fmt: skip
    return text + (f"; {'; '.join(others)}" if others else "") + "."


def _capability_blocks(report: CapabilityReport | None, models: int | None) -> list[Block]:
    if report is None:
        if models is not None and models < MIN_CORRELATION_SYSTEMS:
            few = f"{models} model" + ("" if models == 1 else "s")
            return [
                NO_INDEX + f" This study's board ranks {few}: a correlation across models "
                f"needs at least {MIN_CORRELATION_SYSTEMS}, so an index would add nothing here "
                "yet."
            ]
        return [NO_INDEX]
    if not report.board:
        return [f"Capability index {report.path}: no board yet, so no Elo to set against it."]
    matched = len(report.points)
    ranked = matched + len(report.without_value)
    blocks: list[Block] = [
        f"Capability index {report.path}: {matched} of the {ranked} systems ranked on the board "
        f"({board_title(report.board)}) have a value."
    ]
    if report.without_value:
        blocks.append(f"Ranked but not in the index: {_names(report.without_value)}.")
    if report.not_on_board:
        blocks.append(f"In the index but not ranked on this board: {_names(report.not_on_board)}.")
    if matched < MIN_CORRELATION_SYSTEMS:
        blocks.append(
            f"A correlation needs at least {MIN_CORRELATION_SYSTEMS} systems with both an index "
            f"value and an Elo; this board has {matched}, so none is computed."
        )
        if matched:
            blocks.append(capability_table(report))
        return blocks
    blocks.append(correlation_table(report))
    blocks.append(Figure("capability-figure", "Elo against the capability index",
                            partial(capability_png, report)))  # fmt: skip
    blocks += [line for line in (_furthest_line(report), _equal_line(report)) if line]
    blocks.append(capability_table(report))
    return blocks


def latency_section(facts: StudyFacts) -> Section:
    """The section: timings and Elo against TTFT, then the capability index (or how to give
    one)."""
    latency, capability = facts.latency, facts.capability
    blocks: list[Block] = _latency_blocks(latency) if latency is not None else [NO_TIMINGS]
    models = latency.models_ranked if latency is not None and latency.board else None
    return Section(
        "latency", "Latency and capability", blocks + _capability_blocks(capability, models)
    )


# --- CSV ---

TTFT_COLUMNS = ["ttft_median_ms", "ttft_q1_ms", "ttft_q3_ms", "ttft_completions"]
LATENCY_HEADER = [
    "system", "kind", "family", "completions", "ttft_completions", "ttft_median_ms", "ttft_q1_ms",
    "ttft_q3_ms", "latency_completions", "latency_median_ms", "board", "elo", "elo_low",
    "elo_high", "under_realtime_band", "no_timings",
]  # fmt: skip


def ttft_cells(latency: LatencyReport | None, system: str) -> list[Cell]:
    """The TTFT columns of one leaderboard.csv row: empty for a system without timings."""
    timing = latency.of(system) if latency is not None else None
    if timing is None or timing.missing is not None:
        return [None] * len(TTFT_COLUMNS)
    return [timing.ttft_median, timing.ttft_q1, timing.ttft_q3, timing.timed]


def latency_files(facts: StudyFacts) -> dict[str, str]:
    """latency.csv (every system), and with an index capability.csv; latency_capability.csv
    holds every correlation of the section."""
    latency, capability = facts.latency, facts.capability
    files: dict[str, str] = {}
    correlations: list[Sequence[Cell]] = []
    if latency is not None:
        points = {p.system: p for p in latency.points}
        rows: list[list[Cell]] = []
        for s in latency.systems:
            p = points.get(s.system)
            timed = s.missing is None
            rows.append(
                [s.system, s.kind, s.family, s.completions, s.timed, number(s.ttft_median),
                 number(s.ttft_q1), number(s.ttft_q3), s.latency_n, number(s.latency_median),
                 latency.board if p else None, p.elo if p else None, p.low if p else None,
                 p.high if p else None, s.ttft_median < latency.realtime_ms if timed else None,
                 s.missing]
            )  # fmt: skip
        files["latency.csv"] = csv_text(LATENCY_HEADER, rows)
        if latency.spearman is not None:
            correlations.append(
                correlation_cells(latency.board or "", "ttft_median_ms", "elo", latency.spearman)
            )
    if capability is not None:
        tables = capability.tables()
        files["capability.csv"] = table_text(tables["capability"])
        correlations += tables["capability_correlations"].rows
    if correlations:
        files["latency_capability.csv"] = csv_text(CORRELATION_COLUMNS, correlations)
    return files


# --- figures ---

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
    return png_bytes(fig)


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
    return png_bytes(fig)
