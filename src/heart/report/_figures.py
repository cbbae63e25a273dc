"""The core of the report's figures: its colour scales, and a matplotlib figure (no display
needed) as PNG bytes. Each section draws its own figures."""

from __future__ import annotations

import io
import math

import numpy as np
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

BANDS = LinearSegmentedColormap.from_list("heart", ["#c8553d", "#f6f1e7", "#3c7a5a"])
USAGE = LinearSegmentedColormap.from_list("usage", ["#fbe3ea", "#d9ece8", "#1f7a7a", "#0b4949"])
"""Strategy usage, as in the paper's heatmap: light pink for rarely used, dark teal for often."""
DPI = 110


def _hex_colours(colours: LinearSegmentedColormap) -> list[str]:
    """The colour map's table of colours as hex strings, in its order."""
    rgba = colours(np.arange(colours.N))
    return [f"#{int(255 * r):02x}{int(255 * g):02x}{int(255 * b):02x}" for r, g, b, _ in rgba]


BAND_HEX, USAGE_HEX = _hex_colours(BANDS), _hex_colours(USAGE)


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


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()
