"""The judge-assisted people's board (PPI++): people's Elo, narrowed by the LLM judges'
verdicts on the same and other item-pairs, with the judges' bias measured where people also
judged and taken out, so the board keeps people's estimand."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from heart.analyses._comparisons import Comparisons
from heart.analyses._leaderboard import (
    INTERVAL_CONVERSATIONS,
    EvidenceRule,
    Leaderboard,
    Standing,
    _differences,
    _evidence,
    _reasons,
    _shares,
)
from heart.analyses._pairing import assist_points, pair_means
from heart.stats import (
    bootstrap_assisted,
    elo_from_theta,
    few_conversations_factor,
    fit_assisted,
    power_tuned_lambda,
    tied_ranks,
    widen,
    win_matrix,
)
from heart.types import Axis

ASSISTED: Literal["assisted"] = "assisted"
"""The source name of the judge-assisted board (its key: ``assisted-all``...)."""


@dataclass(frozen=True)
class Assistance:
    """What the LLM judges added to people's board (PPI++): the λ chosen (0: people alone),
    the people's verdicts that were labelled points and those left out (no judge judged their
    item-pair), the item-pairs the judges judged and their verdicts, the judges, the people's
    verdicts the board was worth (people-alone variance over assisted variance, times the
    labelled verdicts) and its mean interval width over people alone's on the same points."""

    lam: float
    labelled: int
    left_out: int
    unlabelled_pairs: int
    judge_verdicts: int
    judges: tuple[str, ...]
    effective_verdicts: float
    width_ratio: float

    @property
    def worth(self) -> float:
        """How many more people's verdicts the judges' verdicts were worth."""
        return self.effective_verdicts - self.labelled


