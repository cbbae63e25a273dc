"""Table colours: the report picks them from the colour maps' own tables, and must pick the colour
matplotlib would give the same value."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.colors import LinearSegmentedColormap, Normalize

from heart.report._colours import (
    BAND_HEX,
    BAND_STOPS,
    USAGE_HEX,
    USAGE_STOPS,
    band_colour,
    usage_colour,
)

BANDS = LinearSegmentedColormap.from_list("heart", list(BAND_STOPS))
USAGE = LinearSegmentedColormap.from_list("usage", list(USAGE_STOPS))


def _hex(rgba: tuple[float, float, float, float]) -> str:
    r, g, b, _ = rgba
    return f"#{int(255 * r):02x}{int(255 * g):02x}{int(255 * b):02x}"


def test_the_colour_tables_are_matplotlibs() -> None:
    for table, colours in ((BAND_HEX, BANDS), (USAGE_HEX, USAGE)):
        assert table == [_hex(rgba) for rgba in colours(np.arange(colours.N))]


def test_band_and_usage_colours_match_matplotlib() -> None:
    values = [*np.random.default_rng(1).uniform(-0.5, 1.5, 2000), 0.0, 1.0, 0.5, 255 / 256]
    for v in values:
        assert band_colour(v, 0.0, 1.0) == _hex(BANDS(Normalize(0.0, 1.0, clip=True)(v)))
        elo = 1300 + 400 * v
        assert band_colour(elo, 1300, 1700) == _hex(BANDS(Normalize(1300, 1700, clip=True)(elo)))
        assert usage_colour(v) == _hex(USAGE(0.5 * min(max(v, 0.0), 1.0)))


def test_no_value_or_no_range_is_white() -> None:
    assert band_colour(math.nan, 0, 1) == band_colour(0.5, 1, 1) == "#ffffff"
    assert usage_colour(math.nan) == "#ffffff"
