"""Co-mention: how often two groups' rationales on the same pairs both mention or both omit a
theme, against the rate expected when each group's rationales are matched to random other pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from heart.stats._bootstrap import bootstrap_share_by_conversation
from heart.stats._kappa import cohen_kappa
from heart.stats._share import Share
from heart.stats._types import BoolArray, FloatArray, IntArray


@dataclass(frozen=True)
class CoMention:
    """Per theme (and pooled over every pair and theme, ``overall``): the share of pairs where
    the two groups both mention or both omit the theme, with a conversation-bootstrap interval;
    the rate expected by chance; Cohen's κ; and how often each group mentions the theme."""

    themes: list[Share]
    overall: Share
    chance: FloatArray  # per theme
    chance_overall: float
    kappa: FloatArray  # per theme
    kappa_overall: float  # over every (pair, theme) cell
    rate_first: FloatArray  # share of pairs where the first group mentions each theme
    rate_second: FloatArray
    chance_rounds: int


def _matched(mention: BoolArray, values: npt.ArrayLike, name: str) -> BoolArray:
    out = np.asarray(values, dtype=bool)
    if out.shape != mention.shape:
        raise ValueError(f"{name} must have the shape {mention.shape} of the first group's, "
                         f"got {out.shape}")  # fmt: skip
    return out


def chance_co_mention(
    first: npt.ArrayLike, second: npt.ArrayLike, conversation: npt.ArrayLike, *, rounds: int,
    seed: int,
) -> FloatArray:  # fmt: skip
    """Per theme, the share of pairs where both mention or both omit it when the second group's
    rationales of each pair are swapped for those of a pair drawn at random from another
    conversation (uniformly, seeded; ``rounds`` draws averaged). NaN when every pair shares one
    conversation."""
    a = np.asarray(first, dtype=bool)
    b = _matched(a, second, "second")
    conv = np.asarray(conversation).reshape(-1)
    if a.ndim != 2 or conv.size != a.shape[0]:
        raise ValueError("first and second must be (pairs, themes) with a conversation per pair")
    if np.unique(conv).size < 2:
        return np.full(a.shape[1] if a.ndim == 2 else 0, np.nan)
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds}")
    rng = np.random.Generator(np.random.PCG64(seed))
    n = conv.size
    total = np.zeros(a.shape[1])
    for _ in range(rounds):
        other = rng.integers(0, n, size=n)
        same = conv[other] == conv
        while same.any():
            other[same] = rng.integers(0, n, size=int(same.sum()))
            same = conv[other] == conv
        total += (a == b[other]).mean(axis=0)
    out: FloatArray = total / rounds
    return out


def co_mention(
    first: npt.ArrayLike, second: npt.ArrayLike, conversation: IntArray, conversations: int, *,
    rounds: int = 1000, seed: int = 0, level: float = 0.95,
) -> CoMention:  # fmt: skip
    """Co-mention of two groups on the same pairs: ``first`` and ``second`` (pairs, themes) say
    whether each group's rationales on a pair mention each theme; ``conversation`` (pairs,) gives
    each pair's conversation index (of ``conversations``), which the bootstrap resamples."""
    a = np.asarray(first, dtype=bool)
    b = _matched(a, second, "second")
    conv = np.asarray(conversation, dtype=np.int64).reshape(-1)
    if a.ndim != 2 or conv.size != a.shape[0]:
        raise ValueError("first and second must be (pairs, themes) with a conversation per pair")
    pairs, themes = a.shape
    alike = (a == b).astype(np.float64)
    hits = np.zeros((conversations, themes))
    np.add.at(hits, conv, alike)
    totals = np.bincount(conv, minlength=conversations).astype(np.float64)

    def share(h: FloatArray, t: FloatArray) -> Share:
        if not t.sum():
            return Share(0, 0, float("nan"), float("nan"))
        low, high = bootstrap_share_by_conversation(h, t, rounds=rounds, seed=seed, level=level)
        return Share(round(float(h.sum())), int(t.sum()), low, high)

    chance = (
        chance_co_mention(a, b, conv, rounds=rounds, seed=seed)
        if pairs
        else np.full(themes, np.nan)
    )
    nan = np.full(themes, np.nan)
    return CoMention(
        themes=[share(hits[:, t], totals) for t in range(themes)],
        overall=share(hits.sum(axis=1), totals * themes),
        chance=chance,
        chance_overall=float(chance.mean()) if themes else float("nan"),
        kappa=np.asarray([cohen_kappa(a[:, t], b[:, t]) for t in range(themes)]),
        kappa_overall=cohen_kappa(a.reshape(-1), b.reshape(-1)),
        rate_first=a.mean(axis=0) if pairs else nan,
        rate_second=b.mean(axis=0) if pairs else nan,
        chance_rounds=rounds,
    )
