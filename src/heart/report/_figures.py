"""The core of the report's figures: an empty matplotlib figure (no display needed), the colour
maps of the tables' scales (heart.report._colours), and a figure as PNG bytes. Each section
draws its own figures; matplotlib is imported only when the first one is drawn."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from heart.report._colours import BAND_STOPS, USAGE_STOPS

if TYPE_CHECKING:
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.figure import Figure

DPI = 110


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of this size in inches."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _colour_map(name: str, stops: Sequence[str]) -> LinearSegmentedColormap:
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list(name, list(stops))


def bands() -> LinearSegmentedColormap:
    """The red–cream–green band of the tables, as a colour map."""
    return _colour_map("heart", BAND_STOPS)


def usage() -> LinearSegmentedColormap:
    """The strategy-usage scale of the tables, as a colour map."""
    return _colour_map("usage", USAGE_STOPS)


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def draw_figures(figures: Mapping[str, Callable[[], bytes]]) -> dict[str, bytes]:
    """Every figure's PNG bytes, by key."""
    return {key: draw() for key, draw in figures.items()}
