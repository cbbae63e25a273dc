"""Agreement: humans with the LLM ensemble, humans with each other, judges with each other,
chance-corrected reliability (Fleiss' κ, Krippendorff's α), and ranking stability.

Votes. A judge's vote on a pair is a, b, or nothing: a tie, or a judge whose verdicts in the two
orders disagree, abstains. A pair's majority is the side with more votes; an even split leaves
it without one. A pair is *ambiguous* for humans when it has no human majority or the majority
side holds less than three quarters of the human raters (3 of 5 is ambiguous, 4 of 5 is clear).
Every share carries a percentile interval from resampling conversations.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import kendalltau

from heart.analyses._comparisons import Comparisons
from heart.analyses._leaderboard import INTERVAL_CONVERSATIONS
from heart.analyses._majority import SPLIT as NONE
from heart.analyses._majority import A, B, Votes, vote_table
from heart.frames import frame, records_frame, share_cells
from heart.stats import (
    Share,
    bootstrap_krippendorff_alpha_by_conversation,
    bootstrap_share_by_conversation,
    category_table,
    fit_bradley_terry,
    fit_bradley_terry_batch,
    fleiss_kappa,
    krippendorff_alpha,
    win_matrix,
)
from heart.types import Axis, JudgeSource

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
CLEAR_CONSENSUS = 0.75
STABILITY_DRAWS = 200
LISTED_HALVES = 100_000  # beyond this many subsets of judges, draw them instead of listing


@dataclass(frozen=True)
class Reliability:
    """Chance-corrected agreement of one group of raters on the overall preference."""

    group: str
    units: int  # pairs with at least two votes
    raters: int
    kappa: float  # Fleiss, on pairs with the most common number of raters
    kappa_units: int
    alpha_nominal: float  # a / tie / b
    alpha_ordinal: float  # signed strength: +s for a, -s for b, 0 for a tie
    axis_kappa: dict[str, float]  # Fleiss per axis, where the group gave axis verdicts


@dataclass(frozen=True)
class RaterAlpha:
    """Krippendorff's α on the preference (a / tie / b) among one group of raters, the figure
    `Reliability.alpha_nominal` reports, with its conversation-bootstrap interval (NaN on fewer
    than INTERVAL_CONVERSATIONS conversations) and the evidence behind it."""

    alpha: float  # NaN when no pair has two votes, or every vote on such pairs is the same
    low: float
    high: float
    pairs: int  # pairs with at least two votes
    conversations: int  # conversations those pairs come from
    raters: int
    verdicts: int


@dataclass(frozen=True)
class Stability:
    """Kendall τ between the full ranking and rankings from random halves of the judges; a
    draw whose fit ties every system ranks nothing and is left out of the τ figures."""

    group: str
    judges: int
    subset_size: int
    draws: int
    median: float
    p05: float
    minimum: float
    same_top: float  # share of draws with the same first-placed system


@dataclass(frozen=True)
class AgreementReport:
    human_llm: Share | None
    inter_human: Share | None
    ambiguous: Share | None  # human–LLM agreement on the ambiguous pairs
    clear: Share | None  # ... and on the clear ones
    judge_vs_humans: dict[str, Share]
    judge_pairs: list[tuple[str, str, Share]]
    judge_triples: list[tuple[tuple[str, str, str], Share]]
    reliability: list[Reliability]
    stability: list[Stability]

    @property
    def empty(self) -> bool:
        return not (
            self.human_llm or self.inter_human or self.judge_pairs or self.reliability
            or self.stability
        )  # fmt: skip

    def to_pandas(self) -> Any:
        """Every agreement share, one row each: ``measure`` (human_llm, inter_human,
        ambiguous, clear, judge_vs_humans, judge_pair, judge_triple), the ``judges`` it is
        about (joined with "; "), and hits, n, value, low, high. Reliability and stability are
        ``reliability_frame`` and ``stability_frame``."""
        shares: list[tuple[str, tuple[str, ...], Share | None]] = [
            ("human_llm", (), self.human_llm),
            ("inter_human", (), self.inter_human),
            ("ambiguous", (), self.ambiguous),
            ("clear", (), self.clear),
            *(("judge_vs_humans", (j,), s) for j, s in self.judge_vs_humans.items()),
            *(("judge_pair", (x, y), s) for x, y, s in self.judge_pairs),
            *(("judge_triple", t, s) for t, s in self.judge_triples),
        ]
        return frame(
            ({"measure": m, "judges": "; ".join(j), **share_cells(s, "")}
             for m, j, s in shares if s is not None),
            ["measure", "judges", "hits", "n", "value", "low", "high"],
        )  # fmt: skip

    def reliability_frame(self) -> Any:
        """One row per group of raters: Fleiss' κ, Krippendorff's α, κ per axis."""
        return records_frame(self.reliability)

    def stability_frame(self) -> Any:
        """One row per group: Kendall τ of rankings from random halves of its judges."""
        return records_frame(self.stability)


def _share(hits: Floats, totals: Floats, args: tuple[int, int, float]) -> Share | None:
    """Agreements and trials per conversation as a Share (None without a trial)."""
    if not totals.sum():
        return None
    low, high = bootstrap_share_by_conversation(hits, totals, rounds=args[0], seed=args[1],
                                                level=args[2])  # fmt: skip
    return Share(int(hits.sum()), int(totals.sum()), low, high)


def _tally(
    conversation: Ints, agree: npt.NDArray[np.bool_], n: int, args: tuple[int, int, float]
) -> Share | None:
    """The share of trials that agree, one trial per entry, in conversation ``conversation``."""
    hits = np.bincount(conversation, weights=agree, minlength=n).astype(np.float64)
    return _share(hits, np.bincount(conversation, minlength=n).astype(np.float64), args)


def _group(comparisons: Comparisons, source: JudgeSource) -> set[int]:
    return {j for j, s in enumerate(comparisons.judge_sources) if s == source}


def _human_llm(
    votes: Votes,
    humans: set[int],
    llms: set[int],
    judge_names: list[str],
    args: tuple[int, int, float],
) -> tuple[Share | None, Share | None, Share | None, dict[str, Share]]:
    """Human majority against the LLM ensemble's majority (all, ambiguous, clear pairs), and
    against each LLM judge's own vote."""
    n = votes.n_conversations
    human, a, b, ties = votes.majority(humans)
    llm, *_ = votes.majority(llms)
    heard = human != NONE  # pairs with a human majority
    per_judge = {}
    for j in sorted(llms):
        mine = (votes.judge == j) & (votes.vote != NONE) & heard[votes.row]
        on = votes.row[mine]
        rate = _tally(votes.conversation[on], votes.vote[mine] == human[on], n, args)
        if rate is not None:
            per_judge[judge_names[j]] = rate
    both = heard & (llm != NONE)
    agree = llm == human
    consensus = np.maximum(a, b) / np.maximum(a + b + ties, 1)
    clear = both & (consensus >= CLEAR_CONSENSUS)
    ambiguous = both & (consensus < CLEAR_CONSENSUS)
    return (
        _tally(votes.conversation[both], agree[both], n, args),
        _tally(votes.conversation[ambiguous], agree[ambiguous], n, args),
        _tally(votes.conversation[clear], agree[clear], n, args),
        per_judge,
    )


