"""What a rater's work says about them, measured as the judge audit measures judges: the share
of verdicts won by the reply shown first, seconds per verdict against the time it takes to read
the pair's text, the longest run of one answer, agreement with the other raters' majority on
shared pairs (and Cohen's κ), and the gold and attention checks passed and failed.

The reading floor of a judge seat is its words (the conversation the first time the rater meets
that context, then both replies) at ``FLOOR_WORDS_PER_MINUTE``. Brysbaert (2019, "How many
words do we read per minute?", Journal of Memory and Language 109) puts adults' silent reading
of non-fiction at 238 words a minute on average; 500, about twice that, is beyond reading with
understanding (Rayner et al., 2016, "So much to read, so little time", Psychological Science in
the Public Interest 17), so a verdict given faster than its floor cannot rest on the text.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import BindParameter, and_, bindparam, select
from sqlalchemy.orm import Session, aliased

from heart.analyses import wilson_share
from heart.ids import Presentation
from heart.people._scale import ATTENTION_REPLY, CHOICES, GOLD_REPLY
from heart.people._tasks import ATTENTION, GOLD, JUDGE
from heart.stats import Share, cohen_kappa
from heart.store import (
    CompletionRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    TaskRow,
    counted_judgment,
)
from heart.types import JudgeSource, Order, Shown, Side, Status

FLOOR_WORDS_PER_MINUTE = 500
"""The reading speed of the floor: about twice the adult average of 238 words a minute."""

MIN_OTHERS = 2
"""Other raters' verdicts a pair needs for their majority to be compared with a rater's."""


@dataclass(frozen=True)
class RaterMeasures:
    """One rater's measures, each with the evidence behind it. ``verdicts``: their valid
    verdicts on real pairs (``ties`` of them "about the same", which take no part in the
    first-shown share); ``timed``: judge seats (checks included) with a serving and a submitting
    time; ``shared``: pairs on which the other raters have a majority to compare with."""

    verdicts: int = 0
    ties: int = 0
    first_shown: Share | None = None
    timed: int = 0
    median_seconds: float = math.nan
    median_floor: float = math.nan
    too_fast: Share | None = None  # timed seats submitted faster than their reading floor
    longest_run: int = 0
    run_answer: str = ""  # the answer of the longest run
    shared: int = 0
    agreement: Share | None = None  # of shared pairs, those where they chose the majority's side
    kappa: float = math.nan  # Cohen's κ between them and the majority on shared pairs
    gold: int = 0
    gold_failed: int = 0
    attention: int = 0
    attention_failed: int = 0


def words(text: str) -> int:
    return len(text.split())


def reading_floor(n_words: int) -> float:
    """Seconds it takes to read ``n_words`` at ``FLOOR_WORDS_PER_MINUTE``."""
    return 60.0 * n_words / FLOOR_WORDS_PER_MINUTE


def longest_run(answers: Sequence[str]) -> tuple[int, str]:
    """The longest run of one answer in ``answers`` (in the order given), and that answer (the
    first such run when several are as long); (0, "") for none."""
    best, best_answer, run = 0, "", 0
    for i, answer in enumerate(answers):
        run = run + 1 if i and answers[i - 1] == answer else 1
        if run > best:
            best, best_answer = run, answer
    return best, best_answer


def majority(labels: Iterable[str]) -> str | None:
    """The label more of ``labels`` carry than any other, or None on a tie or too few."""
    counts = Counter(labels).most_common()
    if sum(n for _, n in counts) < MIN_OTHERS or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def reading_floors(seats: Sequence[tuple[str, int, int]]) -> list[float]:
    """The reading floor of each seat ``(item, context words, reply words)``, in the order the
    rater was served them: a context is read once, the first time its item comes up."""
    seen: set[str] = set()
    out = []
    for item, context, replies in seats:
        out.append(reading_floor(replies + (0 if item in seen else context)))
        seen.add(item)
    return out


@dataclass(frozen=True)
class _Verdict:
    rater: str
    pair: str
    label: str  # in the pair's terms: a, b or tie
    shown: Shown  # the side that won as shown: first, second or tie
    answer: str  # the five-option choice, in the terms shown
    counted: bool


def _answer(raw: str | None, shown: Shown, strength: int) -> str:
    """The choice kept in a verdict's ``raw``, else the one its side and strength stand for."""
    try:
        choice = json.loads(raw or "{}").get("choice")
    except (ValueError, AttributeError):
        choice = None
    if choice in CHOICES:
        return str(choice)
    if shown is Shown.TIE:
        return "="
    return f"{'A' if shown is Shown.FIRST else 'B'}{'++' if strength >= 2 else '+'}"


