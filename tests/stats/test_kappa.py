"""Cohen's κ against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from heart.stats import cohen_kappa


@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    first = rng.random(60) < 0.3
    second = np.where(rng.random(60) < 0.7, first, rng.random(60) < 0.5)
    assert cohen_kappa(first, second) == pytest.approx(cohen_kappa_score(first, second))
    labels_a, labels_b = rng.integers(0, 4, 40), rng.integers(0, 4, 40)
    assert cohen_kappa(labels_a, labels_b) == pytest.approx(cohen_kappa_score(labels_a, labels_b))


def test_kappa_by_hand_and_its_undefined_cases() -> None:
    # 2 of 3 alike; chance: never mentioned by the first rater, once by the second
    assert cohen_kappa([False, False, False], [True, False, False]) == pytest.approx(0.0)
    assert cohen_kappa([True, False], [True, False]) == 1.0
    assert math.isnan(cohen_kappa([True, True], [True, True]))  # chance predicts all of it
    assert math.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError, match="same units"):
        cohen_kappa([True], [True, False])
