"""Time to first token per system from the store (medians and quartiles by hand, the reason a
system has none), and Elo against median TTFT: the systems shown, their mean Elo and Spearman's
ρ against scipy."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from heart.analyses import (
    REALTIME_MS,
    build_boards,
    latency_report,
    load_comparisons,
    system_latencies,
)
from heart.analyses._latency import NO_COMPLETIONS, NO_TIMINGS, NOT_STREAMED
from heart.store import Store

from ..latency_rows import EXPECTED, seed_latency_study


def test_medians_and_quartiles_by_hand_and_why_a_system_has_none(store: Store) -> None:
    seed_latency_study(store)
    systems = {s.system: s for s in system_latencies(store)}
    for name, (median, q1, q3) in EXPECTED.items():
        s = systems[name]
        assert (s.ttft_median, s.ttft_q1, s.ttft_q3) == (median, q1, q3), name
        assert s.missing is None
    assert (systems["m2"].completions, systems["m2"].timed) == (4, 3)  # the failed reply is out
    assert (systems["m1"].latency_n, systems["m1"].latency_median) == (4, 1250.0)
    assert systems["human"].missing == NO_TIMINGS["human"]
    assert systems["ds"].missing == NO_TIMINGS["dataset"]
    assert systems["warm"].missing == NO_TIMINGS["control"]
    slow = systems["slow"]
    assert (slow.missing, slow.timed, slow.latency_median) == (NOT_STREAMED, 0, 1500.0)
    assert math.isnan(slow.ttft_median)
    assert (systems["idle"].missing, systems["idle"].completions) == (NO_COMPLETIONS, 0)
    ordered = [s.system for s in system_latencies(store)]
    assert ordered[:4] == ["m2", "m1", "m3", "m4"]  # fastest median first, then the rest


def test_elo_against_median_ttft_on_the_main_board(store: Store) -> None:
    seed_latency_study(store)
    board = build_boards(load_comparisons(store), rounds=100, seed=3)[0]
    report = latency_report(system_latencies(store), board, rounds=300, seed=3)
    standings = {s.system: s for s in board.leaderboard.standings}
    assert [p.system for p in report.points] == ["m4", "m3", "m1", "m2"]  # board order
    for p in report.points:
        assert (p.elo, p.low, p.high) == (
            standings[p.system].elo, standings[p.system].low, standings[p.system].high,
        )  # fmt: skip
        assert (p.ttft_median, p.ttft_q1, p.ttft_q3) == EXPECTED[p.system]
    elo = [standings[n].elo for n in ("m4", "m3", "m1", "m2")]
    ttft = [EXPECTED[n][0] for n in ("m4", "m3", "m1", "m2")]
    assert report.mean_elo == pytest.approx(sum(elo) / 4, abs=1e-9)
    assert report.spearman is not None
    assert report.spearman.estimate == pytest.approx(stats.spearmanr(ttft, elo).statistic)
    assert report.spearman.n == 4 and report.spearman.rounds == 300
    assert [p.system for p in report.realtime] == ["m1", "m2"]  # under 500 ms
    assert report.realtime_ms == REALTIME_MS == 500.0
    assert report.models_ranked == 5  # m1-m4 and slow; idle has no replies to rank
    assert report.board == "llm-all"


def test_without_a_board_or_with_too_few_timed_systems_there_is_no_rho(store: Store) -> None:
    seed_latency_study(store)
    none = latency_report(system_latencies(store), None)
    assert (none.points, none.spearman, none.board) == ([], None, None)
    assert len(none.timed) == 4
    timed = [s for s in system_latencies(store) if s.system in ("m1", "m2", "human")]
    board = build_boards(load_comparisons(store), rounds=20)[0]
    two = latency_report(timed, board, rounds=20)
    assert [p.system for p in two.points] == ["m1", "m2"] and two.spearman is None