def _inter_human(votes: Votes, humans: set[int], args: tuple[int, int, float]) -> Share | None:
    """Each rater's vote against the majority of the other raters of the pair."""
    _, a, b, _ = votes.majority(humans)
    mine = np.isin(votes.judge, sorted(humans)) & (votes.vote != NONE)
    on, vote = votes.row[mine], votes.vote[mine]
    others_a, others_b = a[on] - (vote == A), b[on] - (vote == B)
    others = np.where(others_a > others_b, A, np.where(others_b > others_a, B, NONE))
    heard = others != NONE
    return _tally(votes.conversation[on[heard]], vote[heard] == others[heard],
                  votes.n_conversations, args)  # fmt: skip


def _between_judges(
    votes: Votes, llms: set[int], names: list[str], args: tuple[int, int, float]
) -> tuple[list[tuple[str, str, Share]], list[tuple[tuple[str, str, str], Share]]]:
    """Agreement of every two LLM judges, and of every three, on the pairs they all voted on."""
    judges = sorted(llms)
    column = np.full(int(votes.judge.max(initial=0)) + 1, -1, dtype=np.int64)
    column[judges] = np.arange(len(judges))
    cast = np.full((votes.pairs.size, len(judges)), NONE, dtype=np.int64)  # NONE: no vote
    mine = np.isin(votes.judge, judges)
    cast[votes.row[mine], column[votes.judge[mine]]] = votes.vote[mine]
    decided = cast != NONE
    pairs_out, triples_out = [], []
    for size in (2, 3):
        for group in itertools.combinations(range(len(judges)), size):
            chosen = list(group)
            voted = decided[:, chosen].all(axis=1)
            same = (cast[:, chosen] == cast[:, [chosen[0]]]).all(axis=1)
            rate = _tally(votes.conversation[voted], same[voted], votes.n_conversations, args)
            if rate is None:
                continue
            labels = tuple(names[judges[c]] for c in group)
            if size == 2:
                pairs_out.append((labels[0], labels[1], rate))
            else:
                triples_out.append(((labels[0], labels[1], labels[2]), rate))
    return pairs_out, triples_out


