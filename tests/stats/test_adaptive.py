"""The adaptive design's selection rule: which pairs a round asks for."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from heart.stats import (
    SEPARATION_RIDGE,
    Candidate,
    Comparison,
    choose_pairs,
    choose_pairs_from_arrays,
    order_doubt,
    rank_covariance,
)


def verdicts(a: int, b: int, a_wins: int, total: int, item: str = "i0") -> list[Comparison]:
    return [Comparison(item, a, b, 1.0 if n < a_wins else 0.0, "j") for n in range(total)]


def every_pair(systems: int, items: int) -> list[Candidate]:
    return [
        Candidate(f"i{i}", a, b)
        for i in range(items)
        for a in range(systems)
        for b in range(a + 1, systems)
    ]


def test_covariance_of_two_even_systems_is_the_inverse_information_by_hand() -> None:
    # θ = 0, p = 1/2: information [[n/4 + r, −n/4], [−n/4, n/4 + r]], so
    # var(θ0 − θ1) = 2/(n/2 + r) and var(θ0) = (n/4 + r)/((n/4 + r)² − (n/4)²).
    theta, cov = rank_covariance(2, verdicts(0, 1, 10, 20))
    r = SEPARATION_RIDGE
    assert theta == pytest.approx([0.0, 0.0], abs=1e-9)
    assert cov[0, 0] + cov[1, 1] - 2 * cov[0, 1] == pytest.approx(2 / (10 + r))
    assert cov[0, 0] == pytest.approx((5 + r) / ((5 + r) ** 2 - 25))
    doubt = order_doubt(theta, cov)
    assert doubt[0, 1] == pytest.approx(0.5) and doubt[0, 0] == 0.0


def test_known_strengths_replace_the_fit_in_the_covariance() -> None:
    # θ = (ln 3, 0): p = 3/4, so 20 verdicts give information 20·3/16 = 3.75 on θ0 − θ1 and
    # var(θ0 − θ1) = 2/(2·3.75 + r), whatever the verdicts said (here an even split)
    known = np.array([np.log(3.0), 0.0])
    theta, cov = rank_covariance(2, verdicts(0, 1, 10, 20), known)
    assert theta == pytest.approx(known)
    r = SEPARATION_RIDGE
    assert cov[0, 0] + cov[1, 1] - 2 * cov[0, 1] == pytest.approx(2 / (7.5 + r))
    # told that 0 is far ahead, the rule spends nothing more on (0, 1) and (0, 2)
    so_far = verdicts(0, 1, 10, 20) + verdicts(0, 2, 10, 20) + verdicts(1, 2, 10, 20)
    candidates = every_pair(3, 10)
    told = np.array([5.0, 0.0, 0.0])
    chosen = choose_pairs(3, so_far, candidates, 4, seed=1, explore=0.0, strengths=told)
    assert {(candidates[n].a, candidates[n].b) for n in chosen} == {(1, 2)}


def test_a_clearly_separated_pair_gets_no_more_pairs_while_an_uncertain_neighbour_does() -> None:
    # system 0 beat 1 and 2 in 39 of 40; 1 and 2 split 20 verdicts evenly
    so_far = verdicts(0, 1, 39, 40) + verdicts(0, 2, 39, 40) + verdicts(1, 2, 10, 20)
    theta, cov = rank_covariance(3, so_far)
    doubt = order_doubt(theta, cov)
    assert doubt[0, 1] < 1e-6 and doubt[0, 2] < 1e-6
    assert doubt[1, 2] == pytest.approx(0.5)
    candidates = every_pair(3, 10)
    chosen = choose_pairs(3, so_far, candidates, 6, seed=1, explore=0.0)
    assert {(candidates[n].a, candidates[n].b) for n in chosen} == {(1, 2)}


def test_the_warm_up_compares_every_pair_of_systems_and_spreads_items() -> None:
    candidates = every_pair(4, 3)
    chosen = choose_pairs(4, [], candidates, 6, seed=0, floor=1)
    assert Counter((candidates[n].a, candidates[n].b) for n in chosen) == {
        (a, b): 1 for a in range(4) for b in range(a + 1, 4)
    }
    assert Counter(candidates[n].item for n in chosen) == {"i0": 2, "i1": 2, "i2": 2}


def test_pairs_of_one_system_pair_go_to_the_least_used_items() -> None:
    # item i0 already holds the 1–2 pair, so the next three go to the other three items
    so_far = verdicts(0, 1, 39, 40, "i0") + verdicts(1, 2, 5, 10, "i0")
    candidates = [Candidate(f"i{i}", 1, 2) for i in range(1, 4)] + [
        Candidate(f"i{i}", 0, 2) for i in range(4)
    ]
    chosen = choose_pairs(3, so_far, candidates, 3, seed=0, floor=0, explore=0.0)
    assert sorted(candidates[n].item for n in chosen) == ["i1", "i2", "i3"]


def test_same_seed_and_verdicts_give_the_same_pairs_whatever_the_candidates_order() -> None:
    rng = np.random.default_rng(5)
    so_far = [
        Comparison(f"i{i}", a, b, float(rng.random() < 0.5), "j")
        for i in range(4)
        for a in range(5)
        for b in range(a + 1, 5)
    ]
    candidates = every_pair(5, 12)[40:]
    shuffled = [candidates[n] for n in rng.permutation(len(candidates))]
    first = [candidates[n] for n in choose_pairs(5, so_far, candidates, 15, seed=3)]
    again = [candidates[n] for n in choose_pairs(5, so_far, candidates, 15, seed=3)]
    reordered = [shuffled[n] for n in choose_pairs(5, so_far, shuffled, 15, seed=3)]
    assert first == again == reordered
    warm_ups = {tuple(choose_pairs(5, [], every_pair(5, 4), 10, seed=s)) for s in range(5)}
    assert len(warm_ups) > 1  # the seed breaks the warm-up's ties


def test_explore_keeps_a_share_for_pairs_whose_order_is_clear() -> None:
    # 0 clearly above 1 and 2: 40 + 40 + 20 pairs judged, each on its own item; with 10 more
    # and explore 0.9 each pair of systems needs 0.9 * 110 / 3 = 33: only 1–2 falls short
    so_far = [
        Comparison(f"i{n}", a, b, float(n < wins), "j")
        for a, b, wins, total in ((0, 1, 39, 40), (0, 2, 39, 40), (1, 2, 10, 20))
        for n in range(total)
    ]
    candidates = [Candidate(f"i{n}", a, b) for n in range(40, 80) for a, b in ((0, 1), (0, 2))]
    candidates += [Candidate(f"i{n}", 1, 2) for n in range(20, 80)]

    def systems_of(explore: float) -> Counter[tuple[int, int]]:
        chosen = choose_pairs(3, so_far, candidates, 10, seed=0, explore=explore)
        return Counter((candidates[n].a, candidates[n].b) for n in chosen)

    assert systems_of(0.9) == {(1, 2): 10}
    # with 60 pairs of 1–2, each needs 0.9 * 150 / 3 = 45: the clear pairs get 5 each, which
    # the rule alone (explore 0) would never give them
    served = so_far + [Comparison(f"i{n}", 1, 2, float(n % 2), "j") for n in range(20, 60)]
    chosen = choose_pairs(3, served, candidates, 10, seed=0, explore=0.9)
    assert Counter((candidates[n].a, candidates[n].b) for n in chosen) == {(0, 1): 5, (0, 2): 5}
    chosen = choose_pairs(3, served, candidates, 10, seed=0, explore=0.0)
    assert {(candidates[n].a, candidates[n].b) for n in chosen} == {(1, 2)}


def test_a_round_stops_when_the_candidates_run_out() -> None:
    candidates = every_pair(3, 1)
    assert sorted(choose_pairs(3, [], candidates, 10, seed=0)) == [0, 1, 2]
    assert sorted(choose_pairs(3, [], candidates, 10**12, seed=0)) == [0, 1, 2]
    assert choose_pairs(3, [], [], 10, seed=0) == []
    with pytest.raises(ValueError, match="size"):
        choose_pairs(3, [], candidates, -1, seed=0)


def test_bad_pairs_are_refused_with_the_fix() -> None:
    wins, rows = np.zeros((3, 3)), np.array([[0, 0, 1]])
    with pytest.raises(ValueError, match=r"wins must be a square K×K matrix, got shape \(3, 2\)"):
        choose_pairs_from_arrays(np.zeros((3, 2)), rows, rows, 1, seed=0)
    with pytest.raises(ValueError, match=r"pairs must be integer rows \(item, a, b\)"):
        choose_pairs_from_arrays(wins, rows, np.array([[0, 1]]), 1, seed=0)
    with pytest.raises(ValueError, match=r"the candidates' system indices must lie in \[0, 2\]"):
        choose_pairs_from_arrays(wins, rows, np.array([[0, 1, 3]]), 1, seed=0)
    with pytest.raises(ValueError, match="comparison 0: system 2 is compared with itself"):
        choose_pairs_from_arrays(wins, np.array([[0, 2, 2]]), rows, 1, seed=0)
    with pytest.raises(ValueError, match=r"the comparisons' system indices must lie in \[0, 2\]"):
        choose_pairs(3, verdicts(0, 5, 1, 1), every_pair(3, 1), 1, seed=0)
