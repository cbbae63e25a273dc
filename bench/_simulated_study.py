"""A simulated study for the report benches: systems of known strengths, every pair of every
item judged by LLM judges, a share of the pairs by human raters, a rationale on every verdict,
times to first token and a capability index, written to a SQLite store the way an import writes
rows (bulk inserts, in chunks), so that every section of the report has work to do."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
from scipy.special import expit
from sqlalchemy import insert

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from heart.store import (  # noqa: E402
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    RaterRow,
    SystemRow,
    open_store,
)

RATERS_PER_PAIR = 3
UNTIMED = 2  # systems without times to first token
CHUNK = 50_000  # verdicts held in memory before they are inserted
QUOTES = "\"'“”‘’"  # marks that may quote a reply
# Rationale sentences about the winner ({w}) and the loser ({l}); the rule coder finds themes in
# most of them, and leaves a few with none.
PRAISE = [
    "Reply {w} names the feeling and asks one concrete question.",
    "{w} sounds natural and warm; {l} reads like a script.",
    "{w} offers a small next step she can take today.",
    "Reply {w} reflects back what he said, while {l} brushes it off.",
    "{w} validates how hard this is and stays in role.",
    "{l} is too long and generic.",
    "Both are fine but {w} is more specific.",
    "{w} is better.",
]


def _verdict(rng: np.random.Generator, pid: str, judge: str, a_won: bool) -> dict[str, Any]:
    """One verdict on pair ``pid``, its axes agreeing with the overall winner, with a rationale
    that says why in the pair's terms."""
    axes = {
        a: {"winner": "a" if a_won else "b", "strength": int(rng.integers(1, 6))} for a in "HEART"
    }
    winner, loser = ("A", "B") if a_won else ("B", "A")
    why = PRAISE[int(rng.integers(len(PRAISE)))].format(w=winner, l=loser)
    return {"id": f"{pid}-{judge}", "pair_id": pid, "judge": judge, "order": "ab",
            "status": "ok", "winner": "a" if a_won else "b", "strength": int(rng.integers(1, 6)),
            "axes": axes, "rationale": why, "refused": [], "created_at": "x"}  # fmt: skip