_SEAT = aliased(TaskRow, name="seat")
_VERDICTS = (
    select(JudgmentRow.judge, JudgmentRow.pair_id, JudgmentRow.order, JudgmentRow.winner,
           JudgmentRow.strength, JudgmentRow.raw, counted_judgment(), _SEAT.submitted_at)
    .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
    .outerjoin(_SEAT, and_(_SEAT.kind == JUDGE, _SEAT.target == JudgmentRow.pair_id,
                           _SEAT.rater_id == JudgmentRow.judge, _SEAT.check.is_(None)))
    .where(JudgeRow.source == JudgeSource.HUMAN, JudgmentRow.status == Status.OK)
    .order_by(JudgmentRow.judge, JudgmentRow.created_at, _SEAT.submitted_at, JudgmentRow.id)
)  # fmt: skip
"""People's valid verdicts on real pairs, each rater's in the order submitted (built once: a
statement costs more to build than to run, and one runs after every verdict)."""
_RATERS: BindParameter[str] = bindparam("p_raters", expanding=True)
_VERDICTS_OF = _VERDICTS.where(JudgmentRow.judge.in_(_RATERS))
_VERDICTS_NEAR = _VERDICTS.where(
    JudgmentRow.pair_id.in_(select(JudgmentRow.pair_id).where(JudgmentRow.judge.in_(_RATERS)))
)


def _verdicts(
    session: Session, raters: Sequence[str] | None, others: bool = True
) -> list[_Verdict]:
    """People's valid verdicts on real pairs (of ``raters``, and with ``others`` those of the
    other raters on the same pairs), each rater's in the order they were submitted."""
    if raters is None:
        rows = session.execute(_VERDICTS)
    else:
        rows = session.execute(_VERDICTS_NEAR if others else _VERDICTS_OF, {"p_raters": raters})
    out = []
    for judge, pair, order, winner, strength, raw, counted, _ in rows:
        shown = Presentation("a", "b", Order(order)).to_shown(Side(winner or Side.NONE))
        answer = _answer(raw, shown, strength or 1)
        out.append(_Verdict(judge, pair, str(winner), shown, answer, counted))
    return out


@dataclass(frozen=True)
class _Seat:
    rater: str
    item: str
    check: str | None
    passed: bool | None
    seconds: float | None
    reply_words: int


_A, _B = (aliased(CompletionRow, name=n) for n in ("a", "b"))
_SEATS = (
    select(TaskRow.rater_id, TaskRow.item_id, TaskRow.check, TaskRow.passed, TaskRow.served_at,
           TaskRow.submitted_at, ItemRow.reference, _A.text.label("a_text"),
           _B.text.label("b_text"))
    .join(ItemRow, ItemRow.id == TaskRow.item_id)
    .outerjoin(PairRow, PairRow.id == TaskRow.target)
    .outerjoin(_A, _A.id == PairRow.a_id)
    .outerjoin(_B, _B.id == PairRow.b_id)
    .where(TaskRow.kind == JUDGE, TaskRow.done, TaskRow.rater_id.is_not(None))
    .order_by(TaskRow.rater_id, TaskRow.served_at, TaskRow.id)
)  # fmt: skip
_SEATS_OF = _SEATS.where(TaskRow.rater_id.in_(_RATERS))
_CONTEXTS = select(ItemRow.id, ItemRow.context).where(
    ItemRow.id.in_(bindparam("p_items", expanding=True))
)


def _seats(session: Session, raters: Sequence[str] | None) -> tuple[list[_Seat], dict[str, int]]:
    """The submitted judge seats (checks included) of ``raters`` (or everyone), each rater's in
    the order served, with the words of their replies; and the context words of their items."""
    if raters is None:
        rows = session.execute(_SEATS)
    else:
        rows = session.execute(_SEATS_OF, {"p_raters": raters})
    seats, items = [], set()
    for rater, item, check, passed, served, submitted, reference, a, b in rows:
        if check:
            other = GOLD_REPLY if check == GOLD else ATTENTION_REPLY
            replies = words(reference or "") + words(other)
        else:
            replies = words(a or "") + words(b or "")
        seconds = submitted - served if served is not None and submitted is not None else None
        seats.append(_Seat(str(rater), item, check, passed, seconds, replies))
        items.add(item)
    contexts = {
        item: sum(words(str(turn.get("text", ""))) for turn in context or [])
        for item, context in session.execute(_CONTEXTS, {"p_items": sorted(items)})
    }
    return seats, contexts


def _agreement(
    mine: list[_Verdict], by_pair: dict[str, list[_Verdict]], level: float
) -> tuple[int, Share | None, float]:
    """On the pairs where the other raters whose verdicts count have a majority: how many, the
    share where this rater chose the same side, and Cohen's κ between the two."""
    own, theirs = [], []
    for verdict in mine:
        others = (v.label for v in by_pair[verdict.pair] if v.rater != verdict.rater and v.counted)
        side = majority(others)
        if side is not None:
            own.append(verdict.label)
            theirs.append(side)
    agree = sum(a == b for a, b in zip(own, theirs, strict=True))
    kappa = cohen_kappa(own, theirs) if own else math.nan
    return len(own), wilson_share(agree, len(own), level), kappa


