"""Differences in usage rates between two groups, by hand and against a plain bootstrap loop;
p-values adjusted as statsmodels' Benjamini–Hochberg does."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from heart.stats import conversation_draws, rate_differences_by_conversation


def test_point_rates_are_pooled_over_conversations() -> None:
    uses_a = np.array([[2, 0], [1, 1]], dtype=float)  # a: 3 replies, then 1
    replies_a = np.array([3, 1], dtype=float)
    uses_b = np.array([[0, 1], [0, 0]], dtype=float)  # b: 1 reply, then 1
    replies_b = np.array([1, 1], dtype=float)
    first, second = rate_differences_by_conversation(uses_a, replies_a, uses_b, replies_b,
                                                     rounds=50)  # fmt: skip
    assert (first.rate_a, first.rate_b, first.difference) == (0.75, 0.0, 0.75)
    assert (second.rate_a, second.rate_b, second.difference) == (0.25, 0.5, -0.25)
    assert (first.index, second.index) == (0, 1)


def test_bootstrap_matches_a_plain_loop_and_bh_matches_statsmodels() -> None:
    rng = np.random.default_rng(4)
    c, s = 12, 15
    replies_a = rng.integers(0, 4, c).astype(float)
    replies_b = rng.integers(1, 3, c).astype(float)
    uses_a = np.floor(rng.random((c, s)) * (replies_a[:, None] + 1))
    uses_b = np.floor(rng.random((c, s)) * (replies_b[:, None] + 1) * 0.5)
    rounds, seed = 200, 7
    result = rate_differences_by_conversation(
        uses_a, replies_a, uses_b, replies_b, rounds=rounds, seed=seed, level=0.9
    )
    draws = conversation_draws(c, rounds=rounds, seed=seed)
    d = np.array([(k @ uses_a) / (k @ replies_a) - (k @ uses_b) / (k @ replies_b) for k in draws])
    p = []
    for j, r in enumerate(result):
        assert (r.low, r.high) == pytest.approx(tuple(np.percentile(d[:, j], [5, 95])), abs=1e-12)
        expected = min(1.0, 2 * min((d[:, j] <= 0).mean(), (d[:, j] >= 0).mean()))
        assert r.p_value == pytest.approx(expected, abs=1e-12)
        p.append(r.p_value)
    rejected, adjusted, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    assert [r.p_adjusted for r in result] == pytest.approx(list(adjusted), abs=1e-12)
    assert [r.significant for r in result] == [bool(x) and a < 0.05 for x, a in
                                               zip(rejected, adjusted, strict=True)]  # fmt: skip


def test_a_strategy_neither_group_uses_has_p_one() -> None:
    zeros = np.zeros((3, 2))
    uses_a = np.array([[1, 0], [1, 0], [1, 0]], dtype=float)
    (used, unused) = rate_differences_by_conversation(uses_a, np.ones(3), zeros, np.ones(3),
                                                      rounds=100)  # fmt: skip
    assert unused.difference == 0.0 and unused.p_value == 1.0 and not unused.significant
    assert used.difference == 1.0 and used.p_value == 0.0 and used.significant
    assert (used.low, used.high) == (1.0, 1.0)


def test_uses_beyond_replies_are_refused() -> None:
    with pytest.raises(ValueError, match="uses <= replies"):
        rate_differences_by_conversation(np.array([[2.0]]), np.array([1.0]), np.array([[0.0]]),
                                         np.array([1.0]))  # fmt: skip
