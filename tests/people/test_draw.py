"""Pairs drawn for people (people.judge_pairs): each once, with its chance kept, uniform or by
the LLM judges' doubt (people.assist: active); the boards weigh people's verdicts by one over
their pair's chance."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select

from heart.analyses import drawn_weight, load_comparisons
from heart.config import PairsSpec, PeopleSpec
from heart.judging import build_pairs
from heart.people import JUDGE, sync_tasks
from heart.people._draw import drawn
from heart.stats import active_chances, judge_doubt
from heart.store import JudgeRow, JudgmentRow, PairRow, Store, TaskRow

from ..rows import seed_study


def _chances(store: Store) -> dict[str, float | None]:
    with store.session() as s:
        return dict(s.execute(select(PairRow.id, PairRow.people_chance)).all())


def _seated(store: Store) -> set[str]:
    with store.session() as s:
        return set(s.scalars(select(TaskRow.target).where(TaskRow.kind == JUDGE)))


def test_uniform_draws_seat_the_drawn_pairs_once(store: Store) -> None:
    seed_study(store, ["m1", "m2", "m3", "m4"], items=10, completions=True)  # 60 pairs
    build_pairs(store, PairsSpec(), seed=0)
    spec = PeopleSpec(check_every=0, raters_per_pair=2, judge_pairs=15)
    sync_tasks(store, spec, seed=3)
    chances = _chances(store)
    assert set(chances.values()) == {0.25}  # 15 of 60
    chosen = {pid for pid, chance in chances.items() if drawn(3, pid, 0.25)}
    assert _seated(store) == chosen and 5 <= len(chosen) <= 25
    with store.session() as s:
        seats = s.scalars(select(TaskRow).where(TaskRow.kind == JUDGE)).all()
    assert len(seats) == 2 * len(chosen)
    assert sync_tasks(store, spec, seed=3).added[JUDGE] == 0  # drawn once: a restart adds none
    assert _chances(store) == chances


def test_every_pair_without_judge_pairs(store: Store) -> None:
    seed_study(store, ["m1", "m2", "m3"], items=2, completions=True)
    build_pairs(store, PairsSpec(), seed=0)
    sync_tasks(store, PeopleSpec(check_every=0, raters_per_pair=1), seed=3)
    assert set(_chances(store).values()) == {None} and len(_seated(store)) == 6


def test_active_draws_favour_the_pairs_the_judges_doubt(store: Store) -> None:
    seed_study(store, ["m1", "m2", "m3"], items=8, completions=True, judges=["g"])  # 24 pairs
    build_pairs(store, PairsSpec(), seed=0)
    with store.session() as s:
        pairs = sorted(s.scalars(select(PairRow.id)))
        for n, pid in enumerate(pairs):  # the first half: sure verdicts; the rest: unsure
            s.add(JudgmentRow(id=f"j{n}", pair_id=pid, judge="g", order="ab", status="ok",
                              winner="a", strength=5 if n < 12 else 1, axes={}, rationale="",
                              created_at="x"))  # fmt: skip
    spec = PeopleSpec(check_every=0, raters_per_pair=1, judge_pairs=6, assist="active",
                      assist_floor=0.2)  # fmt: skip
    sync_tasks(store, spec, seed=1)
    chances = _chances(store)
    sure, unsure = [chances[p] for p in pairs[:12]], [chances[p] for p in pairs[12:]]
    assert len(set(sure)) == 1 and len(set(unsure)) == 1
    assert unsure[0] > 2 * sure[0] and sure[0] >= 0.2 * 6 / 24
    assert sum(chances.values()) == pytest.approx(6.0)
    doubt = judge_doubt(np.ones(24), np.array([5.0] * 12 + [1.0] * 12), np.arange(24), 24)
    np.testing.assert_allclose([chances[p] for p in pairs], active_chances(doubt, 6.0, 0.2))
    with store.session() as s:
        assert s.get(JudgeRow, "g") is not None


def test_people_are_weighed_by_one_over_their_pairs_chance(store: Store) -> None:
    seed_study(store, ["m1", "m2"], items=2, completions=True)
    build_pairs(store, PairsSpec(), seed=0)
    with store.session() as s:
        s.merge(JudgeRow(name="h", source="human", family="human", spec={}))
        pairs = sorted(s.scalars(select(PairRow)), key=lambda p: p.id)
        for pair, chance in zip(pairs, (0.2, 0.8), strict=True):
            pair.people_chance = chance
        s.flush()
        for n, pair in enumerate(pairs):
            s.add(JudgmentRow(id=f"h{n}", pair_id=pair.id, judge="h", order="ab", status="ok",
                              winner="a", strength=2, axes={}, rationale="",
                              created_at="x"))  # fmt: skip
    comparisons = load_comparisons(store, source="all")
    assert comparisons.pair_chance is not None
    by_pair = dict(zip(comparisons.pair_chance.tolist(), comparisons.strength.tolist(),
                       strict=True))  # fmt: skip
    # 2/0.2 = 10 and 2/0.8 = 2.5, scaled to the total of 4: 3.2 and 0.8
    assert by_pair == pytest.approx({0.2: 3.2, 0.8: 0.8})


def test_uniform_chances_change_no_weight() -> None:
    strength = np.array([1.0, 3.0, 2.0, 5.0])
    people = np.array([True, True, True, False])
    same = drawn_weight(strength, np.full(4, 0.3), people)
    np.testing.assert_allclose(same, strength)
    np.testing.assert_allclose(drawn_weight(strength, np.full(4, np.nan), people), strength)


def test_active_chances_keep_the_budget_the_floor_and_one() -> None:
    doubt = np.array([0.0, 0.0, 0.1, 0.5, 0.5, 0.5])
    chances = active_chances(doubt, 3.0, 0.5)
    assert chances.sum() == pytest.approx(3.0)
    assert chances.min() >= 0.5 * 3.0 / 6 - 1e-12 and chances.max() <= 1.0
    assert np.all(np.diff(chances) >= -1e-12)  # more doubt, more chance
    np.testing.assert_allclose(active_chances(doubt, 10.0, 0.5), np.ones(6))
    # a sure strength-5 verdict keeps a chance of being wrong: its doubt is not zero
    assert judge_doubt(np.ones(1), np.array([5.0]), np.zeros(1, dtype=np.int64), 1)[0] > 0.2
