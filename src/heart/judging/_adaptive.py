"""The adaptive pair design: judging in rounds, each round adding the pairs that make the
ranking most certain (:func:`heart.stats.choose_pairs`), until the budget or the stopping rule
ends it.

A round is chosen only once every stored pair has all its verdicts: an answer from each LLM judge
scheduled on it, and every person's seat on it submitted. It is chosen from the store alone (the
usable replies, the pairs, the counted verdicts of the study's LLM judges and of people), so a run
that was killed resumes by judging what its last round left and then picks the same next round,
and `heart judge` and the web app's seats add the same rounds. Each pair records its round in its
design ("adaptive-3"); pairs only ever grow.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from heart.config import PairDesign, PairsSpec
from heart.engine import ProgressFn, RunSummary
from heart.ids import pair_id, seeded_order
from heart.judging._llm import JudgingInputs, JudgingSummary, judge_pairs, schedule_for
from heart.judging._pairs import candidate_pairs, pairs_to_add
from heart.store import (
    CompletionRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    TaskRow,
    counted_judgment,
)
from heart.study import Study
from heart.types import JudgeSource, Order, Side, Status

if TYPE_CHECKING:  # the statistics are imported when a round is chosen: a study of another
    # design, and commands that only read the settings, never load numpy and scipy
    from heart.stats import Comparison

ROUND = "adaptive-"
SCORE = {Side.A: 1.0, Side.B: 0.0, Side.TIE: 0.5, Side.NONE: 0.5}


def round_of(design: str) -> int:
    """The round a pair of the adaptive design was added in (0 for other designs)."""
    return int(design[len(ROUND) :]) if design.startswith(ROUND) else 0


@dataclass
class RoundInputs:
    """What a round is chosen from: the systems, the usable replies per item, the stored pairs
    (with their rounds), the counted verdicts on them (the study's LLM judges' and people's)
    and each item's conversation."""

    systems: list[str]
    replies: dict[str, list[tuple[str, str]]]  # item -> (completion id, system)
    pairs: list[PairRow]
    verdicts: list[tuple[str, Side]]  # (pair id, winner)
    conversation: dict[str, str]  # item -> conversation

    @classmethod
    def stored(cls, study: Study) -> RoundInputs:
        judges = [j.name for j in study.config.judges]
        with study.store.session() as session:
            replies: dict[str, list[tuple[str, str]]] = defaultdict(list)
            rows = session.execute(
                select(CompletionRow.id, CompletionRow.item_id, CompletionRow.system)
                .where(CompletionRow.status == Status.OK)
                .order_by(CompletionRow.id)
            )
            for cid, item_id, system in rows:
                replies[item_id].append((cid, system))
            pairs = list(session.scalars(select(PairRow).order_by(PairRow.id)))
            verdicts = [
                (pid, Side(winner or Side.NONE))
                for pid, winner in session.execute(
                    select(JudgmentRow.pair_id, JudgmentRow.winner)
                    .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
                    .where(
                        counted_judgment(),
                        JudgmentRow.judge.in_(judges) | (JudgeRow.source == JudgeSource.HUMAN),
                    )
                    .order_by(JudgmentRow.id)
                )
            ]
            conversation = dict(session.execute(select(ItemRow.id, ItemRow.conversation_id)).all())
        systems = sorted({s for item in replies.values() for _, s in item})
        return cls(systems, dict(replies), pairs, verdicts, conversation)

    def comparisons(self, before_round: int | None = None) -> list[Comparison]:
        """The verdicts as comparisons of system indices (those of pairs added before round
        ``before_round`` when it is given)."""
        from heart.stats import Comparison

        index = {s: n for n, s in enumerate(self.systems)}
        system = {cid: s for item in self.replies.values() for cid, s in item}
        by_id = {p.id: p for p in self.pairs}
        out = []
        for pid, winner in self.verdicts:
            pair = by_id.get(pid)
            if pair is None or pair.a_id not in system or pair.b_id not in system:
                continue
            if before_round is not None and round_of(pair.design) >= before_round:
                continue
            a, b = index[system[pair.a_id]], index[system[pair.b_id]]
            if a != b:
                out.append(Comparison(pair.item_id, a, b, SCORE[winner]))
        return out


def _ranking(systems: int, comparisons: list[Comparison]) -> list[int]:
    import numpy as np

    from heart.stats import fit_bradley_terry

    wins = np.zeros((systems, systems))
    for c in comparisons:
        wins[c.a, c.b] += c.score
        wins[c.b, c.a] += 1.0 - c.score
    return [int(n) for n in np.argsort(-fit_bradley_terry(wins).theta, kind="stable")]


def widest_interval(study: Study, inputs: RoundInputs) -> float:
    """The widest Elo interval (the ratings level) of the verdicts so far, resampling
    conversations; infinite while some system has none."""
    import numpy as np

    from heart.stats import bootstrap_by_conversation

    k = len(inputs.systems)
    conversations = sorted(set(inputs.conversation.values()))
    row = {c: n for n, c in enumerate(conversations)}
    per = np.zeros((max(len(conversations), 1), k, k))
    for c in inputs.comparisons():
        n = row[inputs.conversation[c.item]]
        per[n, c.a, c.b] += c.score
        per[n, c.b, c.a] += 1.0 - c.score
    if not per.any():
        return math.inf
    ratings = study.config.ratings
    boot = bootstrap_by_conversation(
        per, rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level
    )
    widths = boot.high - boot.low
    return float(np.max(widths)) if np.all(np.isfinite(widths)) else math.inf


def stop_reached(study: Study, inputs: RoundInputs) -> bool:
    """Whether ``pairs.stop`` holds: every interval narrow enough, or the last round left the
    ranking unchanged."""
    stop = study.config.pairs.stop
    last = max((round_of(p.design) for p in inputs.pairs), default=0)
    if stop is None or last == 0:
        return False
    if stop == "stable":
        k = len(inputs.systems)
        return last > 1 and _ranking(k, inputs.comparisons()) == _ranking(
            k, inputs.comparisons(before_round=last)
        )
    return widest_interval(study, inputs) <= float(stop)


def _loads(study: Study, pairs: list[PairRow]) -> dict[str, int]:
    """Verdicts each LLM judge is scheduled for over ``pairs`` (orders counted)."""
    inputs = JudgingInputs.stored(study.store)
    inputs.pairs = pairs
    schedule, _ = schedule_for(study, inputs)
    orders = 2 if study.config.pairs.both_orders else 1
    loads = {j.name: 0 for j in study.config.judges}
    for judges in schedule.judges.values():
        for name in judges:
            loads[name] += orders
    return loads


def verdicts_per_pair(study: Study) -> int:
    """Verdicts one pair gets: its LLM judges times its orders (people only: its raters)."""
    config = study.config
    if not config.judges:
        return config.people.raters_per_pair
    judges = config.judging.judges_per_pair or len(config.judges)
    return max(1, min(judges, len(config.judges))) * (2 if config.pairs.both_orders else 1)


def waiting(study: Study) -> bool:
    """Whether a stored pair still waits for a verdict: an LLM judge scheduled on it has not
    answered yet (a failed answer counts as one), or a person's seat on it is not submitted
    (without LLM judges, a pair with no seat yet waits for its seats)."""
    with study.store.session() as session:
        seats = (TaskRow.target == PairRow.id) & TaskRow.check.is_(None)
        if session.scalar(select(TaskRow.id).join(PairRow, seats).where(~TaskRow.done).limit(1)):
            return True
        if not study.config.judges:
            unseated = select(PairRow.id).outerjoin(TaskRow, seats).where(TaskRow.id.is_(None))
            return session.scalar(unseated.limit(1)) is not None
        answered = {
            (pid, judge, Order(order))
            for pid, judge, order in session.execute(
                select(JudgmentRow.pair_id, JudgmentRow.judge, JudgmentRow.order)
            )
        }
    schedule, pairs = schedule_for(study)
    orders = (Order.AB, Order.BA) if study.config.pairs.both_orders else (Order.AB,)
    return any(
        (pair.id, judge, order) not in answered
        for pair in pairs
        for judge in schedule.judges.get(pair.id, ())
        for order in orders
    )


def next_round(study: Study, inputs: RoundInputs | None = None) -> list[PairRow]:
    """The pairs of the next round (none while a stored pair waits for verdicts, or when the
    budget is spent, the stopping rule holds or no pair is left), chosen from the store
    alone."""
    from heart.stats import Candidate, choose_pairs

    spec, seed = study.config.pairs, study.config.seed
    inputs = inputs or RoundInputs.stored(study)
    if waiting(study) or stop_reached(study, inputs):
        return []
    index = {s: n for n, s in enumerate(inputs.systems)}
    stored = {p.id for p in inputs.pairs}
    options: list[tuple[str, str, str]] = []
    candidates: list[Candidate] = []
    for item_id, replies in sorted(inputs.replies.items()):
        for x, y in candidate_pairs(replies):
            if pair_id(item_id, x[0], y[0]) not in stored:
                options.append((item_id, x[0], y[0]))
                candidates.append(Candidate(item_id, index[x[1]], index[y[1]]))
    k = len(inputs.systems)
    size = spec.round_size or k * (k - 1)
    chosen = choose_pairs(
        k, inputs.comparisons(), candidates, size,
        seed=seed, verdicts_per_pair=verdicts_per_pair(study),
    )  # fmt: skip
    number = 1 + max((round_of(p.design) for p in inputs.pairs), default=0)
    rows = []
    for n in chosen:
        item_id, first, second = options[n]
        a, b = seeded_order(seed, item_id, first, second)
        rows.append(
            PairRow(id=pair_id(item_id, a, b), item_id=item_id, a_id=a, b_id=b,
                    design=f"{ROUND}{number}")
        )  # fmt: skip
    if spec.budget is not None:
        rows = rows[: _within_budget(study, inputs.pairs, rows, spec.budget)]
    return rows


def _within_budget(study: Study, stored: list[PairRow], rows: list[PairRow], budget: int) -> int:
    """How many of ``rows`` (a prefix) keep every LLM judge within ``budget`` verdicts (people
    only: the pairs within ``budget``)."""
    if not study.config.judges:
        return max(0, min(len(rows), budget - len(stored)))
    lo, hi = 0, len(rows)
    while lo < hi:  # the largest prefix whose loads fit
        mid = (lo + hi + 1) // 2
        if max(_loads(study, stored + rows[:mid]).values(), default=0) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def add_round(study: Study) -> int:
    """Store the next round's pairs, when one is due (people's seats follow them); how many.
    Nothing outside the adaptive design."""
    if study.config.pairs.design is not PairDesign.ADAPTIVE:
        return 0
    rows = next_round(study)
    if rows:
        with study.store.session() as session:
            session.add_all(rows)
    return len(rows)


def judge_in_rounds(study: Study, progress: ProgressFn | None = None) -> JudgingSummary:
    """Judge what the stored rounds still miss, then add and judge rounds until the budget,
    the stopping rule or the pairs run out (or a round's calls do not all get an answer, or
    people's seats on it are still open)."""
    total = RunSummary()
    summary = judge_pairs(study, progress)
    total.add(summary.model_calls)
    added = rounds = 0
    while summary.model_calls.complete:
        rows = next_round(study)
        if not rows:
            break
        with study.store.session() as session:
            session.add_all(rows)
        added += len(rows)
        rounds += 1
        summary = judge_pairs(study, progress)
        total.add(summary.model_calls)
    return JudgingSummary(model_calls=total, plan=summary.plan, new_pairs=added, rounds=rounds)


def projected_pairs(
    study: Study, usable: list[tuple[str, str, str]], stored: list[tuple[str, str, str, str]]
) -> list[PairRow]:
    """Stand-ins for the rounds not chosen yet, for a dry run: balanced pairs up to the budget
    (every pair when the design has no budget, an upper bound)."""
    spec, judges = study.config.pairs, max(1, len(study.config.judges))
    if spec.budget is None:
        everything = PairsSpec(design=PairDesign.ALL)
        return pairs_to_add(everything, usable, stored, study.config.seed)
    per_pair = verdicts_per_pair(study)
    pairs = spec.budget * judges // per_pair
    items = max(1, len({item for _, item, _ in usable}))
    sampled = PairsSpec(design=PairDesign.SAMPLED, per_item=max(1, -(-pairs // items)))
    rows = pairs_to_add(sampled, usable, stored, study.config.seed)
    return rows[: max(0, pairs - len(stored))]
