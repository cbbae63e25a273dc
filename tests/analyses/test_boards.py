"""Boards by judge source and subset, the pooled and the best human, and the board's numbers
against fits computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t
from sqlalchemy import select

from heart.analyses import (
    BEST_HUMAN,
    best_human_comparisons,
    build_boards,
    build_leaderboard,
    load_comparisons,
)
from heart.stats import bootstrap_by_conversation, fit_bradley_terry
from heart.store import JudgmentRow, Store, left_out_judgments

from ..rows import Verdict, seed_verdicts

HUMAN = ["human/x", "human/y", "human/z"]


def _verdicts() -> list[Verdict]:
    """Six items (4 and 5 adversarial). The LLM judge g prefers m1 to every reply; on item i
    the human writer HUMAN[i % 3] beats m2 and wins every verdict of the raters r1, r2, while
    the other two writers lose all of theirs."""
    out = []
    for i in range(6):
        best = HUMAN[i % 3]
        for h in HUMAN:
            out.append(Verdict(i, "m1", h, "g", "a", 4))
            out.append(Verdict(i, h, "m2", "g", "a" if h == best else "b", 2))
            out.append(Verdict(i, h, "m2", "r1", "a" if h == best else "b", 2))
            out.append(Verdict(i, "m1", h, "r2", "b" if h == best else "a", 1))
        out.append(Verdict(i, "m1", "m2", "g", "a" if i % 2 else "b", 3))
        out.append(Verdict(i, "m1", "m2", "r1", "tie", 1))
    return out


@pytest.fixture
def seeded(store: Store) -> Store:
    seed_verdicts(
        store,
        _verdicts(),
        kinds={"human": "human"},
        sources={"r1": "human", "r2": "human"},
        adversarial=[4, 5],
    )
    return store


def test_boards_cover_every_source_and_subset(seeded: Store) -> None:
    boards = build_boards(load_comparisons(seeded, source="all"), rounds=50)
    keys = [b.key for b in boards]
    assert keys == [
        "llm-all",
        "llm-adversarial",
        "llm-regular",
        "human-all",
        "human-adversarial",
        "human-regular",
        "all-all",
        "all-adversarial",
        "all-regular",
    ]  # fmt: skip (no judge-assisted board: people judged every pair the judge did)
    main = boards[0]
    assert main.title == "LLM judges, all items"
    assert main.leaderboard.comparisons == 6 * (3 + 3 + 1)
    human_board = next(b for b in boards if b.key == "human-regular")
    assert human_board.leaderboard.comparisons == 4 * (3 + 3 + 1)
    assert {s.system for s in human_board.leaderboard.standings} == {"m1", "m2", "human"}


def test_main_board_equals_a_fit_by_hand(seeded: Store) -> None:
    comparisons = load_comparisons(seeded)  # LLM judges only
    board = build_leaderboard(comparisons, rounds=200, seed=3)
    names = comparisons.systems
    assert names == ["human", "m1", "m2"]
    wins = np.zeros((3, 3))
    for v in _verdicts():
        if v.judge != "g":
            continue
        a, b = names.index(v.a.split("/")[0]), names.index(v.b.split("/")[0])
        wins[(a, b) if v.winner == "a" else (b, a)] += v.strength
    fit = fit_bradley_terry(wins)
    elo = {s.system: s.elo for s in board.standings}
    np.testing.assert_allclose([elo[n] for n in names], fit.elo, atol=1e-9)
    per_conv = np.zeros((6, 3, 3))
    for v in _verdicts():
        if v.judge == "g":
            a, b = names.index(v.a.split("/")[0]), names.index(v.b.split("/")[0])
            per_conv[(v.item, *((a, b) if v.winner == "a" else (b, a)))] += v.strength
    boot = bootstrap_by_conversation(per_conv, rounds=200, seed=3)
    # each system met the others in all 6 conversations: its percentile interval is widened
    # by sqrt(6/5)·t(5)/z on each side of its Elo
    stretch = np.sqrt(6 / 5) * student_t.ppf(0.975, 5) / norm.ppf(0.975)
    low = {s.system: s.low for s in board.standings}
    np.testing.assert_allclose(
        [low[n] for n in names], fit.elo - stretch * (fit.elo - boot.low), atol=1e-9
    )
    assert all(s.conversations == 6 and s.opponents == 2 for s in board.standings)
    # m1 and m2 overlap and share rank 1; both lie wholly above the human reply, ranked 3rd
    assert [(s.system, s.rank) for s in board.standings] == [("m1", 1), ("m2", 1), ("human", 3)]
    clear = {(board.systems[d.i], board.systems[d.j]) for d in board.clear_pairs}
    assert clear == {("m1", "human"), ("m2", "human")}
    assert board.standings[0].preliminary == (
        "6 conversations (fewer than 10)",
        "24 comparisons (fewer than 50)",
    )
    m1 = next(s for s in board.standings if s.system == "m1")
    assert m1.win_rate == pytest.approx((18 + 3) / 24)  # beat every human reply, 3 of 6 m2
    assert [s.system for s in board.standings] == ["m1", "m2", "human"]
    assert len(board.differences) == 3
    assert {a.name for a in board.ablations} == {"unweighted", "ties allowed", "online Elo"}
    h2h = board.head_to_head
    assert h2h[0, 1] == pytest.approx(0.5) and h2h[0, 2] == pytest.approx(1.0)
    assert h2h[1, 2] == pytest.approx(2 / 3) and h2h[2, 0] == pytest.approx(0.0)


def test_best_human_keeps_each_contexts_winning_reply(seeded: Store) -> None:
    comparisons = load_comparisons(seeded, source="all")
    best = best_human_comparisons(comparisons)
    assert best is not None
    assert best.systems == [BEST_HUMAN, "m1", "m2"]
    kept = {best.completions[c] for c in np.concatenate([best.completion_a, best.completion_b])}
    expected = {f"cp-{i}-{HUMAN[i % 3]}" for i in range(6)} | {
        f"cp-{i}-{m}" for i in range(6) for m in ("m1", "m2")
    }
    assert kept == expected
    # per item: the best reply's 4 verdicts, plus the 2 between the models
    assert len(best) == 6 * (4 + 2)


def test_board_shows_best_human_apart_from_the_ranking(seeded: Store) -> None:
    boards = build_boards(load_comparisons(seeded, source="all"), rounds=50)
    human_all = next(b for b in boards if b.key == "human-all")
    assert human_all.best_human is not None
    assert human_all.best_human.system == BEST_HUMAN
    assert BEST_HUMAN not in human_all.leaderboard.systems
    # the chosen replies won every human verdict they got
    assert human_all.best_human.win_rate == pytest.approx(1.0)


def test_select_all_rows_changes_nothing(seeded: Store) -> None:
    comparisons = load_comparisons(seeded, source="all")
    same = comparisons.select(np.ones(len(comparisons), dtype=bool))
    assert same.systems == comparisons.systems and same.judges == comparisons.judges
    np.testing.assert_array_equal(same.a, comparisons.a)
    np.testing.assert_array_equal(same.pair, comparisons.pair)
    human = comparisons.by_source("human")
    assert human.judges == ["r1", "r2"] and human.judge_sources == ["human", "human"]
    assert set(comparisons.by_subset("adversarial").items) == {"i4", "i5"}


def test_each_row_names_its_judgment_and_keeps_it_when_selected(seeded: Store) -> None:
    comparisons = load_comparisons(seeded, source="all")
    with seeded.session() as s:
        stored = dict(s.execute(select(JudgmentRow.id, JudgmentRow.judge)).all())
    assert comparisons.judgments == sorted(stored)  # every verdict counts here, by id
    names = [comparisons.judges[j] for j in comparisons.judge.tolist()]
    assert names == [stored[j] for j in comparisons.judgments]
    human = comparisons.by_source("human")
    assert human.judgments == [j for j in comparisons.judgments if stored[j] in ("r1", "r2")]


def test_verdicts_on_a_pair_of_one_system_are_left_out_with_their_reason(seeded: Store) -> None:
    clean = load_comparisons(seeded, source="all")
    one_system = [
        Verdict(0, "m1", "m1", "g", "a", 5),  # a reply against itself
        Verdict(1, "human/x", "human/y", "r1", "b", 2),  # two people of the pooled system
    ]
    seed_verdicts(seeded, one_system, kinds={"human": "human"}, sources={"r1": "human"})
    loaded = load_comparisons(seeded, source="all")
    assert len(loaded) == len(clean)
    assert left_out_judgments(seeded) == {"on a pair of two replies of one system": 2}
    np.testing.assert_array_equal(loaded.a, clean.a)
    boards = build_boards(loaded, rounds=20)
    assert repr(boards) == repr(build_boards(clean, rounds=20))


def test_comparisons_read_by_column_match_each_verdict_read_by_hand(store: Store) -> None:
    """Each row of the comparisons says what its stored verdict says, read one by one: the
    systems in the pair's terms, the outcome, the order shown, every axis (given or not) and its
    strength; a verdict with axes and one without side by side."""
    axes = {"H": {"winner": "b", "strength": 3}, "E": {"winner": "tie", "strength": 0}}
    verdicts = [
        Verdict(0, "m1", "m2", "g", "a", 2, axes=axes),
        Verdict(0, "m1", "m2", "r1", "b", 1, order="ba"),
        Verdict(1, "m2", "m3", "g", "tie", 4),
    ]
    seed_verdicts(store, verdicts, sources={"r1": "human"})
    c = load_comparisons(store, source="all")
    codes = {"a": 0, "b": 1, "tie": 2}
    by_judgment = dict(zip(c.judgments, range(len(c)), strict=True))
    with store.session() as s:
        stored = {j.id: j for j in s.scalars(select(JudgmentRow))}
    assert set(by_judgment) == set(stored)
    for jid, row in by_judgment.items():
        j = stored[jid]
        assert c.judges[c.judge[row]] == j.judge
        assert c.outcome[row] == codes[j.winner] and c.strength[row] == j.strength
        assert c.order_ab[row] == (j.order == "ab")
        for k, axis in enumerate("HEART"):
            given = j.axes.get(axis)
            assert c.axis_given[row, k] == (given is not None)
            assert c.axis_outcome[row, k] == (codes[given["winner"]] if given else 2)
            assert c.axis_strength[row, k] == (given["strength"] if given else 0)
    assert c.axis_outcome.shape == c.axis_strength.shape == (3, 5)
    assert c.axis_outcome.flags.c_contiguous
    assert [c.systems[i] for i in c.a] == ["m1", "m1", "m2"]
    assert [c.systems[i] for i in c.b] == ["m2", "m2", "m3"]
    assert c.pair.tolist() == [0, 0, 1] and c.conversations == ["c0", "c1"]
