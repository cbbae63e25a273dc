"""Which pairs people judge when ``people.judge_pairs`` sets how many: each pair is drawn once,
with a chance stored with it (``PairRow.people_chance``), uniform or, with ``people.assist:
active``, higher where the LLM judges are unsure or disagree. The chance is what the
judge-assisted board weighs people's verdicts by."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import PeopleSpec
from heart.ids import coin
from heart.stats import active_chances, judge_doubt
from heart.store import JudgeRow, JudgmentRow, PairRow, TaskRow, counted_judgment
from heart.types import Side

DRAW = "people-draw"


def drawn(seed: int, pair: str, chance: float) -> bool:
    """Whether ``pair`` is people's to judge: a seeded uniform draw below its chance."""
    return coin(seed, pair, DRAW) / 2**32 < chance


def people_pairs(session: Session, spec: PeopleSpec, seed: int) -> set[str] | None:
    """The pairs people judge: every pair (None) without ``judge_pairs``; else the pairs drawn
    so far, after drawing every pair not drawn yet (pairs seated before the setting stay
    people's, undrawn). Each new pair's chance is ``judge_pairs`` over the study's pairs
    (uniform), or with ``assist: active`` in proportion to its judges' doubt
    (``judge_doubt``), at least ``assist_floor`` of the uniform chance; it is stored with the
    pair."""
    if spec.judge_pairs is None:
        return None
    pairs = session.execute(select(PairRow.id, PairRow.people_chance)).all()
    seated = set(session.scalars(select(TaskRow.target).where(TaskRow.kind == "judge")))
    new = [pid for pid, chance in pairs if chance is None and pid not in seated]
    if new:
        uniform = min(1.0, spec.judge_pairs / len(pairs))
        chances = (
            _active(session, new, uniform * len(new), spec.assist_floor)
            if spec.assist == "active"
            else np.full(len(new), uniform)
        )
        rows = {row.id: row for row in session.scalars(select(PairRow).where(PairRow.id.in_(new)))}
        for pid, chance in zip(new, chances.tolist(), strict=True):
            rows[pid].people_chance = float(chance)
        session.flush()
    chance_of = dict(session.execute(select(PairRow.id, PairRow.people_chance)).all())
    return {
        pid
        for pid, chance in chance_of.items()
        if (chance is None and pid in seated) or (chance is not None and drawn(seed, pid, chance))
    }


def _active(session: Session, pairs: list[str], budget: float, floor: float) -> np.ndarray:
    """Chances over ``pairs`` summing to ``budget``, by their LLM judges' doubt."""
    index = {pid: n for n, pid in enumerate(pairs)}
    rows = session.execute(
        select(JudgmentRow.pair_id, JudgmentRow.winner, JudgmentRow.strength)
        .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
        .where(counted_judgment(), JudgeRow.source == "llm", JudgmentRow.pair_id.in_(pairs))
    ).all()
    share = {Side.A.value: 1.0, Side.B.value: 0.0}
    doubt = judge_doubt(
        np.array([share.get(w or "", 0.5) for _, w, _ in rows]),
        np.array([float(s or 1) for _, _, s in rows]),
        np.array([index[p] for p, _, _ in rows], dtype=np.int64),
        len(pairs),
    )
    return active_chances(doubt, budget, floor)
