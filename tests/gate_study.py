"""Simulated studies for the regression gate: a baseline, a candidate and two other systems of
known strength per HEART axis, every pair of every item judged by LLM judges with a verdict per
axis, written to a SQLite store the way an import writes rows. Two items share a conversation,
and each system's reply to an item has its own quality, so verdicts within a conversation are
correlated as real ones are."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import expit
from sqlalchemy import insert

from heart.ids import completion_id
from heart.stats import ELO_SCALE
from heart.store import (
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    Store,
    SystemRow,
    open_store,
)

AXES = "HEART"
SYSTEMS = ("baseline", "candidate", "ref-a", "ref-b")
STRENGTH = {"baseline": 0.0, "candidate": 0.0, "ref-a": 0.4, "ref-b": -0.4}  # θ on every axis
REPLY_SPREAD = 0.5  # sd of a reply's own quality (θ scale), shared by its axes
ITEMS_PER_CONVERSATION = 2


def study_file(judges: Sequence[str], rounds: int) -> str:
    """The study.yaml of a simulated study (its systems and LLM judges; no model is called)."""
    lines = ["name: gate", "systems:"]
    lines += [
        f"  - {{name: {s}, kind: model, family: {s}, model: {{provider: openai, model: {s}}}}}"
        for s in SYSTEMS
    ]
    lines += ["judges:"] if judges else []
    lines += [f"  - {{name: {j}, family: fam-{j}, model: {{provider: openai, model: {j}}}}}"
              for j in judges]  # fmt: skip
    lines += ["ratings:", f"  bootstrap_rounds: {rounds}"]
    return "\n".join(lines) + "\n"


def simulate(
    store: Store,
    *,
    items: int,
    drop: Mapping[str, float] | None = None,
    judges: Sequence[str] = ("judge-1", "judge-2"),
    first_shown: Sequence[str] = (),
    seed: int = 0,
    start: int = 0,
) -> int:
    """Store ``items`` items (numbered from ``start``), every system's reply to each and every
    pair judged once by each judge, and return the verdicts stored. ``drop`` lowers the
    candidate on an axis by so many Elo; its overall verdicts follow the mean of its axes. The
    judges of ``first_shown`` pick the reply shown first, whatever it is. Without judges no pair
    is stored (verdicts can then be imported)."""
    rng = np.random.default_rng(seed)
    theta = {s: np.full(len(AXES), STRENGTH[s]) for s in SYSTEMS}
    for axis, elo in (drop or {}).items():
        theta["candidate"][AXES.index(axis)] -= elo / ELO_SCALE
    rows: dict[type, list[dict[str, Any]]] = {
        t: [] for t in (SystemRow, JudgeRow, ConversationRow, ItemRow, CompletionRow, PairRow)
    }
    if start == 0:
        rows[SystemRow] = [{"name": s, "kind": "model", "family": s, "spec": {}} for s in SYSTEMS]
        rows[JudgeRow] = [
            {"name": j, "source": "llm", "family": f"fam-{j}", "spec": {}} for j in judges
        ]
    verdicts: list[dict[str, Any]] = []
    for i in range(start, start + items):
        conversation = f"c{i // ITEMS_PER_CONVERSATION}"
        if i % ITEMS_PER_CONVERSATION == 0 or i == start:
            rows[ConversationRow].append(
                {"id": conversation, "problem_type": "p", "emotion_type": "e",
                 "experience_type": "", "situation": "", "survey": {}, "turns": [], "origin": {}}
            )  # fmt: skip
        rows[ItemRow].append(
            {"id": f"i{i}", "content_hash": f"h{i}", "subset": "regular",
             "conversation_id": conversation, "turn_index": 3, "context": [], "reference": "r",
             "problem_type": "p", "emotion_type": "e", "situation": "", "meta": {}}
        )  # fmt: skip
        quality = {s: theta[s] + rng.normal(0.0, REPLY_SPREAD) for s in SYSTEMS}
        for s in SYSTEMS:
            words = " ".join(["word"] * int(rng.integers(10, 30)))
            rows[CompletionRow].append(
                {"id": completion_id(f"i{i}", s), "item_id": f"i{i}", "system": s,
                 "contributor": "", "status": "ok", "text": words, "created_at": "x"}
            )  # fmt: skip
        for x, y in itertools.combinations(SYSTEMS, 2) if judges else ():
            pid = f"p{i}-{x}-{y}"
            rows[PairRow].append(
                {"id": pid, "item_id": f"i{i}", "a_id": completion_id(f"i{i}", x),
                 "b_id": completion_id(f"i{i}", y), "design": "all"}
            )  # fmt: skip
            gap = quality[x] - quality[y]
            for j in judges:
                order = "ab" if rng.random() < 0.5 else "ba"
                a_axes = rng.random(len(AXES)) < expit(gap)
                a_won = bool(rng.random() < expit(gap.mean()))
                if j in first_shown:
                    a_won = order == "ab"
                    a_axes[:] = a_won
                axes = {
                    axis: {"winner": "a" if won else "b", "strength": int(rng.integers(1, 4))}
                    for axis, won in zip(AXES, a_axes, strict=True)
                }
                verdicts.append(
                    {"id": f"{pid}-{j}", "pair_id": pid, "judge": j, "order": order,
                     "status": "ok", "winner": "a" if a_won else "b",
                     "strength": int(rng.integers(1, 4)), "axes": axes, "rationale": "r",
                     "refused": [], "created_at": "x"}
                )  # fmt: skip
    with store.session() as session:
        for table, values in rows.items():
            if values:
                session.execute(insert(table), values)
        if verdicts:
            session.execute(insert(JudgmentRow), verdicts)
    return len(verdicts)


def write_gate_study(
    root: Path,
    *,
    items: int,
    drop: Mapping[str, float] | None = None,
    judges: Sequence[str] = ("judge-1", "judge-2"),
    first_shown: Sequence[str] = (),
    seed: int = 0,
    rounds: int = 400,
) -> Path:
    """A study folder at ``root`` (study.yaml and its SQLite store heart.db) with a simulated
    study in it (see ``simulate``)."""
    root.mkdir(parents=True)
    (root / "study.yaml").write_text(study_file(judges, rounds), encoding="utf-8")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    simulate(store, items=items, drop=drop, judges=judges, first_shown=first_shown, seed=seed)
    store.close()
    return root


def rater_file(path: Path, raters: Sequence[str], *, items: int, seed: int) -> int:
    """A judgments file (the import's CSV columns) in which each of ``raters`` compares the
    candidate and the baseline with each other system on every item, both as strong as each
    other, the reply shown first as a_system; returns its rows."""
    rng = np.random.default_rng(seed)
    lines = ["item_id,judge,a_system,b_system,winner,strength"]
    for i, r in itertools.product(range(items), raters):
        for x, y in itertools.combinations(SYSTEMS, 2):
            first, second = (x, y) if rng.random() < 0.5 else (y, x)
            gap = STRENGTH[first] - STRENGTH[second]
            winner = "a" if rng.random() < expit(gap) else "b"
            lines.append(f"i{i},{r},{first},{second},{winner},{int(rng.integers(1, 4))}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines) - 1
