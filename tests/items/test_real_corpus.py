"""Item building on the real ESConv splits (skipped where the corpus is absent)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from heart.corpus import load_corpus
from heart.items import select_regular_items

from ..helpers import heart

PLANTS = {
    "unsafe:self_harm_plan": "I have been saving up pills and I am going to take all the pills "
    "this weekend.",
    "unsafe:identifying_info": "You can call me at 555-201-3344 if you want to talk more.",
}


def _study(root: Path, esconv: Path) -> Path:
    heart("init", root)
    path = root / "study.yaml"
    text = path.read_text().replace("# esconv: ESConv.json", f"esconv: {esconv}")
    path.write_text(text)
    return root


def _table(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_280_items_stable_across_runs_and_studies(esconv_splits: Path, tmp_path: Path) -> None:
    first = _study(tmp_path / "a", esconv_splits)
    out = heart("items", "build", "--study", first).stdout
    assert "280 regular items from 1300 conversations" in out

    items_sql = "SELECT id, content_hash, conversation_id, turn_index FROM items ORDER BY id"
    screening_sql = "SELECT * FROM screening ORDER BY conversation_id, turn_index"
    ids = _table(first / "heart.db", items_sql)
    assert len(ids) == 280
    assert "unchanged" in heart("items", "build", "--study", first).stdout
    second = _study(tmp_path / "b", esconv_splits)
    heart("items", "build", "--study", second)
    assert _table(second / "heart.db", items_sql) == ids
    assert _table(second / "heart.db", screening_sql) == _table(first / "heart.db", screening_sql)


def test_every_problem_type_within_two_of_its_share(esconv_splits: Path) -> None:
    corpus = load_corpus(esconv_splits)
    selection = select_regular_items(corpus.conversations, n_items=280, seed=0)
    shares = Counter(c.problem_type for c in corpus.conversations)
    got = Counter(i.problem_type for i in selection.items)
    for problem, n in shares.items():
        assert abs(got[problem] - 280 * n / len(corpus.conversations)) <= 2, problem
    per_dialogue = Counter(i.conversation_id for i in selection.items)
    assert max(per_dialogue.values()) <= 2


@pytest.mark.parametrize("rule", sorted(PLANTS))
def test_planted_unsafe_turns_never_become_items(
    esconv_splits: Path, tmp_path: Path, rule: str
) -> None:
    """Plant unsafe text into the seeker turns of conversations that were selected before."""
    corpus = load_corpus(esconv_splits)
    before = select_regular_items(corpus.conversations, n_items=280, seed=0)
    targets = {i.conversation_id: i.context[-1].parts[-1] for i in before.items[:25]}
    planted_dir = tmp_path / "planted"
    planted_dir.mkdir()
    for split in sorted(esconv_splits.iterdir()):
        lines = []
        for line in split.read_text().splitlines():
            record = json.loads(line)
            for turn in record["dialog"]:
                for conversation_id, text in targets.items():
                    if turn["speaker"] == "usr" and turn["text"] == text:
                        turn["text"] = f"{text} {PLANTS[rule]}"
                        record["_planted"] = conversation_id
            lines.append(json.dumps(record))
        (planted_dir / split.name).write_text("\n".join(lines))
    planted = load_corpus(planted_dir)
    after = select_regular_items(planted.conversations, n_items=280, seed=0)
    planted_ids = {c.id for c in planted.conversations} - {c.id for c in corpus.conversations}
    assert len(planted_ids) >= 20
    assert not planted_ids & {i.conversation_id for i in after.items}
    decided = {d.rule for d in after.decisions if d.conversation_id in planted_ids}
    assert decided == {rule}
    assert len(after.items) == 280
