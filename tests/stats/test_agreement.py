"""Fleiss' kappa, Krippendorff's alpha and the category table, against reference packages."""

from __future__ import annotations

import math
from typing import Literal

import krippendorff
import numpy as np
import numpy.typing as npt
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from heart.stats import conversation_draws
from heart.stats._agreement import (
    bootstrap_krippendorff_alpha_by_conversation,
    category_table,
    fleiss_kappa,
    krippendorff_alpha,
)

FloatArray = npt.NDArray[np.float64]
Level = Literal["nominal", "ordinal"]


def random_reliability(
    raters: int, units: int, categories: int, missing: float, seed: int
) -> FloatArray:
    """(raters, units) codes 0..categories-1 with a share of NaNs, mildly agreeing per unit."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, categories, units)
    noise = rng.integers(0, categories, (raters, units))
    data = np.where(rng.random((raters, units)) < 0.6, truth, noise).astype(np.float64)
    data[rng.random((raters, units)) < missing] = np.nan
    return data


def recode(data: FloatArray, codes: list[float]) -> FloatArray:
    """Replace each code i by ``codes[i]``, keeping NaNs."""
    out = np.array(codes)[np.nan_to_num(data, nan=0).astype(int)]
    out[np.isnan(data)] = np.nan
    return out


@pytest.mark.parametrize("categories", [3, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleiss_kappa_matches_statsmodels_on_random_tables(categories: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, categories, (40, 1))
    labels = np.where(rng.random((40, 5)) < 0.5, truth, rng.integers(0, categories, (40, 5)))
    table, _ = aggregate_raters(labels, n_cat=categories)
    expected = sm_fleiss_kappa(table, method="fleiss")
    assert fleiss_kappa(table) == pytest.approx(expected, abs=1e-12)


def test_fleiss_kappa_matches_hand_computation() -> None:
    # 4 units, 3 raters, 2 categories.
    # Per-unit agreement P_i = (Σ_j n_ij² − 3) / (3·2): (9−3)/6 = 1, (4+1−3)/6 = 1/3, 1, 1/3,
    # so P̄ = 2/3. Category shares are 6/12 and 6/12, so P_e = 1/4 + 1/4 = 1/2.
    # kappa = (2/3 − 1/2) / (1 − 1/2) = 1/3.
    table = np.array([[3, 0], [2, 1], [0, 3], [1, 2]], dtype=np.float64)
    assert fleiss_kappa(table) == pytest.approx(1 / 3, abs=1e-15)


def test_fleiss_kappa_is_one_under_perfect_agreement_and_nan_with_a_single_category() -> None:
    assert fleiss_kappa(np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])) == pytest.approx(1.0)
    assert math.isnan(fleiss_kappa(np.array([[0.0, 3.0], [0.0, 3.0]])))


def test_category_table_equals_aggregate_raters_without_missing_labels() -> None:
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 4, (25, 6))
    expected, _ = aggregate_raters(labels, n_cat=4)
    np.testing.assert_array_equal(category_table(labels, 4), expected)


def test_category_table_skips_negative_codes_as_missing() -> None:
    labels = np.array([[0, 2, -1], [1, 1, 1], [-1, -1, 2]])
    np.testing.assert_array_equal(
        category_table(labels, 3), [[1.0, 0.0, 1.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0]]
    )


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
@pytest.mark.parametrize(
    ("raters", "units", "categories", "missing", "seed"),
    [(2, 30, 3, 0.1, 0), (3, 200, 5, 0.3, 1), (7, 50, 4, 0.5, 2), (4, 1000, 2, 0.2, 3)],
)
def test_krippendorff_alpha_matches_krippendorff_package(
    level: Level, raters: int, units: int, categories: int, missing: float, seed: int
) -> None:
    data = random_reliability(raters, units, categories, missing, seed)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-9)


def test_krippendorff_alpha_ordinal_matches_package_on_uneven_codes() -> None:
    data = recode(random_reliability(5, 300, 4, 0.25, 11), [-2.0, 0.5, 3.0, 10.0])
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_krippendorff_alpha_is_one_under_perfect_agreement(level: Level) -> None:
    row = np.array([0.0, 1.0, 2.0, 2.0, np.nan, 1.0])
    data = np.vstack([row, row, row])
    data[1, 0] = np.nan
    assert krippendorff_alpha(data, level) == 1.0


def test_krippendorff_alpha_nominal_matches_hand_computation() -> None:
    # Units (columns): (0,0,0), (0,1), (1,1), (1,1), (1) — the last has one value and is dropped.
    # Coincidences: unit 1 adds 6 ordered 0–0 pairs at weight 1/(3−1), so o00 = 3; unit 2 adds
    # o01 = o10 = 1; units 3–4 add o11 = 2 each. o = [[3, 1], [1, 4]], n0 = 4, n1 = 5, n = 9.
    # alpha = 1 − (n − 1)·(o01 + o10) / (2·n0·n1) = 1 − 8·2/40 = 0.6.
    nan = np.nan
    data = np.array(
        [
            [0.0, 0.0, 1.0, 1.0, 1.0],
            [0.0, 1.0, 1.0, 1.0, nan],
            [0.0, nan, nan, nan, nan],
        ]
    )
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.6, abs=1e-15)


def test_krippendorff_alpha_reproduces_krippendorffs_published_example() -> None:
    # The 4-observer, 12-unit example in Krippendorff (2011), "Computing Krippendorff's
    # alpha-reliability": alpha = 0.743 nominal and 0.815 ordinal.
    nan = np.nan
    data = np.array(
        [
            [1.0, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1.0, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1.0, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(0.815, abs=5e-4)


def test_krippendorff_alpha_ignores_code_spacing_for_ordinal_and_code_names_for_nominal() -> None:
    data = random_reliability(4, 120, 4, 0.2, 5)
    ordinal = krippendorff_alpha(data, "ordinal")
    stretched = recode(data, [1.0, 5.0, 6.0, 40.0])
    assert krippendorff_alpha(stretched, "ordinal") == pytest.approx(ordinal, abs=1e-12)
    nominal = krippendorff_alpha(data, "nominal")
    permuted = recode(data, [2.0, 0.0, 3.0, 1.0])
    assert krippendorff_alpha(permuted, "nominal") == pytest.approx(nominal, abs=1e-12)


def test_krippendorff_alpha_is_nan_when_pairable_values_never_vary() -> None:
    data = np.array([[1.0, 1.0, 2.0], [1.0, 1.0, np.nan]])
    assert math.isnan(krippendorff_alpha(data, "nominal"))
    assert math.isnan(krippendorff_alpha(data, "ordinal"))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (np.array([3.0, 0.0]), "shape"),
        (np.array([[3.0, -1.0], [2.0, 0.0]]), "non-negative"),
        (np.array([[2.5, 0.5], [1.0, 2.0]]), "whole-number"),
        (np.array([[3.0, 0.0], [2.0, 1.0], [1.0, 1.0]]), "unit 2 has 2 ratings but unit 0 has 3"),
        (np.array([[1.0, 0.0], [0.0, 1.0]]), "at least 2 ratings"),
    ],
)
def test_fleiss_kappa_rejects_bad_tables(table: FloatArray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fleiss_kappa(table)


def test_category_table_rejects_bad_labels() -> None:
    with pytest.raises(ValueError, match=r"shape \(units, raters\)"):
        category_table(np.array([0, 1, 2]), 3)
    with pytest.raises(ValueError, match="integer category codes"):
        category_table(np.array([[0.0, 1.0]]), 3)
    with pytest.raises(ValueError, match=r"unit 1, rater 0: label 3 is outside \[0, 2\]"):
        category_table(np.array([[0, 1], [3, 2]]), 3)
    with pytest.raises(ValueError, match="n_categories must be a positive integer"):
        category_table(np.array([[0, 1]]), 0)


def test_krippendorff_alpha_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"shape \(raters, units\)"):
        krippendorff_alpha(np.array([0.0, 1.0]), "nominal")
    with pytest.raises(ValueError, match="finite codes or NaN"):
        krippendorff_alpha(np.array([[0.0, np.inf], [0.0, 1.0]]), "nominal")
    with pytest.raises(ValueError, match="'nominal' or 'ordinal'"):
        krippendorff_alpha(np.array([[0.0, 1.0], [0.0, 1.0]]), "interval")  # type: ignore[arg-type]


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_alpha_interval_matches_the_package_on_each_resampled_round(level: Level) -> None:
    # 40 units in 9 conversations; each round repeats a unit as often as its conversation is
    # drawn, and the package's alpha on those columns gives the round's value
    data = random_reliability(4, 40, 3, 0.3, 21)
    conversation = np.arange(40) % 9
    draws = conversation_draws(9, rounds=60, seed=4)
    rounds = [
        krippendorff.alpha(
            reliability_data=np.repeat(data, draw[conversation].astype(int), axis=1),
            level_of_measurement=level,
        )
        for draw in draws
    ]
    low, high = bootstrap_krippendorff_alpha_by_conversation(
        data, conversation, level, rounds=60, seed=4, confidence=0.9
    )
    assert (low, high) == pytest.approx(tuple(np.percentile(rounds, [5.0, 95.0])), abs=1e-9)
    assert low <= krippendorff_alpha(data, level) <= high


def test_alpha_interval_is_nan_without_a_pairable_unit_and_refuses_a_bad_mapping() -> None:
    one_each = np.array([[0.0, np.nan], [np.nan, 1.0]])
    low, high = bootstrap_krippendorff_alpha_by_conversation(one_each, np.array([0, 1]), "nominal")
    assert math.isnan(low) and math.isnan(high)
    with pytest.raises(ValueError, match="each of the 2 units a number from 0, got 3 numbers"):
        bootstrap_krippendorff_alpha_by_conversation(one_each, np.array([0, 1, 2]), "nominal")
