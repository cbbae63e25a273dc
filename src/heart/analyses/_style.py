"""Style control: each reply's style counted (words, questions, markdown, stock warmth) and the
board refitted with those counts as covariates, so that what a system wins by style alone is
credited to the style and its Elo says what is left.

Counting rules, kept simple so a reader can check them by eye:
- length: words, split on whitespace (as the audit's longer-reply share counts them);
- questions: runs of '?' ("really??" asks once), whether or not a sentence ends there;
- markdown: headings (a line opening with 1–6 '#' and a space), list items (a line opening with
  '-', '*', '+' or a number and '.' or ')', then a space), emphasis spans (**x**, __x__, *x*,
  _x_), code spans and fences (`x`, ```) and links ([x](y));
- warmth: how many distinct word pairs of the reply also occur in the generic-warmth phrases
  (by default the replies of the study's control systems), words compared casefolded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import numpy.typing as npt
from sqlalchemy import select

from heart.analyses._comparisons import Comparisons
from heart.stats import (
    StyleBootstrapMethod,
    bootstrap_style_controlled,
    fit_style_design,
    style_design,
)
from heart.store import CompletionRow, Store

STYLE_FEATURES = ("length", "questions", "markdown", "warmth")
DEFAULT_WARMTH = ("I'm so sorry you're going through this, that sounds really hard.",)
"""The stock warmth measured when the study names no phrases and has no control system."""

_QUESTION = re.compile(r"\?+")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+\S", re.MULTILINE)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S", re.MULTILINE)
_EMPHASIS = re.compile(
    r"\*\*[^*\n]+\*\*|__[^_\n]+__|(?<![*\w])\*[^*\s][^*\n]*\*|(?<!\w)_[^_\s][^_\n]*_(?!\w)"
)
_CODE = re.compile(r"```|`[^`\n]+`")
_LINK = re.compile(r"\[[^[\]\n]+\]\([^()\s]+\)")
_WORD = re.compile(r"[\w']+")


def count_questions(text: str) -> int:
    """Questions asked: runs of '?' in the reply."""
    return len(_QUESTION.findall(text))


def count_markdown(text: str) -> int:
    """Markdown elements: headings, list items, emphasis spans, code spans or fences, links."""
    without_lists = _LIST_ITEM.sub("", text)  # a list bullet '*' is not emphasis
    return sum(
        len(pattern.findall(source))
        for pattern, source in (
            (_HEADING, text),
            (_LIST_ITEM, text),
            (_EMPHASIS, without_lists),
            (_CODE, text),
            (_LINK, text),
        )
    )


def _word_pairs(text: str) -> set[tuple[str, str]]:
    words = [w.casefold() for w in _WORD.findall(text)]
    return set(pairwise(words))


def warmth_pairs(phrases: Iterable[str]) -> frozenset[tuple[str, str]]:
    """The word pairs of the generic-warmth phrases, against which replies are matched."""
    pairs: set[tuple[str, str]] = set()
    for phrase in phrases:
        pairs |= _word_pairs(phrase)
    return frozenset(pairs)


def count_warmth(text: str, warmth: frozenset[tuple[str, str]]) -> int:
    """Distinct word pairs the reply shares with the generic-warmth phrases."""
    return len(_word_pairs(text) & warmth)


def reply_style(text: str, warmth: frozenset[tuple[str, str]]) -> tuple[int, int, int, int]:
    """One reply's counts of ``STYLE_FEATURES``."""
    return (
        len(text.split()),
        count_questions(text),
        count_markdown(text),
        count_warmth(text, warmth),
    )


def load_reply_texts(store: Store, completions: Iterable[str]) -> dict[str, str]:
    """The text of each of ``completions`` (ids), read from the store."""
    wanted = set(completions)
    with store.session() as session:
        rows = session.execute(select(CompletionRow.id, CompletionRow.text)).all()
    return {cid: text for cid, text in rows if cid in wanted}


