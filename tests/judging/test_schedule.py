"""The ensemble schedule on its own: exclusion, coverage and even loads under uneven eligibility."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from heart.judging import EnsembleJudge, PairFamilies, schedule_judges

JUDGES = [EnsembleJudge("ja", "openai"), EnsembleJudge("jb", "anthropic"),
          EnsembleJudge("jc", "google")]  # fmt: skip
FAMILIES = ["openai", "anthropic", "google", "meta", "human", "dataset"]


def _pairs(n: int, seed: int = 0) -> list[PairFamilies]:
    rng = random.Random(seed)
    combos = list(itertools.combinations(FAMILIES, 2))
    return [PairFamilies(f"p{i}", rng.choice(combos)) for i in range(n)]


@pytest.mark.parametrize("per_pair", [1, 2])
def test_schedule_excludes_own_family_covers_and_balances(per_pair: int) -> None:
    pairs = _pairs(3000)
    schedule = schedule_judges(pairs, JUDGES, per_pair=per_pair, own_family="exclude", seed=1)
    family = {j.name: j.family for j in JUDGES}
    for p in pairs:
        names = schedule.judges.get(p.pair_id, [])
        assert not {family[j] for j in names} & set(p.families)
        eligible = [j for j in JUDGES if j.family not in p.families]
        assert len(names) == min(per_pair, len(eligible)) == len(set(names))
    loads = schedule.loads()
    assert (max(loads.values()) - min(loads.values())) / max(loads.values()) <= 0.05, loads


def test_unset_number_means_every_eligible_judge() -> None:
    pairs = _pairs(200)
    schedule = schedule_judges(pairs, JUDGES, per_pair=None, own_family="exclude", seed=0)
    for p in pairs:
        assert schedule.judges.get(p.pair_id, []) == [
            j.name for j in JUDGES if j.family not in p.families
        ]


def test_pairs_nobody_may_judge_and_short_pairs_are_reported() -> None:
    pairs = [PairFamilies("x", ("openai", "anthropic")), PairFamilies("y", ("openai", "meta"))]
    two = [JUDGES[0], JUDGES[1]]
    schedule = schedule_judges(pairs, two, per_pair=2, own_family="exclude", seed=0)
    assert schedule.unjudgeable == ["x"]
    assert schedule.short == ["y"]
    assert schedule.judges == {"y": ["jb"]}
    allowed = schedule_judges(pairs, two, per_pair=2, own_family="allow", seed=0)
    assert allowed.judges == {"x": ["ja", "jb"], "y": ["ja", "jb"]}


def test_judges_that_already_rated_a_pair_keep_it() -> None:
    pairs = _pairs(300, seed=4)
    first = schedule_judges(pairs, JUDGES, per_pair=1, own_family="exclude", seed=0)
    kept = {pid: set(names) for pid, names in first.judges.items()}
    more = [*pairs, PairFamilies("new", ("meta", "human"))]
    second = schedule_judges(more, JUDGES, per_pair=1, own_family="exclude", seed=0, kept=kept)
    assert {pid: second.judges[pid] for pid in first.judges} == first.judges
    assert len(second.judges["new"]) == 1
    assert Counter(len(v) for v in second.judges.values()) == {1: len(second.judges)}
