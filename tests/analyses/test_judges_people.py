"""LLM judges against people per system: Elo refitted by hand on the item-pairs both judged,
τ against scipy, the evidence counted by hand; small studies, one rater, imports in both orders,
and the PandaLM test set (three people and two LLM judges on 999 pairs)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau
from sqlalchemy import delete

from heart.analyses import (
    TOGETHER,
    Comparisons,
    JudgeVsPeople,
    PlanTarget,
    Prices,
    build_assisted_board,
    build_board,
    judges_against_people,
    kendall_tau_rows,
    load_comparisons,
    plan_study,
)
from heart.analyses._pairing import assist_points
from heart.release import import_table
from heart.stats import fit_bradley_terry, power_tuned_lambda, win_matrix
from heart.store import CompletionRow, JudgmentRow, PairRow, Store, open_store

from ..pandalm import PEOPLE, SOURCES, pandalm_verdicts
from ..rows import Verdict, seed_verdicts

SYSTEMS = ["s1", "s2", "s3"]
PRICES = Prices(0.001, 30.0, False, 12.0, "£")
PAIRS = [("s1", "s2"), ("s2", "s3"), ("s3", "s1")]


def _study(items: int, people: list[str], judge_only: int = 0) -> list[Verdict]:
    """Per item, the three pairs: the judge ``g1`` favours s1 on every one, people split by a
    fixed pattern; ``judge_only`` more items that only the judge judged."""
    out = []
    for i in range(items + judge_only):
        for n, (a, b) in enumerate(PAIRS):
            out.append(Verdict(i, a, b, "g1", "a" if a == "s1" else ("b" if b == "s1" else "a"), 2))
            if i < items:
                for r, person in enumerate(people):
                    winner = "ab"[(i + n + r) % 2] if (i + r) % 5 else "tie"
                    out.append(Verdict(i, a, b, person, winner, 1 + (i + r) % 3))
    return out


def _seed(store: Store, verdicts: list[Verdict], people: list[str]) -> Comparisons:
    seed_verdicts(store, verdicts, sources={p: "human" for p in people})
    return load_comparisons(store, source="all")


def _hand_elo(comparisons: Comparisons, rows: np.ndarray) -> dict[str, float]:
    """Elo by hand: the rows' strength-weighted win matrix, ties half, mean 1500."""
    mine = comparisons.select(rows)
    winner, loser, tie = mine.winner_loser()
    fit = fit_bradley_terry(win_matrix(winner, loser, mine.strength, len(mine.systems), tie=tie))
    return dict(zip(mine.systems, fit.elo.tolist(), strict=True))


def test_each_side_is_fitted_as_a_board_on_the_item_pairs_both_judged(store: Store) -> None:
    people = ["h1", "h2", "h3"]
    comparisons = _seed(store, _study(8, people, judge_only=4), people)
    (found,) = judges_against_people(comparisons, rounds=200, seed=3)
    # items i8–i11 only the judge judged: not compared
    shared = np.isin(comparisons.items, [f"i{i}" for i in range(8)])[comparisons.item]
    human = np.isin(comparisons.judge, [comparisons.judges.index(p) for p in people])
    judge = _hand_elo(comparisons, shared & ~human)
    mine = _hand_elo(comparisons, shared & human)
    assert found.judge == "g1" and found.judges == ("g1",)
    assert (found.item_pairs, found.conversations) == (24, 8)
    assert (found.verdicts_judge, found.verdicts_people) == (24, 72)
    for s in found.systems:
        assert s.elo_judge == pytest.approx(judge[s.system], abs=1e-6)
        assert s.elo_people == pytest.approx(mine[s.system], abs=1e-6)
        assert s.gap == pytest.approx(judge[s.system] - mine[s.system], abs=1e-6)
        assert (s.verdicts_judge, s.verdicts_people, s.conversations) == (16, 48, 8)
        assert s.gap_low <= s.gap <= s.gap_high
    assert found.systems[0].system == "s1"  # the largest gap first
    names = list(judge)
    tau = kendalltau([judge[n] for n in names], [mine[n] for n in names]).statistic
    assert found.tau == pytest.approx(tau)
    assert found.tau_low <= found.tau_high
    assert found.apart == [s for s in found.systems if s.gap_low > 0 or s.gap_high < 0]