def warmth_phrases(configured: Sequence[str], control_replies: Sequence[str]) -> tuple[str, ...]:
    """The phrases stock warmth is measured against: those the study names, else its control
    systems' replies, else ``DEFAULT_WARMTH``."""
    return tuple(configured) or tuple(control_replies) or DEFAULT_WARMTH


@dataclass(frozen=True)
class StyleInputs:
    """What a board needs to control for style: each completion's text by id, the
    generic-warmth phrases (``warmth_phrases``) and the bootstrap's method
    (``bootstrap_style_controlled``). Each reply's style is counted once for every board."""

    texts: Mapping[str, str]
    warmth: tuple[str, ...]
    method: StyleBootstrapMethod = "auto"
    _counted: dict[str, tuple[int, int, int, int]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def counts(self, completions: Sequence[str]) -> npt.NDArray[np.float64]:
        """(completions, features): the ``STYLE_FEATURES`` counts of each reply."""
        pairs = None
        for cid in completions:
            if cid not in self._counted:
                pairs = warmth_pairs(self.warmth) if pairs is None else pairs
                self._counted[cid] = reply_style(self.texts[cid], pairs)
        return np.asarray([self._counted[cid] for cid in completions], dtype=np.float64).reshape(
            -1, len(STYLE_FEATURES)
        )


@dataclass(frozen=True)
class StyleCoefficient:
    """What one style feature buys: the log-odds of winning per standard deviation of the
    normalised difference between the two replies, with its conversation-bootstrap interval."""

    feature: str
    coefficient: float
    low: float
    high: float


@dataclass(frozen=True)
class StyleControl:
    """The board refitted with style covariates: Elo with its bootstrap interval per system (on
    the plain board's scale), the coefficients, and the features dropped with the reason.
    ``separated``: the fit needed the ridge guard; ``separated_rounds``: the bootstrap rounds
    that did; ``preliminary``: why the fit as a whole is not firm (empty when it is; the board
    sets it); ``method``: how the rounds were fitted (``refit`` or ``one-step``) and
    ``stepped_rounds`` how many one step settled."""

    systems: list[str]
    elo: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    coefficients: list[StyleCoefficient]
    dropped: tuple[tuple[str, str], ...]
    separated: bool
    rounds: int
    separated_rounds: int = 0
    preliminary: tuple[str, ...] = ()
    method: str = "refit"
    stepped_rounds: int = 0


def build_style_control(
    comparisons: Comparisons,
    style: StyleInputs,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    anchor: npt.NDArray[np.bool_] | None = None,
) -> StyleControl:
    """Style-controlled Elo and coefficients for ``comparisons``, the replies' texts, warmth
    phrases and bootstrap method taken from ``style``. The bootstrap resamples conversations
    with the same draws (``seed``) as the plain board's interval; ``anchor`` centres Elo as the
    plain board does."""
    counts = style.counts(comparisons.completions)
    design = style_design(
        comparisons.a,
        comparisons.b,
        comparisons.outcome,
        comparisons.strength,
        len(comparisons.systems),
        counts[comparisons.completion_a],
        counts[comparisons.completion_b],
        STYLE_FEATURES,
        comparisons.conversation,
    )
    fit = fit_style_design(design, anchor=anchor)
    boot = bootstrap_style_controlled(
        design, conversations=len(comparisons.conversations), rounds=rounds, seed=seed,
        level=level, anchor=anchor, method=style.method, full=fit,
    )  # fmt: skip
    return StyleControl(
        systems=list(comparisons.systems),
        elo=fit.elo,
        low=boot.low,
        high=boot.high,
        coefficients=[
            StyleCoefficient(name, float(value), float(lo), float(hi))
            for name, value, lo, hi in zip(
                fit.features,
                fit.coefficients,
                boot.coefficient_low,
                boot.coefficient_high,
                strict=True,
            )
        ],
        dropped=fit.dropped,
        separated=fit.separated,
        rounds=rounds,
        separated_rounds=boot.separated_rounds,
        method=boot.method,
        stepped_rounds=boot.stepped_rounds,
    )
