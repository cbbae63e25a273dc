"""Judgments joined to systems and conversations: the arrays every rating analysis starts from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from sqlalchemy import ColumnElement, SQLColumnExpression, case, func, select

from heart.store import (
    CompletionRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    Store,
    SystemRow,
    counted_judgment,
    query_columns,
)
from heart.types import Axis, Order, Side

AXIS_CODES = {Side.A: 0, Side.B: 1, Side.TIE: 2, Side.NONE: 2}
A_SHARE = np.array([1.0, 0.0, 0.5])
"""What an outcome code (a won, b won, tie) gives a: 1, 0 or half."""
Source = Literal["llm", "human", "all"]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Comparisons:
    """One row per valid judgment, in the pair's own a/b terms.

    ``outcome`` is 0 when a won, 1 when b won, 2 for a tie; ``axis_outcome[:, k]`` the same for
    axis k ("none" counts as a tie) and ``axis_strength[:, k]`` its strength (0 for none);
    ``axis_given[:, k]`` whether the verdict judged axis k at all (people and imported verdicts
    judge only the overall preference);
    ``first_won`` whether the reply shown first won; ``pair`` numbers the pairs (the same number
    in both orders); ``order_ab`` whether a was shown first. ``completion_a``/``completion_b``
    index ``completions`` (ids), ``item`` indexes ``items``; per-item subsets and per-judge
    sources, kinds and families sit beside their name lists; ``judgments`` names each row's
    judgment.
    """

    systems: list[str]
    judges: list[str]
    conversations: list[str]
    a: Ints
    b: Ints
    outcome: Ints
    strength: npt.NDArray[np.float64]
    axis_outcome: Ints
    judge: Ints
    conversation: Ints
    first_won: npt.NDArray[np.bool_]
    length_a: Ints
    length_b: Ints
    pair: Ints
    order_ab: npt.NDArray[np.bool_]
    system_kinds: list[str]
    system_families: list[str]
    judge_families: list[str]
    judge_sources: list[str]
    items: list[str]
    item: Ints
    item_subsets: list[str]
    completions: list[str]
    completion_a: Ints
    completion_b: Ints
    axis_strength: npt.NDArray[np.float64]
    axis_given: npt.NDArray[np.bool_]
    judgments: list[str]  # each row's judgment id
    # each row's pair's chance of being drawn for people (people.judge_pairs; NaN: not drawn,
    # every pair people's); None: not read
    pair_chance: npt.NDArray[np.float64] | None = None

    def __len__(self) -> int:
        return int(self.a.size)

    @cached_property
    def row_of(self) -> dict[str, int]:
        """Each judgment's row (worked out once: studies have many)."""
        return {judgment: row for row, judgment in enumerate(self.judgments)}

    def winner_loser(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """System indices of winner and loser per row (for ties: a, b) and the tie mask."""
        b_won = self.outcome == 1
        winner = np.where(b_won, self.b, self.a)
        loser = np.where(b_won, self.a, self.b)
        return winner, loser, self.outcome == 2

    def n_per_system(self) -> Ints:
        """How many comparisons each system took part in."""
        k = len(self.systems)
        return np.bincount(self.a, minlength=k) + np.bincount(self.b, minlength=k)

    def select(self, rows: npt.NDArray[np.bool_]) -> Comparisons:
        """The comparisons of the masked rows, with every index renumbered to what remains."""
        mask = np.asarray(rows, dtype=bool)
        if mask.shape != self.a.shape:
            raise ValueError(f"rows must mask the {len(self)} comparisons, got shape {mask.shape}")
        s_kept, (a, b) = _compact(self.a[mask], self.b[mask])
        j_kept, (judge,) = _compact(self.judge[mask])
        c_kept, (conversation,) = _compact(self.conversation[mask])
        i_kept, (item,) = _compact(self.item[mask])
        cp_kept, (ca, cb) = _compact(self.completion_a[mask], self.completion_b[mask])
        _, (pair,) = _compact(self.pair[mask])

        def pick(values: list[str], kept: list[int]) -> list[str]:
            return [values[i] for i in kept]

        return replace(
            self,
            systems=pick(self.systems, s_kept),
            judges=pick(self.judges, j_kept),
            conversations=pick(self.conversations, c_kept),
            items=pick(self.items, i_kept),
            completions=pick(self.completions, cp_kept),
            a=a,
            b=b,
            judge=judge,
            conversation=conversation,
            item=item,
            completion_a=ca,
            completion_b=cb,
            pair=pair,
            outcome=self.outcome[mask],
            strength=self.strength[mask],
            axis_outcome=self.axis_outcome[mask],
            axis_strength=self.axis_strength[mask],
            axis_given=self.axis_given[mask],
            first_won=self.first_won[mask],
            length_a=self.length_a[mask],
            length_b=self.length_b[mask],
            order_ab=self.order_ab[mask],
            system_kinds=pick(self.system_kinds, s_kept),
            system_families=pick(self.system_families, s_kept),
            judge_families=pick(self.judge_families, j_kept),
            judge_sources=pick(self.judge_sources, j_kept),
            item_subsets=pick(self.item_subsets, i_kept),
            judgments=pick(self.judgments, np.flatnonzero(mask).tolist()),
            pair_chance=None if self.pair_chance is None else self.pair_chance[mask],
        )

    def on_axis(self, axis: Axis) -> Comparisons:
        """The verdicts that judged ``axis``, with that axis's outcome as the outcome and its
        strength as the weight: each at least one, "none" a tie of weight one."""
        k = list(Axis).index(axis)
        judged = self.select(self.axis_given[:, k])
        outcome = judged.axis_outcome[:, k]
        return replace(
            judged, outcome=outcome, strength=axis_weight(outcome, judged.axis_strength[:, k])
        )

    def source_rows(self, source: str) -> npt.NDArray[np.bool_]:
        """The rows whose judge is of ``source`` (``llm`` or ``human``)."""
        sources = np.asarray([*self.judge_sources, ""], dtype=object)
        rows: npt.NDArray[np.bool_] = sources[self.judge] == source
        return rows

    @property
    def a_share(self) -> npt.NDArray[np.float64]:
        """Each row's outcome as a's share: 1 when a won, 0 when b won, half a tie."""
        share: npt.NDArray[np.float64] = A_SHARE[self.outcome]
        return share

    def by_source(self, source: Source) -> Comparisons:
        """Only the verdicts of LLM judges, of human raters, or (``all``) both."""
        if source == "all":
            return self
        return self.select(self.source_rows(source))

    def by_subset(self, subset: str) -> Comparisons:
        """Only the comparisons on items of ``subset`` (``all``: every item)."""
        if subset == "all":
            return self
        subsets = np.asarray([*self.item_subsets, ""], dtype=object)
        return self.select(subsets[self.item] == subset)


def axis_weight(outcome: Ints, strength: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """What an axis verdict weighs: its strength, at least one; "none" (a tie) weighs one."""
    return np.where(outcome == 2, 1.0, np.maximum(strength, 1.0))


def _compact(*indices: Ints) -> tuple[list[int], list[Ints]]:
    """The sorted values ``indices`` use, and the arrays renumbered to positions among them."""
    values = np.concatenate(indices)
    used = np.flatnonzero(np.bincount(values) if values.size else values).astype(np.int64)
    lookup = np.full(int(used.max()) + 1 if used.size else 0, -1, dtype=np.int64)
    lookup[used] = np.arange(used.size)
    return used.tolist(), [lookup[i] for i in indices]


NOT_GIVEN = 3  # the code of an axis the verdict did not judge


def _side_code(side: SQLColumnExpression[str | None]) -> ColumnElement[int]:
    """A side as its code (``AXIS_CODES``), worked out by the database; NOT_GIVEN for none.
    (A simple CASE: the side, say read out of the JSON, is worked out once for a or b.)"""
    return case(
        {Side.A.value: AXIS_CODES[Side.A], Side.B.value: AXIS_CODES[Side.B]}, value=side,
        else_=case((side.is_(None), NOT_GIVEN), else_=AXIS_CODES[Side.TIE]),
    )  # fmt: skip


def drawn_weight(
    strength: npt.NDArray[np.float64],
    chance: npt.NDArray[np.float64],
    people: npt.NDArray[np.bool_],
) -> npt.NDArray[np.float64]:
    """The boards' weight of each verdict: its strength, and for a people's verdict on a pair
    drawn for people (``people.judge_pairs``) its strength over the pair's chance, scaled so
    that people's verdicts keep their total weight. Uniform chances change nothing; unequal
    ones (``people.assist: active``) undo the draw, so every board of people's verdicts
    estimates what it would from pairs drawn uniformly."""
    drawn = people & np.isfinite(chance) & (chance > 0)
    if not drawn.any():
        return strength
    spread = np.where(drawn, strength / np.where(drawn, chance, 1.0), strength)
    total = spread[people].sum()
    out = strength.copy()
    out[people] = spread[people] * (strength[people].sum() / total)
    return out


def load_comparisons(store: Store, *, source: Source = "llm") -> Comparisons:
    """Every judgment that counts (``counted_judgment``) from judges of ``source`` ("llm",
    "human" or "all"), as arrays."""
    # one row per verdict: its names, then numbers the database reads out of it (the axes out
    # of the JSON): whether a was shown first, the outcome, the strength, and per axis its
    # outcome and strength
    axes = [axis.value for axis in Axis]
    query = (
        select(
            JudgmentRow.id,
            JudgmentRow.judge,
            JudgmentRow.pair_id,
            case((JudgmentRow.order == Order.AB.value, 1), else_=0),
            _side_code(JudgmentRow.winner),
            func.coalesce(func.nullif(JudgmentRow.strength, 0), 1),
            *(_side_code(JudgmentRow.axes[(axis, "winner")].as_string()) for axis in axes),
            *(func.coalesce(JudgmentRow.axes[(axis, "strength")].as_integer(), 0) for axis in axes),
        )
        .join(PairRow, PairRow.id == JudgmentRow.pair_id)
        .join(ItemRow, ItemRow.id == PairRow.item_id)
        .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
        .where(counted_judgment())
        .order_by(JudgmentRow.id)
    )
    if source != "all":
        query = query.where(JudgeRow.source == source)
    pairs_query = select(
        PairRow.id, PairRow.a_id, PairRow.b_id, PairRow.item_id, ItemRow.conversation_id,
        ItemRow.subset, PairRow.people_chance,
    ).join(ItemRow, ItemRow.id == PairRow.item_id)  # fmt: skip
    with store.session() as session:
        connection = session.connection()  # plain rows: no ORM bookkeeping on large studies
        columns = query_columns(connection, query, 6 + 2 * len(axes))
        pair_info = {r[0]: tuple(r[1:]) for r in connection.execute(pairs_query)}
        completions = {
            r.id: (r.system, len(r.text.split()))
            for r in connection.execute(
                select(CompletionRow.id, CompletionRow.system, CompletionRow.text)
            )
        }
        roster = {
            r.name: (r.kind, r.family)
            for r in connection.execute(select(SystemRow.name, SystemRow.kind, SystemRow.family))
        }
        judge_rows = connection.execute(
            select(JudgeRow.name, JudgeRow.family, JudgeRow.source)
        ).all()
    judge_info = {name: (family, src) for name, family, src in judge_rows}
    n, n_axes = len(columns[0]), len(axes)
    # one list per column: each is read in one pass, without a row object per cell
    id_of, judge_of, pair_of, *numbers = columns
    codes = np.asarray(numbers, dtype=np.int64).reshape(len(numbers), n)
    del columns, numbers
    order_ab, outcome, strength = codes[0] == 1, np.minimum(codes[1], 2), codes[2]
    axis_codes = np.ascontiguousarray(codes[3 : 3 + n_axes].T)  # (verdicts, axes)
    axis_strength = np.ascontiguousarray(codes[3 + n_axes :].T)
    # the pairs in order of their first verdict, and what each pair holds
    p_index = {pid: i for i, pid in enumerate(dict.fromkeys(pair_of))}
    a_of, b_of, item_of, conversation_of, subset_col, chance_col = (
        (list(column) for column in zip(*(pair_info[p] for p in p_index), strict=True))
        if p_index
        else ([], [], [], [], [], [])
    )
    system_a = [completions[c][0] for c in a_of]
    system_b = [completions[c][0] for c in b_of]
    systems = sorted(set(system_a) | set(system_b))
    judges = sorted(set(judge_of))
    judge_names = {j: i for i, j in enumerate(judges)}
    conversations = sorted(set(conversation_of))
    subset_of = dict(zip(item_of, subset_col, strict=True))
    items = sorted(subset_of)
    used = sorted(set(a_of) | set(b_of))
    s_index = {s: i for i, s in enumerate(systems)}
    c_index = {c: i for i, c in enumerate(conversations)}
    i_index = {it: i for i, it in enumerate(items)}
    cp_index = {cp: i for i, cp in enumerate(used)}

    def ints(values: Iterable[int], count: int) -> Ints:
        return np.fromiter(values, dtype=np.int64, count=count)

    pair = ints(map(p_index.__getitem__, pair_of), n)
    m = len(p_index)
    chance = np.asarray([np.nan if c is None else c for c in chance_col], dtype=np.float64)
    chance = chance.reshape(-1)[pair]
    judge_index = ints(map(judge_names.__getitem__, judge_of), n)
    people = np.asarray([judge_info.get(j, ("", ""))[1] == "human" for j in judges] + [False])
    weight = drawn_weight(strength.astype(np.float64), chance, people[judge_index])

    def per_row(values: Iterable[int]) -> Ints:
        """A value of each pair, on each of its verdicts' rows."""
        return ints(values, m)[pair]

    return Comparisons(
        systems=systems,
        judges=judges,
        conversations=conversations,
        a=per_row(s_index[s] for s in system_a),
        b=per_row(s_index[s] for s in system_b),
        outcome=outcome,
        strength=weight,
        axis_outcome=np.minimum(axis_codes, 2),
        judge=judge_index,
        conversation=per_row(c_index[c] for c in conversation_of),
        first_won=np.where(order_ab, outcome == 0, outcome == 1),
        length_a=per_row(completions[c][1] for c in a_of),
        length_b=per_row(completions[c][1] for c in b_of),
        pair=pair,
        order_ab=order_ab,
        system_kinds=[roster.get(s, ("", ""))[0] for s in systems],
        system_families=[roster.get(s, ("", ""))[1] for s in systems],
        judge_families=[judge_info.get(j, ("", ""))[0] for j in judges],
        judge_sources=[judge_info.get(j, ("", ""))[1] for j in judges],
        items=items,
        item=per_row(i_index[i] for i in item_of),
        item_subsets=[subset_of[i] for i in items],
        completions=used,
        completion_a=per_row(cp_index[c] for c in a_of),
        completion_b=per_row(cp_index[c] for c in b_of),
        axis_strength=axis_strength.astype(np.float64),
        axis_given=axis_codes != NOT_GIVEN,
        judgments=list(id_of),
        pair_chance=chance,
    )
