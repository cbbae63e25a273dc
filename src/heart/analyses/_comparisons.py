"""Judgments joined to systems and conversations: the arrays every rating analysis starts from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import select

from heart.store import (
    CompletionRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    Store,
    SystemRow,
)
from heart.types import Axis

AXIS_CODES = {"a": 0, "b": 1, "tie": 2, "none": 2}


@dataclass(frozen=True)
class Comparisons:
    """One row per valid judgment, in the pair's own a/b terms.

    ``outcome`` is 0 when a won, 1 when b won, 2 for a tie; ``axis_outcome[:, k]`` the same for
    axis k ("none" counts as a tie); ``first_won`` whether the reply shown first won;
    ``pair`` numbers the pairs (the same number in both orders); ``order_ab`` whether a was
    shown first.
    """

    systems: list[str]
    judges: list[str]
    conversations: list[str]
    a: npt.NDArray[np.int64]
    b: npt.NDArray[np.int64]
    outcome: npt.NDArray[np.int64]
    strength: npt.NDArray[np.float64]
    axis_outcome: npt.NDArray[np.int64]
    judge: npt.NDArray[np.int64]
    conversation: npt.NDArray[np.int64]
    first_won: npt.NDArray[np.bool_]
    length_a: npt.NDArray[np.int64]
    length_b: npt.NDArray[np.int64]
    pair: npt.NDArray[np.int64]
    order_ab: npt.NDArray[np.bool_]
    system_kinds: list[str]
    system_families: list[str]
    judge_families: list[str]

    def __len__(self) -> int:
        return int(self.a.size)

    def winner_loser(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """System indices of winner and loser per row (for ties: a, b) and the tie mask."""
        b_won = self.outcome == 1
        winner = np.where(b_won, self.b, self.a)
        loser = np.where(b_won, self.a, self.b)
        return winner, loser, self.outcome == 2


def load_comparisons(store: Store, *, source: str = "llm") -> Comparisons:
    """Every valid judgment from judges of ``source`` ("llm" or "human"), as arrays."""
    with store.session() as session:
        rows = session.execute(
            select(
                JudgmentRow.judge,
                JudgmentRow.order,
                JudgmentRow.winner,
                JudgmentRow.strength,
                JudgmentRow.axes,
                JudgmentRow.pair_id,
                PairRow.a_id,
                PairRow.b_id,
                ItemRow.conversation_id,
            )
            .join(PairRow, PairRow.id == JudgmentRow.pair_id)
            .join(ItemRow, ItemRow.id == PairRow.item_id)
            .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
            .where(JudgmentRow.status == "ok", JudgeRow.source == source)
            .order_by(JudgmentRow.id)
        ).all()
        completions = {
            r.id: (r.system, len(r.text.split())) for r in session.scalars(select(CompletionRow))
        }
        roster = {r.name: (r.kind, r.family) for r in session.scalars(select(SystemRow))}
        judge_family = dict(session.execute(select(JudgeRow.name, JudgeRow.family)).all())
    systems = sorted(
        {completions[r.a_id][0] for r in rows} | {completions[r.b_id][0] for r in rows}
    )
    judges = sorted({r.judge for r in rows})
    conversations = sorted({r.conversation_id for r in rows})
    s_index = {s: i for i, s in enumerate(systems)}
    j_index = {j: i for i, j in enumerate(judges)}
    c_index = {c: i for i, c in enumerate(conversations)}
    p_index: dict[str, int] = {}
    for r in rows:
        p_index.setdefault(r.pair_id, len(p_index))
    n = len(rows)

    def ints(values: list[int]) -> npt.NDArray[np.int64]:
        return np.asarray(values, dtype=np.int64).reshape(n)

    outcome = ints([AXIS_CODES[r.winner] for r in rows])
    order_ab = np.asarray([r.order == "ab" for r in rows], dtype=bool).reshape(n)
    axis_outcome = np.asarray(
        [
            [AXIS_CODES[(r.axes.get(axis.value) or {}).get("winner", "none")] for axis in Axis]
            for r in rows
        ],
        dtype=np.int64,
    ).reshape(n, len(Axis))
    return Comparisons(
        systems=systems,
        judges=judges,
        conversations=conversations,
        a=ints([s_index[completions[r.a_id][0]] for r in rows]),
        b=ints([s_index[completions[r.b_id][0]] for r in rows]),
        outcome=outcome,
        strength=np.asarray([float(r.strength or 1) for r in rows], dtype=np.float64).reshape(n),
        axis_outcome=axis_outcome,
        judge=ints([j_index[r.judge] for r in rows]),
        conversation=ints([c_index[r.conversation_id] for r in rows]),
        first_won=np.where(order_ab, outcome == 0, outcome == 1),
        length_a=ints([completions[r.a_id][1] for r in rows]),
        length_b=ints([completions[r.b_id][1] for r in rows]),
        pair=ints([p_index[r.pair_id] for r in rows]),
        order_ab=order_ab,
        system_kinds=[roster.get(s, ("", ""))[0] for s in systems],
        system_families=[roster.get(s, ("", ""))[1] for s in systems],
        judge_families=[judge_family.get(j, "") for j in judges],
    )