def test_the_judge_lifting_a_system_is_named_in_words(store: Store) -> None:
    people = ["h1", "h2"]
    comparisons = _seed(store, _study(12, people), people)
    (found,) = judges_against_people(comparisons, rounds=300, seed=1)
    s1 = next(s for s in found.systems if s.system == "s1")
    assert s1.apart and s1.gap > 0
    assert "g1 rates s1" in found.sentence() and "higher" in found.sentence()
    assert "than people do, beyond noise" in found.sentence()


def test_one_conversation_gives_gaps_without_intervals(store: Store) -> None:
    comparisons = _seed(store, _study(1, ["h1"]), ["h1"])
    (found,) = judges_against_people(comparisons, rounds=50)
    for s in found.systems:
        assert math.isnan(s.gap_low) and math.isnan(s.gap_high) and not s.apart
        assert s.preliminary[0].startswith("1 conversation: an interval needs 5")
        assert "every verdict comes from one rater" in s.preliminary
    assert math.isnan(found.tau_low)
    assert "no system's gap to people leaves out zero" in found.sentence()


def test_nothing_to_compare_without_an_overlap(store: Store) -> None:
    verdicts = [v for v in _study(6, ["h1"]) if v.judge == "g1"]
    verdicts += [Verdict(20, "s1", "s2", "h1", "a"), Verdict(21, "s2", "s3", "h1", "b")]
    comparisons = _seed(store, verdicts, ["h1"])
    assert judges_against_people(comparisons) == []
    assert build_assisted_board(comparisons, "all") is None


def test_kendall_tau_rows_is_scipys_tau_b() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, (30, 6)).astype(float), rng.normal(size=(30, 6))
    ours = kendall_tau_rows(x, y)
    for row in range(30):
        assert ours[row] == pytest.approx(kendalltau(x[row], y[row]).statistic)


def _write(path: Path, verdicts: list[Verdict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["item_id", "judge", "a_system", "b_system", "winner", "strength", "source"])
        for v in verdicts:
            out.writerow([f"i{v.item}", v.judge, v.a, v.b,
                          {"a": "a", "b": "b", "tie": "tie"}[v.winner], v.strength,
                          "human" if v.judge.startswith("h") else "llm"])  # fmt: skip
    return path


def _imported(tmp_path: Path, name: str, files: list[Path], verdicts: list[Verdict]) -> Store:
    store = open_store(f"sqlite:///{tmp_path / name}.db")
    seed_verdicts(store, verdicts, sources={"h1": "human", "h2": "human"})
    with store.session() as s:  # the items stay; replies and verdicts come by import
        for table in (JudgmentRow, PairRow, CompletionRow):
            s.execute(delete(table))
    replies = tmp_path / f"{name}-replies.csv"
    with replies.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["item_id", "system", "text"])
        out.writerows(
            sorted({(f"i{v.item}", x, f"reply {x}") for v in verdicts for x in (v.a, v.b)})
        )
    import_table(store, replies, "completions", seed=0)
    for path in files:
        import_table(store, path, "judgments", seed=0)
    return store


def _same(a: JudgeVsPeople, b: JudgeVsPeople) -> None:
    assert (a.judge, a.item_pairs, a.verdicts_judge, a.verdicts_people) == (
        b.judge, b.item_pairs, b.verdicts_judge, b.verdicts_people,
    )  # fmt: skip
    assert a.tau == pytest.approx(b.tau, nan_ok=True)
    for x, y in zip(a.systems, b.systems, strict=True):
        assert (x.system, x.verdicts_people) == (y.system, y.verdicts_people)
        assert (x.gap, x.gap_low, x.gap_high) == pytest.approx((y.gap, y.gap_low, y.gap_high))