def assisted_board(
    comparisons: Comparisons,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    rule: EvidenceRule | None = None,
) -> tuple[Leaderboard, Assistance] | None:
    """People's board with the judges' help, and what the judges added, on ``comparisons``
    (every source, already on the items of one subset), or None when there is nothing to
    assist: no people's verdict on an item-pair an LLM judge judged, fewer than two systems
    among them, or no item-pair that only the judges judged (then they would add nothing).

    Labelled points: people's counted verdicts on item-pairs an LLM judge judged, outcome y and
    the boards' weight, prediction f the judges' mean outcome on that item-pair. Unlabelled:
    every such item-pair between systems people compared, outcome f. λ is PPI++'s power-tuned
    choice; intervals come from the conversation bootstrap over both sets together."""
    rule = rule or EvidenceRule()
    judged, _ = pair_means(comparisons, comparisons.source_rows("llm"))
    people = comparisons.source_rows("human")
    has_f = np.isfinite(judged[comparisons.pair])
    labelled_rows = people & has_f
    if not labelled_rows.any():
        return None
    mine = comparisons.select(labelled_rows | (comparisons.source_rows("llm") & has_f))
    labelled = mine.source_rows("human")  # renumbered: found again on the selection
    seen = np.zeros(len(mine.systems), dtype=bool)
    seen[mine.a[labelled]] = seen[mine.b[labelled]] = True
    if seen.sum() < 2:
        return None
    points = assist_points(mine, seen)  # unlabelled: between systems people compared
    unlabelled, llm = points.unlabelled, mine.source_rows("llm")
    heard = np.zeros(int(mine.pair.max()) + 1, dtype=bool)
    heard[mine.pair[labelled]] = True
    if heard[mine.pair[unlabelled]].all():
        return None  # people judged every item-pair the judges did: nothing to add
    stacks = points.stacks
    lam = power_tuned_lambda(*stacks)
    theta, guarded = fit_assisted(*stacks, lam)
    people_only = mine.select(labelled)
    evidence = _evidence(people_only)
    index = [mine.systems.index(s) for s in people_only.systems]
    measured = evidence.conversations >= INTERVAL_CONVERSATIONS
    if measured.sum() < 2:
        measured[:] = False
    anchor_full = np.zeros(len(mine.systems), dtype=bool)
    anchor_full[index] = measured
    anchor = anchor_full if anchor_full.any() else seen
    elo_full = elo_from_theta(theta, anchor)
    boot = bootstrap_assisted(
        *stacks, lam, rounds=rounds, seed=seed, level=level, anchor=anchor
    )  # fmt: skip
    elo = elo_full[index]
    factor = np.where(measured, few_conversations_factor(evidence.conversations, level), np.nan)
    low, high = widen(elo, boot.low[index], boot.high[index], factor)
    alone_low, alone_high = widen(elo, boot.alone_low[index], boot.alone_high[index], factor)
    ranks = tied_ranks(low, high)
    k = len(index)
    n_i = people_only.n_per_system()
    shares = _shares(people_only, people_only.outcome, k)
    order = sorted(
        range(k), key=lambda i: (ranks[i] == 0, ranks[i], -elo[i], people_only.systems[i])
    )
    nan_axes = {axis.value: math.nan for axis in Axis}
    standings = [
        Standing(
            system=people_only.systems[i], kind=people_only.system_kinds[i],
            family=people_only.system_families[i], elo=float(elo[i]), low=float(low[i]),
            high=float(high[i]), robust_low=math.nan, robust_high=math.nan, paper_low=math.nan,
            paper_high=math.nan, comparisons=int(n_i[i]), win_rate=float(shares[i]),
            axis_win_rates=dict(nan_axes), axis_elo=dict(nan_axes), axis_low=dict(nan_axes),
            axis_high=dict(nan_axes), axis_comparisons=dict.fromkeys(nan_axes, 0),
            axis_conversations=dict.fromkeys(nan_axes, 0),
            conversations=int(evidence.conversations[i]), opponents=int(evidence.opponents[i]),
            judges=int(evidence.judges[i]), rank=int(ranks[i]),
            preliminary=_reasons(int(n_i[i]), int(evidence.conversations[i]),
                                 bool(evidence.one_rater[i]), bool(measured[i]), rule),
        )
        for i in order
    ]  # fmt: skip
    winner, loser, tie = people_only.winner_loser()
    raw = win_matrix(winner, loser, None, k, tie=tie)[np.ix_(order, order)]
    met = raw + raw.T
    rounds_elo = boot.assisted_rounds[:, index]
    board = Leaderboard(
        standings=standings,
        comparisons=len(people_only),
        conversations=len(people_only.conversations),
        rounds=rounds,
        level=level,
        separated=guarded,
        separated_rounds=boot.separated_rounds,
        head_to_head=np.divide(raw, met, out=np.full((k, k), np.nan), where=met > 0),
        differences=_differences(elo, rounds_elo, low, high, evidence, measured, order, level),
        ablations=[],
        rule=rule,
        judges=tuple(people_only.judges),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        var_assisted = np.nanvar(rounds_elo[:, measured], axis=0)
        var_alone = np.nanvar(boot.alone_rounds[:, index][:, measured], axis=0)
    ratio = (
        float(np.mean(var_alone) / np.mean(var_assisted))
        if measured.any() and np.mean(var_assisted) > 0
        else math.nan
    )
    widths = (high - low)[measured]
    alone_widths = (alone_high - alone_low)[measured]
    assistance = Assistance(
        lam=lam,
        labelled=int(labelled.sum()),
        left_out=int((people & ~has_f).sum()),
        unlabelled_pairs=int(unlabelled.sum()),
        judge_verdicts=int((llm & seen[mine.a] & seen[mine.b]).sum()),
        judges=tuple(mine.judges[j] for j in sorted(set(mine.judge[llm].tolist()))),
        effective_verdicts=ratio * int(labelled.sum()) if math.isfinite(ratio) else math.nan,
        width_ratio=float(widths.mean() / alone_widths.mean())
        if widths.size and alone_widths.mean() > 0
        else math.nan,
    )
    return board, assistance
