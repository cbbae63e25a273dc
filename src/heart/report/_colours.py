"""The colours of the report's tables and heatmaps: a red–cream–green band for values between a
low and a high, and the strategy-usage scale. Each scale is the table of colours that
matplotlib's ``LinearSegmentedColormap.from_list`` makes of the same stops, computed here the
way matplotlib computes it, so that a terminal table gets its colours without importing
matplotlib (which is slow to import, and draws only the report's figures)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

BAND_STOPS = ("#c8553d", "#f6f1e7", "#3c7a5a")
USAGE_STOPS = ("#fbe3ea", "#d9ece8", "#1f7a7a", "#0b4949")
"""Strategy usage, as in the paper's heatmap: light pink for rarely used, dark teal for often."""
STEPS = 256
"""Colours in a scale's table (matplotlib's default)."""


def colour_table(stops: Sequence[str]) -> list[str]:
    """The scale's colours as hex strings, low to high: the stops evenly spaced from 0 to 1 and
    each channel linear between them, sampled at ``STEPS`` even points."""
    channels = np.asarray([[int(stop[i : i + 2], 16) / 255 for i in (1, 3, 5)] for stop in stops]).T
    x = np.linspace(0, 1, len(stops)) * (STEPS - 1)
    at = (STEPS - 1) * np.linspace(0, 1, STEPS)
    ind = np.searchsorted(x, at)[1:-1]
    distance = (at[1:-1] - x[ind - 1]) / (x[ind] - x[ind - 1])
    r, g, b = (
        np.clip(np.concatenate([[y[0]], distance * (y[ind] - y[ind - 1]) + y[ind - 1], [y[-1]]]),
                0.0, 1.0)
        for y in channels
    )  # fmt: skip
    return [
        f"#{int(255 * ri):02x}{int(255 * gi):02x}{int(255 * bi):02x}"
        for ri, gi, bi in zip(r, g, b, strict=True)
    ]


BAND_HEX, USAGE_HEX = colour_table(BAND_STOPS), colour_table(USAGE_STOPS)


def _pick(table: list[str], x: float) -> str:
    """The colour of ``x`` (0 to 1) from a colour map's table, as the map itself picks it."""
    return table[min(int(x * len(table)), len(table) - 1)]


def band_colour(value: float, low: float, high: float) -> str:
    """The hex colour of ``value`` on the report's red–cream–green band between low and high."""
    if math.isnan(value) or high <= low:
        return "#ffffff"
    return _pick(BAND_HEX, min(max((value - low) / (high - low), 0.0), 1.0))


def usage_colour(rate: float) -> str:
    """The background of a usage rate (0 to 1) in a table: the heatmap's scale, kept to its
    lighter half so that dark text stays readable."""
    if math.isnan(rate):
        return "#ffffff"
    return _pick(USAGE_HEX, 0.5 * min(max(rate, 0.0), 1.0))