def _rating_matrix(
    comparisons: Comparisons,
    judges: list[int],
    values: npt.NDArray[np.float64],
    *,
    agree: bool,
    only: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.float64]:
    """(judges, pairs): each judge's value for each pair they rated (of the ``only`` rows, if
    given), NaN where a judge gave none. A judge that gave several (both orders) gets their mean,
    or with ``agree`` NaN unless they are equal."""
    column = {j: i for i, j in enumerate(judges)}
    rows = np.isin(comparisons.judge, judges)
    if only is not None:
        rows &= only
    rated, pair = np.unique(comparisons.pair[rows], return_inverse=True)
    shape = (len(judges), rated.size)
    total, count = np.zeros(shape), np.zeros(shape)
    low, high = np.full(shape, np.inf), np.full(shape, -np.inf)
    cell = (
        np.asarray([column[j] for j in comparisons.judge[rows].tolist()], dtype=np.int64),
        pair.reshape(-1),
    )
    np.add.at(total, cell, values[rows])
    np.add.at(count, cell, 1.0)
    np.minimum.at(low, cell, values[rows])
    np.maximum.at(high, cell, values[rows])
    seen = (count > 0) & ((low == high) if agree else True)
    out: npt.NDArray[np.float64] = np.divide(total, count, out=np.full(shape, np.nan), where=seen)
    return out


def _kappa(nominal: npt.NDArray[np.float64]) -> tuple[float, int]:
    """Fleiss' κ over the pairs rated by the most common number (at least 2) of raters."""
    seen = np.isfinite(nominal)
    per_unit = seen.sum(axis=0)
    rated = per_unit[per_unit >= 2]
    if not rated.size:
        return float("nan"), 0
    n = int(np.bincount(rated).argmax())
    units = per_unit == n
    labels = np.where(seen[:, units], nominal[:, units], -1).T.astype(np.int64)
    return fleiss_kappa(category_table(labels, 3)), int(units.sum())


def _preference(comparisons: Comparisons) -> npt.NDArray[np.float64]:
    """Each verdict's overall preference as a code: 0 for a, 1 for a tie, 2 for b."""
    out: npt.NDArray[np.float64] = np.select(
        [comparisons.outcome == 0, comparisons.outcome == 1], [0.0, 2.0], 1.0
    )
    return out