def test_imports_in_either_order_give_the_same_gaps_board_and_plan(tmp_path: Path) -> None:
    people = ["h1", "h2"]
    verdicts = _study(7, people, judge_only=3)
    judged = _write(tmp_path / "judge.csv", [v for v in verdicts if v.judge == "g1"])
    rated = _write(tmp_path / "people.csv", [v for v in verdicts if v.judge != "g1"])
    found, plans, boards = [], [], []
    for name, files in (("judges-first", [judged, rated]), ("people-first", [rated, judged])):
        store = _imported(tmp_path, name, files, verdicts)
        comparisons = load_comparisons(store, source="all")
        found.append(judges_against_people(comparisons, rounds=200))
        assisted = build_assisted_board(comparisons, "all", rounds=200)
        plans.append(plan_study(comparisons, PlanTarget(half_width=60), PRICES, studies=50))
        boards.append(None if assisted is None else assisted.rows())
        store.close()
    (first,), (second,) = found
    _same(first, second)
    assert plans[0].to_json() == plans[1].to_json()
    assert boards[0] is not None and boards[0] == boards[1]


@pytest.fixture(scope="module")
def pandalm(tmp_path_factory: pytest.TempPathFactory) -> Comparisons:
    verdicts = pandalm_verdicts()
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('pandalm') / 'heart.db'}")
    seed_verdicts(store, verdicts, sources=SOURCES)
    comparisons = load_comparisons(store, source="all")
    store.close()
    return comparisons


def test_pandalm_judges_against_its_three_people(pandalm: Comparisons) -> None:
    found = judges_against_people(pandalm, rounds=300, seed=2)
    assert [f.judge for f in found] == ["gpt-3.5-turbo", "pandalm-7b", TOGETHER]
    people = np.isin(pandalm.judge, [pandalm.judges.index(p) for p in PEOPLE])
    for f in found:
        assert len(f.systems) == 5 and f.conversations == f.item_pairs
        judges = np.isin(pandalm.judge, [pandalm.judges.index(j) for j in f.judges])
        heard = np.zeros(int(pandalm.pair.max()) + 1, dtype=bool)
        heard[pandalm.pair[judges]] = True
        shared = heard[pandalm.pair]
        assert f.verdicts_people == int((people & shared).sum())
        judge, mine = _hand_elo(pandalm, judges & shared), _hand_elo(pandalm, people & shared)
        for s in f.systems:
            assert s.gap == pytest.approx(judge[s.system] - mine[s.system], abs=1e-6)
            assert s.gap_low < s.gap < s.gap_high and not s.preliminary
    gpt, panda, _ = found
    assert gpt.item_pairs == len({v.item for v in pandalm_verdicts() if v.judge == "gpt-3.5-turbo"})
    # GPT-3.5 parts from people on no model; PandaLM-7B rates llama-7b well below them
    assert gpt.apart == []
    assert [(s.system, s.gap < -40) for s in panda.apart] == [("llama-7b", True)]


def test_pandalm_judges_cannot_help_where_people_judged_every_pair(pandalm: Comparisons) -> None:
    # three people on every pair the judges judged: the judges' points only repeat theirs
    assert build_assisted_board(pandalm, "all", rounds=200, seed=2) is None
    assert power_tuned_lambda(*assist_points(pandalm).stacks) == 0.0


def test_pandalm_judges_sharpen_people_on_a_fifth_of_the_pairs(pandalm: Comparisons) -> None:
    items = np.asarray([int(i[1:]) for i in pandalm.items])[pandalm.item]
    people = np.isin(pandalm.judge, [pandalm.judges.index(p) for p in PEOPLE])
    study = pandalm.select(~people | (items % 5 == 0))
    board = build_assisted_board(study, "all", rounds=300, seed=2)
    assert board is not None and board.assistance is not None
    help_ = board.assistance
    assert help_.judges == ("gpt-3.5-turbo", "pandalm-7b")
    assert help_.labelled == 600 and help_.left_out == 0 and help_.unlabelled_pairs == 999
    assert 0.0 < help_.lam <= 1.0
    assert help_.width_ratio < 1.0 and help_.effective_verdicts > help_.labelled
    alone = build_board(study.by_source("human"), "human", "all", rounds=300, seed=2,
                        ablations=False, axis_intervals=False)  # fmt: skip
    assert {s.system for s in alone.leaderboard.standings} == {
        s.system for s in board.leaderboard.standings
    }