def measure_raters(
    session: Session,
    level: float,
    raters: Sequence[str] | None = None,
    *,
    agreement: bool = True,
) -> dict[str, RaterMeasures]:
    """The measures of ``raters`` (every rater with judge work when None; each named one is
    present), intervals at ``level``; without ``agreement``, the others' verdicts are not read
    and the agreement measures stay empty."""
    verdicts = _verdicts(session, raters, others=agreement)
    by_pair: dict[str, list[_Verdict]] = defaultdict(list)
    by_rater: dict[str, list[_Verdict]] = defaultdict(list)
    for v in verdicts:
        by_pair[v.pair].append(v)
        by_rater[v.rater].append(v)
    seats, contexts = _seats(session, raters)
    seats_of: dict[str, list[_Seat]] = defaultdict(list)
    for seat in seats:
        seats_of[seat.rater].append(seat)
    out = {}
    for rater in sorted(set(seats_of) | set(by_rater) if raters is None else raters):
        mine, served = by_rater.get(rater, []), seats_of.get(rater, [])
        timed = [s for s in served if s.seconds is not None]
        floors = reading_floors([(s.item, contexts.get(s.item, 0), s.reply_words) for s in served])
        timed_floors = [f for s, f in zip(served, floors, strict=True) if s.seconds is not None]
        seconds = [float(s.seconds) for s in timed if s.seconds is not None]
        fast = sum(t < f for t, f in zip(seconds, timed_floors, strict=True))
        run, answer = longest_run([v.answer for v in mine])
        shared, agrees, kappa = _agreement(mine, by_pair, level)
        decided = [v for v in mine if v.shown in (Shown.FIRST, Shown.SECOND)]
        first = sum(v.shown is Shown.FIRST for v in decided)
        gold = [s for s in served if s.check == GOLD]
        attention = [s for s in served if s.check == ATTENTION]
        out[rater] = RaterMeasures(
            verdicts=len(mine), ties=sum(v.label == Side.TIE for v in mine),
            first_shown=wilson_share(first, len(decided), level), timed=len(seconds),
            median_seconds=float(np.median(seconds)) if seconds else math.nan,
            median_floor=float(np.median(timed_floors)) if timed_floors else math.nan,
            too_fast=wilson_share(fast, len(seconds), level), longest_run=run,
            run_answer=answer, shared=shared, agreement=agrees, kappa=kappa,
            gold=len(gold), gold_failed=sum(s.passed is False for s in gold),
            attention=len(attention), attention_failed=sum(s.passed is False for s in attention),
        )  # fmt: skip
    return out


QUALITY_COLUMNS = (
    "verdicts", "first shown won", "median s (floor)", "faster than reading", "longest run",
    "agrees with majority", "κ", "gold failed", "attention failed",
)  # fmt: skip
"""The headers of ``quality_cells``, wherever the measures are shown as a table."""


def quality_cells(m: RaterMeasures) -> list[str]:
    """A rater's measures as the cells of a table row, each with its evidence; "–" when there
    is none."""
    dash = "–"
    ties = f" ({m.ties} tie{'s' * (m.ties != 1)})" if m.ties else ""
    seconds = dash if math.isnan(m.median_seconds) else f"{m.median_seconds:.0f} s"
    floor = "" if math.isnan(m.median_floor) else f" ({m.median_floor:.0f} s)"
    return [
        f"{m.verdicts}{ties}",
        m.first_shown.text() if m.first_shown else dash,
        seconds + floor,
        m.too_fast.text() if m.too_fast else dash,
        f"{m.longest_run} × {m.run_answer}" if m.longest_run else dash,
        m.agreement.text() if m.agreement else dash,
        dash if math.isnan(m.kappa) else f"{m.kappa:.2f}",
        f"{m.gold_failed} of {m.gold}",
        f"{m.attention_failed} of {m.attention}",
    ]


def measures_data(m: RaterMeasures) -> dict[str, object]:
    """``m`` as JSON a store keeps (no NaN: null)."""
    data = dataclasses.asdict(m)
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in data.items()}


def measures_from(data: Mapping[str, object]) -> RaterMeasures:
    """The measures `measures_data` kept (a field it lacks takes its default)."""
    known = {f.name: f for f in dataclasses.fields(RaterMeasures)}
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name not in known:
            continue
        if isinstance(value, dict):
            value = Share(**value)
        elif value is None and known[name].type in ("float", float):
            value = math.nan
        values[name] = value
    return RaterMeasures(**values)