def _reliability(comparisons: Comparisons, group: set[int], name: str) -> Reliability | None:
    judges = sorted(group)
    if len(judges) < 2:
        return None
    votes = _preference(comparisons)
    signed = np.select(
        [comparisons.outcome == 0, comparisons.outcome == 1],
        [comparisons.strength, -comparisons.strength],
        0.0,
    )
    nominal = _rating_matrix(comparisons, judges, votes, agree=True)  # a flip abstains
    ordinal = _rating_matrix(comparisons, judges, signed, agree=False)
    pairable = np.isfinite(nominal).sum(axis=0) >= 2
    if not pairable.any():
        return None
    kappa, kappa_units = _kappa(nominal)
    mine = np.isin(comparisons.judge, judges)
    axis_kappa = {}
    for i, axis in enumerate(Axis):
        outcome = comparisons.axis_outcome[:, i]
        if not np.any(mine & comparisons.axis_given[:, i]):
            continue  # this group gave no axis verdicts
        axis_votes = np.select([outcome == 0, outcome == 1], [0.0, 2.0], 1.0)
        given = comparisons.axis_given[:, i]  # verdicts that did not judge the axis abstain
        matrix = _rating_matrix(comparisons, judges, axis_votes, agree=True, only=given)
        axis_kappa[axis.value] = _kappa(matrix)[0]
    return Reliability(
        group=name,
        units=int(pairable.sum()),
        raters=len(judges),
        kappa=kappa,
        kappa_units=kappa_units,
        alpha_nominal=krippendorff_alpha(nominal, level="nominal"),
        alpha_ordinal=krippendorff_alpha(ordinal, level="ordinal"),
        axis_kappa=axis_kappa,
    )


