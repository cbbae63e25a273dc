"""The report's Latency and capability section as an ordered list of lines, tables and figures,
and the median-TTFT column of the leaderboard."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from heart.analyses import (
    BEST_HUMAN,
    MIN_CORRELATION_SYSTEMS,
    CapabilityPoint,
    CapabilityReport,
    LatencyReport,
    SystemLatency,
    board_title,
)
from heart.report._latency_figures import capability_png, latency_png
from heart.report._tables import Table, pct
from heart.stats import Correlation
from heart.types import SystemKind

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


@dataclass(frozen=True)
class FigureRef:
    """A figure of the section, drawn only by the renderers that embed figures."""

    key: str
    alt: str
    draw: Callable[[], bytes]


Block = str | Table | FigureRef


@dataclass
class LatencySection:
    """The section in reading order: lines, tables and figures."""

    blocks: list[Block] = field(default_factory=list)

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]

    @property
    def lines(self) -> list[str]:
        return [b for b in self.blocks if isinstance(b, str)]


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
    blocks.append(FigureRef("latency-figure", "Elo against median time to first token",
                            lambda: latency_png(report)))  # fmt: skip
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
    blocks.append(FigureRef("capability-figure", "Elo against the capability index",
                            lambda: capability_png(report)))  # fmt: skip
    blocks += [line for line in (_furthest_line(report), _equal_line(report)) if line]
    blocks.append(capability_table(report))
    return blocks


def latency_section(
    latency: LatencyReport | None, capability: CapabilityReport | None
) -> LatencySection:
    """The section: timings and Elo against TTFT, then the capability index (or how to give
    one)."""
    blocks: list[Block] = _latency_blocks(latency) if latency is not None else [NO_TIMINGS]
    models = latency.models_ranked if latency is not None and latency.board else None
    return LatencySection(blocks + _capability_blocks(capability, models))
