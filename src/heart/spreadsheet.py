"""Text written to a CSV cell that people may open in a spreadsheet."""

from __future__ import annotations

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""How a cell starts when a spreadsheet would run it as a formula."""


def inert(text: str) -> str:
    """``text`` as a spreadsheet should show it: a leading apostrophe when it would start a
    formula, unchanged otherwise."""
    return "'" + text if text.startswith(FORMULA_START) else text
