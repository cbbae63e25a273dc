"""A share with its interval: the one result type of agreement rates and audit shares."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Share:
    """``hits`` of ``n`` (verdicts, pairs or votes), with the interval ``low``–``high`` of the
    share."""

    hits: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    def text(self) -> str:
        """Like ``79% [71–86%] of 120``."""
        if not self.n:
            return "–"
        return f"{100 * self.value:.0f}% [{100 * self.low:.0f}–{100 * self.high:.0f}%] of {self.n}"
