"""The evidence behind each system on a board: no interval, rank or significant difference from
too few conversations, ranks that admit ties, clear pairs only on more than one rater, and the
preliminary marks; on one conversation, one rater, and a system added late."""

from __future__ import annotations

import math

import numpy as np
import pytest

from heart.analyses import (
    INTERVAL_CONVERSATIONS,
    EvidenceRule,
    build_boards,
    build_leaderboard,
    load_comparisons,
)
from heart.store import Store

from ..rows import Verdict, seed_verdicts


def _established(items: range) -> list[Verdict]:
    """m1 beats m2 and m2 beats m3 on every item of ``items`` (two LLM judges), with an upset
    now and then so that no fit is separated."""
    out = []
    for i in items:
        for judge in ("g1", "g2"):
            upset = (i + len(judge)) % 4 == 0
            out.append(Verdict(i, "m1", "m2", judge, "b" if upset else "a", 3))
            out.append(Verdict(i, "m2", "m3", judge, "a", 3 if upset else 4))
            out.append(Verdict(i, "m1", "m3", judge, "a", 5))
    return out


def test_a_system_added_in_one_conversation_gets_no_interval_rank_or_significance(
    store: Store,
) -> None:
    # the case: "new" met the others in one conversation with 3 comparisons
    late = [Verdict(0, "new", s, "g1", "a", 5) for s in ("m1", "m2", "m3")]
    seed_verdicts(store, _established(range(12)) + late)
    board = build_leaderboard(load_comparisons(store), rounds=200, seed=1)
    new = next(s for s in board.standings if s.system == "new")
    assert (new.comparisons, new.conversations, new.opponents, new.judges) == (3, 1, 3, 1)
    assert math.isnan(new.low) and math.isnan(new.high)
    assert math.isnan(new.robust_low) and math.isnan(new.paper_low)
    assert new.rank == 0 and not new.ranked
    assert new.preliminary == (
        "1 conversation: an interval needs 5, so none is shown",
        "3 comparisons (fewer than 50)",
    )
    assert board.standings[-1].system == "new"  # unranked systems follow the ranked ones
    names = board.systems
    involving = [d for d in board.differences if "new" in (names[d.i], names[d.j])]
    assert len(involving) == 3 and not any(d.significant or d.clear for d in involving)
    assert all(math.isnan(d.low) for d in involving)
    # the others keep their intervals and are anchored without the newcomer (mean 1500)
    rest = [s for s in board.standings if s.system != "new"]
    assert all(s.ranked and s.high > s.low for s in rest)
    assert np.mean([s.elo for s in rest]) == pytest.approx(1500.0)
    assert [s.rank for s in rest] == [1, 2, 3]
    assert {(names[d.i], names[d.j]) for d in board.clear_pairs} == {
        ("m1", "m2"), ("m1", "m3"), ("m2", "m3"),
    }  # fmt: skip


def test_one_conversation_shows_no_interval_for_anyone(store: Store) -> None:
    seed_verdicts(store, _established(range(1)))
    board = build_leaderboard(load_comparisons(store), rounds=100)
    assert board.conversations == 1
    assert all(math.isnan(s.low) and s.rank == 0 for s in board.standings)
    assert not any(d.significant or d.clear for d in board.differences)
    assert all("1 conversation" in s.preliminary[0] for s in board.standings)
    # Elo itself is still the full fit, centred on every system
    assert np.mean([s.elo for s in board.standings]) == pytest.approx(1500.0)


