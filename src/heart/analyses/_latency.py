"""Latency: each system's time to first token (TTFT) from its streamed completions, and Elo
against the median TTFT with Spearman's ρ across systems (the paper's Figure 5)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select

from heart.analyses._boards import Board
from heart.frames import flat, frame
from heart.stats import Correlation, median_and_quartiles, spearman_correlation
from heart.store import CompletionRow, Store, SystemRow
from heart.types import Status, SystemKind

REALTIME_MS = 500.0
"""The real-time band: a median TTFT under this leaves room for speech recognition and
synthesis within about a second of the seeker falling silent (the paper's design target)."""
MIN_CORRELATION_SYSTEMS = 3
"""Fewest systems a correlation across systems is computed on."""

NO_TIMINGS = {
    SystemKind.HUMAN.value: "people's replies carry no timings",
    SystemKind.DATASET.value: "the ESConv original is taken from the corpus, not generated",
    SystemKind.CONTROL.value: "a control's reply is fixed text, not generated",
}
NOT_STREAMED = "no time to first token recorded (not streamed, or imported)"
NO_COMPLETIONS = "no completions yet"


@dataclass(frozen=True)
class SystemLatency:
    """One system's timings over its valid completions: how many there are, how many carry a
    time to first token (streamed), its median and quartiles (ms), the median total latency of
    those with one, and why there are no TTFTs (None when there are)."""

    system: str
    kind: str
    family: str
    completions: int
    timed: int
    ttft_median: float
    ttft_q1: float
    ttft_q3: float
    latency_n: int
    latency_median: float
    missing: str | None


@dataclass(frozen=True)
class LatencyPoint:
    """A system of the board with timings: its Elo with interval, and its median TTFT with
    quartiles."""

    system: str
    family: str
    elo: float
    low: float
    high: float
    ttft_median: float
    ttft_q1: float
    ttft_q3: float


@dataclass(frozen=True)
class LatencyReport:
    """Every system's timings, and the systems of ``board`` that have them, set against their
    Elo: the mean Elo of those systems, and Spearman's ρ of Elo with median TTFT (None below
    MIN_CORRELATION_SYSTEMS systems). ``board`` is the board's key (``llm-all``), None without
    a board."""

    systems: list[SystemLatency]
    board: str | None
    points: list[LatencyPoint]
    mean_elo: float
    spearman: Correlation | None
    models_ranked: int = 0  # systems of kind model on the board, timed or not
    realtime_ms: float = REALTIME_MS

    def to_pandas(self) -> Any:
        """One row per system: its timings (:class:`SystemLatency`) and, for the systems of
        the board, its ``elo``, ``low`` and ``high`` there (empty for the others)."""
        on_board = {p.system: p for p in self.points}
        return frame(
            {**flat(s), **{k: getattr(on_board.get(s.system), k, None)
                           for k in ("elo", "low", "high")}}
            for s in self.systems
        )  # fmt: skip

    @property
    def timed(self) -> list[SystemLatency]:
        return [s for s in self.systems if s.missing is None]

    @property
    def realtime(self) -> list[LatencyPoint]:
        """The points inside the real-time band, best Elo first."""
        return [p for p in self.points if p.ttft_median < self.realtime_ms]

    def of(self, system: str) -> SystemLatency | None:
        return next((s for s in self.systems if s.system == system), None)


def _why_missing(kind: str, completions: int) -> str:
    if kind in NO_TIMINGS:
        return NO_TIMINGS[kind]
    return NOT_STREAMED if completions else NO_COMPLETIONS


def system_latencies(store: Store) -> list[SystemLatency]:
    """Per system of the store, its valid completions' times to first token and total latencies:
    systems with timings first (fastest median first), then the others by name."""
    ttft: dict[str, list[float]] = defaultdict(list)
    total: dict[str, list[float]] = defaultdict(list)
    count: dict[str, int] = defaultdict(int)
    with store.session() as s:
        systems = [(r.name, r.kind, r.family) for r in s.scalars(select(SystemRow))]
        rows = s.execute(
            select(CompletionRow.system, CompletionRow.ttft_ms, CompletionRow.latency_ms).where(
                CompletionRow.status == Status.OK
            )
        ).all()
    for system, first, whole in rows:
        count[system] += 1
        if first is not None and math.isfinite(first):
            ttft[system].append(float(first))
        if whole is not None and math.isfinite(whole):
            total[system].append(float(whole))
    out = []
    for name, kind, family in systems:
        median, q1, q3 = median_and_quartiles(np.asarray(ttft[name]))
        latency, _, _ = median_and_quartiles(np.asarray(total[name]))
        timed = len(ttft[name])
        out.append(
            SystemLatency(
                system=name, kind=kind, family=family, completions=count[name], timed=timed,
                ttft_median=median, ttft_q1=q1, ttft_q3=q3, latency_n=len(total[name]),
                latency_median=latency,
                missing=None if timed else _why_missing(kind, count[name]),
            )
        )  # fmt: skip
    return sorted(out, key=lambda s: (s.missing is not None, s.ttft_median, s.system))


def latency_report(
    systems: list[SystemLatency],
    board: Board | None,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> LatencyReport:
    """Set the ranked systems of ``board`` that have timings against their median TTFT;
    Spearman's ρ (interval from resampling systems) from MIN_CORRELATION_SYSTEMS of them."""
    timings = {s.system: s for s in systems if s.missing is None}
    points = []
    if board is not None:
        for standing in board.leaderboard.standings:
            t = timings.get(standing.system)
            if t is not None:
                points.append(
                    LatencyPoint(
                        standing.system, standing.family, standing.elo, standing.low,
                        standing.high, t.ttft_median, t.ttft_q1, t.ttft_q3,
                    )
                )  # fmt: skip
    elo = np.asarray([p.elo for p in points])
    ttft = np.asarray([p.ttft_median for p in points])
    spearman = (
        spearman_correlation(ttft, elo, rounds=rounds, seed=seed, level=level)
        if len(points) >= MIN_CORRELATION_SYSTEMS
        else None
    )
    return LatencyReport(
        systems=systems,
        board=board.key if board is not None else None,
        points=points,
        mean_elo=float(elo.mean()) if points else math.nan,
        spearman=spearman,
        models_ranked=sum(
            s.kind == SystemKind.MODEL.value
            for s in (board.leaderboard.standings if board is not None else [])
        ),
    )