def write_study(
    root: Path, n_items: int, n_systems: int, n_judges: int, human_pairs: int, seed: int = 0
) -> tuple[int, int]:
    """A study folder with its study.yaml, a capability index (index.csv) and a store holding
    every pair of every item judged by each judge, and ``human_pairs`` pairs (spread over the
    items) judged by three raters each; returns the numbers of LLM and human verdicts."""
    systems = [f"model-{i:02d}" for i in range(n_systems)]
    judges = [f"judge-{j}" for j in range(n_judges)]
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.7, n_systems)
    index = ["system,value"] + [
        f"{s},{50 + 10 * t + rng.normal(0, 4):.3f}" for s, t in zip(systems, theta, strict=True)
    ]
    (root / "index.csv").write_text("\n".join(index) + "\n", encoding="utf-8")
    lines = ["name: report-speed", "systems:"]
    lines += [
        f"  - {{name: {s}, kind: model, family: {s}, model: {{provider: openai, model: {s}}}}}"
        for s in systems
    ]
    lines += ["judges:"] + [f"  - {{name: {j}, family: other-{j}, model: {{}}}}" for j in judges]
    lines += ["ratings:", "  capability_index: index.csv"]
    (root / "study.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    n_pairs = n_items * n_systems * (n_systems - 1) // 2
    rated = set(rng.choice(n_pairs, size=min(human_pairs, n_pairs), replace=False).tolist())
    raters = [f"rater-{r:03d}" for r in range(60)]
    ttft_median = rng.lognormal(np.log(600), 0.8, n_systems)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    rows: dict[type, list[dict[str, Any]]] = {
        t: []
        for t in (ConversationRow, ItemRow, SystemRow, JudgeRow, RaterRow, CompletionRow, PairRow)
    }
    verdicts: list[dict[str, Any]] = []
    rows[SystemRow] = [{"name": s, "kind": "model", "family": s, "spec": {}} for s in systems]
    rows[JudgeRow] = [
        {"name": j, "source": "llm", "family": f"other-{j}", "spec": {}} for j in judges
    ] + [{"name": r, "source": "human", "family": "human", "spec": {}} for r in raters]
    rows[RaterRow] = [{"id": r, "meta": {}, "created_at": "x"} for r in raters]
    n_llm = n_human = pair_number = 0

    def flush() -> None:
        """Insert the rows made so far, the verdicts last, in one transaction."""
        with store.session() as session:
            for table, values in rows.items():
                if values:
                    session.execute(insert(table), values)
                values.clear()
            if verdicts:
                session.execute(insert(JudgmentRow), verdicts)
            verdicts.clear()

    words = ["so", "sorry", "that", "sounds", "hard", "what", "helps", "you", "most", "now"]
    for i in range(n_items):
        rows[ConversationRow].append(
            {"id": f"c{i}", "problem_type": "p", "emotion_type": "e", "experience_type": "",
             "situation": "", "survey": {}, "turns": [], "origin": {}}
        )  # fmt: skip
        rows[ItemRow].append(
            {"id": f"i{i}", "content_hash": f"h{i}", "subset": "regular",
             "conversation_id": f"c{i}", "turn_index": 3, "context": [], "reference": "r",
             "problem_type": "p", "emotion_type": "e", "situation": "", "meta": {}}
        )  # fmt: skip
        for k, s in enumerate(systems):
            text = " ".join(rng.choice(words, int(rng.integers(8, 40))))
            ttft = None if k < UNTIMED else float(ttft_median[k] * rng.lognormal(0, 0.3))
            rows[CompletionRow].append(
                {"id": f"cp{i}-{s}", "item_id": f"i{i}", "system": s, "contributor": "",
                 "status": "ok", "text": text, "created_at": "x", "ttft_ms": ttft,
                 "latency_ms": None if ttft is None else ttft * 4}
            )  # fmt: skip
        for x, y in itertools.combinations(range(n_systems), 2):
            pid = f"p{i}-{x}-{y}"
            rows[PairRow].append(
                {"id": pid, "item_id": f"i{i}", "a_id": f"cp{i}-{systems[x]}",
                 "b_id": f"cp{i}-{systems[y]}", "design": "all"}
            )  # fmt: skip
            p_a = expit(theta[x] - theta[y])
            for j in judges:
                verdicts.append(_verdict(rng, pid, j, bool(rng.random() < p_a)))
            n_llm += len(judges)
            if pair_number in rated:
                for r in rng.choice(raters, RATERS_PER_PAIR, replace=False):
                    verdicts.append(_verdict(rng, pid, str(r), bool(rng.random() < p_a)))
                n_human += RATERS_PER_PAIR
            pair_number += 1
        if len(verdicts) >= CHUNK:  # a study of a million verdicts need not sit in memory
            flush()
    flush()
    store.close()
    return n_llm, n_human


def code_rationales(root: Path) -> tuple[int, int]:
    """The rule coder's stage, as `heart run` runs it, storing what it stores: (rationales coded,
    themes found). The simulated rationales are a few sentences that quote no reply, so their
    codes do not depend on the replies: each distinct sentence is read once and its codes are
    stored for every verdict that gives it."""
    from heart.rationales import code as stage
    from heart.rationales import load_codebook
    from heart.rationales._rules import code_rationale as read

    seen: dict[str, list[Any]] = {}

    def once(rationale: str, codebook: Any, first: str = "", second: str = "") -> list[Any]:
        if any(mark in rationale for mark in QUOTES):  # a quote is placed by the replies
            return read(rationale, codebook, first, second)
        if rationale not in seen:
            seen[rationale] = read(rationale, codebook, first, second)
        return seen[rationale]

    store = open_store(f"sqlite:///{root / 'heart.db'}")
    with patch.object(stage, "code_rationale", once):
        summary = stage.code_with_rules(store, load_codebook())
    store.close()
    return summary.coded, summary.codes