def test_a_single_well_measured_system_cannot_anchor_the_scale(store: Store) -> None:
    verdicts = [Verdict(i, "m1", "m2", "g1", "a" if i % 3 else "b", 2) for i in range(8)]
    verdicts += [Verdict(i, "m1", "m3", "g1", "a", 2) for i in range(2)]
    verdicts += [Verdict(i, "m1", "m4", "g1", "b", 2) for i in range(2, 4)]
    seed_verdicts(store, verdicts)
    board = build_leaderboard(load_comparisons(store), rounds=100)
    by = {s.system: s for s in board.standings}
    assert (by["m1"].conversations, by["m2"].conversations) == (8, 8)
    assert all(not math.isnan(by[s].low) for s in ("m1", "m2"))
    # two systems with 8 conversations anchor it; m3 and m4 with 2 each get nothing
    assert math.isnan(by["m3"].low) and math.isnan(by["m4"].low)
    assert (by["m1"].elo + by["m2"].elo) / 2 == pytest.approx(1500.0)


def test_one_well_measured_system_alone_gets_no_interval(store: Store) -> None:
    verdicts = [Verdict(i, "m1", "m2" if i % 2 else "m3", "g1", "a", 2) for i in range(8)]
    seed_verdicts(store, verdicts)
    board = build_leaderboard(load_comparisons(store), rounds=100)
    by = {s.system: s for s in board.standings}
    assert by["m1"].conversations == 8 and by["m2"].conversations == 4
    assert all(math.isnan(s.low) for s in board.standings)
    assert by["m1"].preliminary[0] == (
        "no interval: fewer than two systems have enough conversations to anchor the scale"
    )


def test_one_raters_verdicts_make_no_clear_pair(store: Store) -> None:
    # a single person preferred m1 on 20 conversations: intervals apart, but one rater's taste
    verdicts = [Verdict(i, "m1", "m2", "r1", "a" if i % 5 else "b", 1) for i in range(20)]
    seed_verdicts(store, verdicts, sources={"r1": "human"})
    board = build_leaderboard(load_comparisons(store, source="human"), rounds=200)
    m1, m2 = board.standings
    assert m1.low > m2.high  # the intervals lie apart...
    assert [d.clear for d in board.differences] == [False]  # ...yet the pair is not clear
    assert m1.preliminary == (
        "20 comparisons (fewer than 50)",
        "every verdict comes from one rater",
    )
    assert (m1.rank, m2.rank) == (1, 2)


def test_a_second_rater_makes_the_pair_clear(store: Store) -> None:
    verdicts = [Verdict(i, "m1", "m2", f"r{i % 2}", "a" if i % 5 else "b", 1) for i in range(60)]
    seed_verdicts(store, verdicts, sources={"r0": "human", "r1": "human"})
    board = build_leaderboard(load_comparisons(store, source="human"), rounds=200)
    assert [d.clear for d in board.differences] == [True]
    assert all(not s.preliminary for s in board.standings)
    assert [s.judges for s in board.standings] == [2, 2]


def test_thresholds_come_from_the_rule(store: Store) -> None:
    seed_verdicts(store, _established(range(12)))
    loose = EvidenceRule(conversations=5, comparisons=10)
    strict = EvidenceRule(conversations=20, comparisons=10)
    comparisons = load_comparisons(store)
    assert not build_leaderboard(comparisons, rounds=50, rule=loose).preliminary
    held = build_leaderboard(comparisons, rounds=50, rule=strict).preliminary
    assert [s.preliminary for s in held] == [("12 conversations (fewer than 20)",)] * 3
    boards = build_boards(comparisons, rounds=50, rule=strict)
    assert boards[0].leaderboard.rule == strict


@pytest.mark.parametrize("late", [INTERVAL_CONVERSATIONS - 1, INTERVAL_CONVERSATIONS])
def test_an_interval_from_five_conversations_on(store: Store, late: int) -> None:
    verdicts = _established(range(12))
    verdicts += [Verdict(i, "new", "m2", "g1", "a" if i % 2 else "b", 2) for i in range(late)]
    seed_verdicts(store, verdicts)
    new = next(
        s for s in build_leaderboard(load_comparisons(store), rounds=100).standings
        if s.system == "new"
    )  # fmt: skip
    assert new.conversations == late
    assert new.ranked == (late >= 5) and math.isnan(new.low) == (late < 5)
