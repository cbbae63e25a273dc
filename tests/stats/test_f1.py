"""F1 per label and macro F1 against scikit-learn, with cells left out, and the conversation
bootstrap against a plain loop that copies each drawn conversation's replies."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from heart.stats import conversation_draws, f1_by_conversation, f1_scores


def _random(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    truth = rng.random((n, k)) < 0.3
    agrees = rng.random((n, k)) < 0.8
    return truth, np.where(agrees, truth, ~truth)


def test_f1_per_label_and_macro_match_scikit_learn() -> None:
    rng = np.random.default_rng(1)
    for n in (3, 10, 60):
        truth, predicted = _random(rng, n, 15)
        truth[:, 14] = predicted[:, 14] = False  # a label nobody marks: no F1, not in the macro
        f1, macro = f1_scores(truth, predicted)
        expected = f1_score(truth, predicted, average=None, zero_division=np.nan)
        np.testing.assert_allclose(f1, expected, rtol=0, atol=1e-12)
        assert np.isnan(f1[14])
        assert macro == pytest.approx(
            f1_score(truth, predicted, average="macro", zero_division=np.nan), abs=1e-12
        )


def test_hand_counts() -> None:
    truth = np.array([[1, 0], [1, 1], [0, 0], [1, 0]], dtype=bool)
    predicted = np.array([[1, 1], [0, 1], [0, 0], [1, 0]], dtype=bool)
    f1, macro = f1_scores(truth, predicted)
    # label 0: tp 2, fn 1 -> 4/5; label 1: tp 1, fp 1 -> 2/3
    assert f1.tolist() == pytest.approx([0.8, 2 / 3])
    assert macro == pytest.approx((0.8 + 2 / 3) / 2)


def test_cells_left_out_take_no_part() -> None:
    rng = np.random.default_rng(2)
    truth, predicted = _random(rng, 40, 6)
    counted = rng.random((40, 6)) < 0.7
    f1, macro = f1_scores(truth, predicted, counted)
    for s in range(6):
        rows = counted[:, s]
        expected = f1_score(truth[rows, s], predicted[rows, s], zero_division=np.nan)
        assert f1[s] == pytest.approx(expected, abs=1e-12)
    assert macro == pytest.approx(np.nanmean(f1), abs=1e-12)


def test_conversation_bootstrap_matches_copying_the_drawn_conversations() -> None:
    rng = np.random.default_rng(3)
    truth, predicted = _random(rng, 30, 4)
    conversation = [f"c{n % 7}" for n in range(30)]
    rounds, seed = 40, 11
    result = f1_by_conversation(truth, predicted, conversation, rounds=rounds, seed=seed)
    f1, macro = f1_scores(truth, predicted)
    np.testing.assert_allclose(result.f1, f1, atol=1e-12)
    assert result.macro == pytest.approx(macro, abs=1e-12)
    assert result.replies == 30 and result.rounds == rounds
    assert result.tp.tolist() == (truth & predicted).sum(axis=0).tolist()
    names = sorted(set(conversation))
    draws = conversation_draws(len(names), rounds=rounds, seed=seed)
    per_round, macros = [], []
    for counts in draws:
        rows = [n for n, c in enumerate(conversation) for _ in range(int(counts[names.index(c)]))]
        per_round.append(f1_score(truth[rows], predicted[rows], average=None, zero_division=np.nan))
        macros.append(f1_score(truth[rows], predicted[rows], average="macro",
                               zero_division=np.nan))  # fmt: skip
    stacked = np.array(per_round)
    for s in range(4):
        column = stacked[:, s][~np.isnan(stacked[:, s])]
        assert (result.low[s], result.high[s]) == pytest.approx(
            tuple(np.percentile(column, [2.5, 97.5])), abs=1e-12
        )
    assert (result.macro_low, result.macro_high) == pytest.approx(
        tuple(np.percentile(macros, [2.5, 97.5])), abs=1e-12
    )


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="one shape"):
        f1_scores(np.zeros((2, 3), dtype=bool), np.zeros((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="one conversation per reply"):
        f1_by_conversation(np.zeros((2, 3), dtype=bool), np.zeros((2, 3), dtype=bool), ["c"])