def rater_alpha(
    comparisons: Comparisons,
    source: JudgeSource = JudgeSource.HUMAN,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> RaterAlpha:
    """Krippendorff's α among the judges of ``source`` on the pairs two or more of them voted
    on, as the reliability table computes it, with a percentile interval from resampling those
    pairs' conversations."""
    judges = sorted(_group(comparisons, source))
    mine = np.isin(comparisons.judge, judges)
    nominal = _rating_matrix(comparisons, judges, _preference(comparisons), agree=True)
    pairable = np.isfinite(nominal).sum(axis=0) >= 2
    conversation_of = dict(
        zip(comparisons.pair[mine].tolist(), comparisons.conversation[mine].tolist(), strict=True)
    )
    rated = np.unique(comparisons.pair[mine])[pairable]
    _, conversation = np.unique([conversation_of[p] for p in rated.tolist()], return_inverse=True)
    conversations = int(conversation.max()) + 1 if rated.size else 0
    alpha = krippendorff_alpha(nominal[:, pairable], level="nominal")
    low = high = float("nan")
    if conversations >= INTERVAL_CONVERSATIONS:
        low, high = bootstrap_krippendorff_alpha_by_conversation(
            nominal[:, pairable], conversation.reshape(-1), "nominal",
            rounds=rounds, seed=seed, confidence=level,
        )  # fmt: skip
    return RaterAlpha(
        alpha=alpha, low=low, high=high, pairs=int(pairable.sum()), conversations=conversations,
        raters=len(judges), verdicts=int(mine.sum()),
    )  # fmt: skip


def _halves(n: int, size: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Every ``size``-subset of ``n`` judges, or ``STABILITY_DRAWS`` distinct ones at random
    when there are more; subsets are drawn, not listed, when listing them would not fit."""
    count = math.comb(n, size)
    if count <= LISTED_HALVES:  # at least STABILITY_DRAWS
        subsets = list(itertools.combinations(range(n), size))
        if count <= STABILITY_DRAWS:
            return subsets
        picks = rng.choice(count, STABILITY_DRAWS, replace=False)
        return [subsets[i] for i in sorted(picks.tolist())]
    drawn: set[tuple[int, ...]] = set()
    while len(drawn) < STABILITY_DRAWS:  # far more subsets than draws: repeats are rare
        drawn.add(tuple(sorted(rng.choice(n, size, replace=False).tolist())))
    return sorted(drawn)


def _stability(comparisons: Comparisons, name: str, seed: int) -> Stability | None:
    """Refit the board on random halves of the judges and compare each ranking to the full one."""
    judges = list(range(len(comparisons.judges)))
    if len(judges) < 2:
        return None
    k = len(comparisons.systems)
    winner, loser, tie = comparisons.winner_loser()
    per_judge = np.stack(
        [
            win_matrix(winner[m], loser[m], comparisons.strength[m], k, tie=tie[m])
            for m in (comparisons.judge == j for j in judges)
        ]
    )
    full = fit_bradley_terry(per_judge.sum(axis=0)).theta
    size = max(1, len(judges) // 2)
    subsets = _halves(len(judges), size, np.random.default_rng(seed))
    masks = np.zeros((len(subsets), len(judges)))
    for r, chosen in enumerate(subsets):
        masks[r, list(chosen)] = 1.0
    thetas = fit_bradley_terry_batch(np.einsum("rj,jkl->rkl", masks, per_judge))
    taus = []
    for r, theta in enumerate(thetas):
        wins = np.einsum("j,jkl->kl", masks[r], per_judge)
        seen = (wins.sum(axis=0) + wins.sum(axis=1)) > 0
        tau = kendalltau(full[seen], theta[seen]).statistic if seen.sum() >= 2 else np.nan
        taus.append(float(tau))
    values = np.asarray(taus)
    finite = values[np.isfinite(values)]
    top = np.argmax(thetas, axis=1) == int(np.argmax(full))
    return Stability(
        group=name,
        judges=len(judges),
        subset_size=size,
        draws=len(subsets),
        median=float(np.median(finite)) if finite.size else float("nan"),
        p05=float(np.percentile(finite, 5)) if finite.size else float("nan"),
        minimum=float(finite.min()) if finite.size else float("nan"),
        same_top=float(top.mean()),
    )


def human_llm_agreement(
    comparisons: Comparisons, *, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> Share | None:
    """Human majority against the LLM ensemble's majority on the pairs both voted on."""
    votes = vote_table(comparisons)
    humans = _group(comparisons, JudgeSource.HUMAN)
    llms = _group(comparisons, JudgeSource.LLM)
    return _human_llm(votes, humans, llms, comparisons.judges, (rounds, seed, level))[0]


def analyse_agreement(
    comparisons: Comparisons, *, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> AgreementReport:
    """Every agreement figure the verdicts in ``comparisons`` (both sources) support."""
    votes = vote_table(comparisons)
    humans = _group(comparisons, JudgeSource.HUMAN)
    llms = _group(comparisons, JudgeSource.LLM)
    args = (rounds, seed, level)
    human_llm, ambiguous, clear, per_judge = _human_llm(
        votes, humans, llms, comparisons.judges, args
    )
    judge_pairs, judge_triples = _between_judges(votes, llms, comparisons.judges, args)
    groups = (("human raters", humans), ("LLM judges", llms))
    return AgreementReport(
        human_llm=human_llm,
        inter_human=_inter_human(votes, humans, args),
        ambiguous=ambiguous,
        clear=clear,
        judge_vs_humans=per_judge,
        judge_pairs=judge_pairs,
        judge_triples=judge_triples,
        reliability=[
            r for name, g in groups if (r := _reliability(comparisons, g, name)) is not None
        ],
        stability=[
            s
            for name, g in groups
            if len(g) >= 2
            and (
                s := _stability(
                    comparisons.select(np.isin(comparisons.judge, sorted(g))), name, seed
                )
            )
        ],
    )
