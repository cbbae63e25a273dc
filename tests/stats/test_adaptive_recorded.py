"""The adaptive design's choices on seeded cases, recorded from the rule's plain numpy
implementation before its pick loop was compiled: the same verdicts, candidates, settings and
seed still give the same indices in the same order, through the compiled loop (numba) and
through the numpy loop an install without numba uses."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from heart.stats import (
    Candidate,
    Comparison,
    _adaptive,
    _adaptive_plain,
    choose_pairs,
    choose_pairs_from_arrays,
)


@pytest.fixture(params=["compiled", "numpy"])
def loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once with numba, once as if numba were not installed."""
    if request.param == "numpy":
        monkeypatch.setitem(sys.modules, "heart.stats._adaptive_compiled", None)
    name: str = request.param
    return name


def test_the_loop_is_numpys_without_numba(loop: str) -> None:
    assert (_adaptive.pick_loop() is _adaptive_plain.pick_loop) == (loop == "numpy")


def seeded_case(
    seed: int, systems: int | None, items: int | None, size: int | None
) -> tuple[int, list[Comparison], list[Candidate], int, dict[str, Any]]:
    """Random verdicts (ties, repeats, items without candidates), candidates in a random order
    and either order of their systems (one a system against itself) and random settings."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 8)) if systems is None else systems
    n_items = int(rng.integers(2, 9)) if items is None else items
    strength = rng.normal(0, 0.8, k)
    comparisons = []
    for _ in range(int(rng.integers(0, 60))):
        a, b = rng.choice(k, 2, replace=False)
        item = f"c{rng.integers(0, n_items + 2)}"
        p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
        score = float(rng.choice([0.0, 0.5, 1.0], p=[0.9 * (1 - p), 0.1, 0.9 * p]))
        for j in range(int(rng.integers(1, 3))):
            comparisons.append(Comparison(item, int(a), int(b), score, f"j{j}"))
    candidates = []
    for i in range(n_items):
        for a in range(k):
            for b in range(a + 1, k):
                if rng.random() < 0.7:
                    x, y = (a, b) if rng.random() < 0.5 else (b, a)
                    candidates.append(Candidate(f"c{i}", x, y))
    candidates.append(Candidate("c0", 1, 1))
    candidates = [candidates[n] for n in rng.permutation(len(candidates))]
    settings: dict[str, Any] = {
        "seed": int(rng.integers(0, 1000)),
        "floor": int(rng.integers(0, 3)),
        "explore": float(rng.choice([0.0, 0.3, 0.8])),
        "verdicts_per_pair": int(rng.integers(1, 4)),
    }
    if rng.random() < 0.3:
        settings["strengths"] = rng.normal(0, 0.8, k)
    size = int(rng.integers(1, 45)) if size is None else size
    return k, comparisons, candidates, size, settings


# fmt: off
RECORDED = [  # (case seed, systems, items, size, the indices chosen)
    (0, None, None, None, [
        53, 69, 60, 78, 5, 15, 73, 9, 25, 65, 51, 66, 26, 18, 41, 23, 72, 64, 3, 47, 28, 70, 30, 37,
        32, 31, 8, 29, 67, 81, 17, 19, 61, 58, 35, 27, 0, 6, 80, 14, 49, 44, 71, 54
    ]),
    (2, None, None, None, [
        12, 5, 29, 9, 27, 35, 34, 25, 21, 20, 23, 24, 2, 8, 4, 15, 11, 10, 32, 36, 17, 0, 37, 38, 1,
        39, 3, 30, 14, 18, 13, 6, 16, 26, 31, 22, 40, 7, 19, 33
    ]),
    (3, None, None, None, [
        9, 13, 11, 29, 28, 2, 16, 27, 1, 7, 0, 18, 23, 21, 3, 31, 10, 22, 24, 30, 12, 14, 15, 6, 5,
        4, 20, 19, 17, 26, 25
    ]),
    (5, None, None, None, [
        46, 51, 67, 3, 5, 68, 44, 13, 12, 65, 53, 54, 28, 75, 6, 45, 76, 48, 69, 72, 10, 27, 32, 43,
        50, 55, 18, 49, 20, 78, 70, 62, 61, 73, 14, 77
    ]),
    (10, None, None, None, [
        38, 40, 28, 9, 44, 63, 75, 73, 8, 33, 17, 46, 21, 76, 13, 66, 5, 42, 54, 48, 79, 29, 69, 56,
        22, 15, 39, 58, 20, 61, 70, 68
    ]),
    (18, None, None, None, [
        5, 7, 19, 44, 52, 32, 13, 49, 11, 29, 40, 42, 35, 22, 50, 31, 17, 9, 30, 46, 4, 37, 8, 2, 3,
        12, 25, 23, 34, 33
    ]),
    (19, None, None, None, [
        12, 15, 8, 0, 5, 21, 25, 13, 27, 11, 10, 16, 29, 6, 18, 19, 14, 4, 23, 24, 9, 17, 32, 30,
        28, 20
    ]),
    (33, None, None, None, [
        41, 12, 32, 38, 65, 27, 9, 11, 29, 45, 37, 50, 48, 20, 34, 40, 49, 17, 46, 5, 23, 19, 22,
        26, 62, 15, 39, 36, 14, 66, 57, 61, 59, 21
    ]),
    (100, 12, 6, 70, [
        123, 75, 241, 36, 58, 194, 227, 81, 59, 134, 208, 63, 147, 20, 95, 77, 163, 41, 249, 107,
        124, 54, 184, 44, 220, 200, 175, 196, 23, 29, 230, 222, 171, 173, 207, 192, 176, 110, 38,
        174, 213, 166, 253, 238, 61, 66, 14, 89, 27, 142, 48, 148, 113, 216, 24, 179, 132, 114, 150,
        60, 92, 126, 93, 143, 33, 125, 181, 111, 232, 252
    ]),
    (101, 10, 4, 60, [
        0, 64, 126, 117, 1, 97, 25, 63, 89, 83, 4, 38, 8, 40, 127, 102, 93, 24, 73, 92, 21, 66, 71,
        75, 128, 36, 67, 107, 104, 37, 122, 65, 7, 48, 20, 23, 9, 68, 96, 86, 81, 31, 19, 45, 43,
        109, 77, 41, 55, 46, 100, 90, 111, 33, 80, 110, 84, 103, 44, 18
    ]),
]
# fmt: on


@pytest.mark.parametrize(("seed", "systems", "items", "size", "chosen"), RECORDED)
def test_the_rule_chooses_the_recorded_pairs(
    seed: int, systems: int | None, items: int | None, size: int | None, chosen: list[int],
    loop: str,
) -> None:  # fmt: skip
    k, comparisons, candidates, n, settings = seeded_case(seed, systems, items, size)
    assert choose_pairs(k, comparisons, candidates, n, **settings) == chosen


@pytest.mark.parametrize(("seed", "systems", "items", "size", "chosen"), RECORDED)
def test_the_array_entry_point_chooses_the_recorded_pairs(
    seed: int, systems: int | None, items: int | None, size: int | None, chosen: list[int],
    loop: str,
) -> None:  # fmt: skip
    k, comparisons, candidates, n, settings = seeded_case(seed, systems, items, size)
    names = sorted({c.item for c in candidates} | {v.item for v in comparisons})
    code = {name: number for number, name in enumerate(names)}  # in the order of the names
    wins = np.zeros((k, k))
    for v in comparisons:
        wins[v.a, v.b] += v.score
        wins[v.b, v.a] += 1.0 - v.score
    judged = np.array([(code[v.item], v.a, v.b) for v in comparisons]).reshape(-1, 3)
    offered = np.array([(code[c.item], c.a, c.b) for c in candidates])
    assert choose_pairs_from_arrays(wins, judged, offered, n, **settings).tolist() == chosen


@pytest.mark.parametrize(
    ("seed", "systems", "items", "size"),
    [(seed, None, None, None) for seed in range(200, 240)] + [(300, 22, 6, 300), (301, 15, 9, 250)],
)
def test_both_loops_choose_alike_on_random_cases(
    seed: int, systems: int | None, items: int | None, size: int | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Beyond the recorded cases: the numpy loop's picks are the compiled loop's."""
    k, comparisons, candidates, n, settings = seeded_case(seed, systems, items, size)
    compiled = choose_pairs(k, comparisons, candidates, n, **settings)
    with monkeypatch.context() as without_numba:
        without_numba.setitem(sys.modules, "heart.stats._adaptive_compiled", None)
        plain = choose_pairs(k, comparisons, candidates, n, **settings)
    assert plain == compiled
