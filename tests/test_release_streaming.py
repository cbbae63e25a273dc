"""A bundle is imported a table and a chunk of rows at a time: the rows stored are the same
whatever the chunk, a bundle refused in its last table leaves nothing behind, and memory holds a
chunk of rows and the keys later tables refer to, not every row."""

from __future__ import annotations

import itertools
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from heart import pipeline
from heart.config import STUDY_FILE
from heart.errors import ImportRefused
from heart.release import _bundles, _rows, export_bundle, import_bundle
from heart.store import (
    ClassificationRow,
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    PromptRow,
    RaterRow,
    RationaleCodeRow,
    RationaleCodingRow,
    RewriteRow,
    ScreeningRow,
    Store,
    SystemRow,
    open_store,
)

from .rows import refused_bundle, snapshot
from .test_release_bundles import _sign

SYSTEMS = ("m1", "m2", "m3")
JUDGES = ("j1", "j2")


def _study_rows(items: int, rationale: str) -> list[tuple[type[Any], list[dict[str, Any]]]]:
    """A row or more in every table a bundle carries: ``items`` items with a reply of each
    system, every pair judged by each judge (with ``rationale``), and on item 0 a screening, a
    rewrite, people's labels, the classifier's answers and the rule coder's codes."""
    pairs = [
        (f"p{i}-{x}-{y}", i, x, y)
        for i in range(items)
        for x, y in itertools.combinations(SYSTEMS, 2)
    ]
    verdicts = [(f"{pid}-{j}", pid, i) for pid, i, _, _ in pairs for j in JUDGES]
    coded = [jid for jid, _, i in verdicts if i == 0]
    return [
        (SystemRow, [{"name": s, "kind": "model", "family": s} for s in SYSTEMS]),
        (JudgeRow, [{"name": j, "source": "llm", "family": "other"} for j in JUDGES]),
        (RaterRow, [{"id": r, "created_at": "x"} for r in ("r1", "r2")]),
        (PromptRow, [{"hash": "ph", "name": "judge", "version": "1", "text": "Which?"}]),
        (ConversationRow, [
            {"id": f"c{i}", "problem_type": "p", "emotion_type": "e", "turns": []}
            for i in range(items)
        ]),
        (ItemRow, [
            {"id": f"i{i}", "content_hash": f"h{i}", "subset": "regular",
             "conversation_id": f"c{i}", "turn_index": 3, "context": [], "reference": "r",
             "problem_type": "p", "emotion_type": "e"}
            for i in range(items)
        ]),
        (ScreeningRow, [{"conversation_id": "c0", "turn_index": 3, "kept": True, "rule": "ok"}]),
        (RewriteRow, [
            {"id": "rw0", "conversation_id": "c0", "start": 0, "end": 2, "profile": "hostile",
             "targets": [1], "status": "kept", "attempts": 1, "created_at": "x"}
        ]),
        (CompletionRow, [
            {"id": f"cp{i}-{s}", "item_id": f"i{i}", "system": s, "status": "ok",
             "text": f"reply {s}", "latency_ms": 12.5, "created_at": "x"}
            for i in range(items) for s in SYSTEMS
        ]),
        (PairRow, [
            {"id": pid, "item_id": f"i{i}", "a_id": f"cp{i}-{x}", "b_id": f"cp{i}-{y}",
             "design": "all"}
            for pid, i, x, y in pairs
        ]),
        (JudgmentRow, [
            {"id": jid, "pair_id": pid, "judge": jid.rsplit("-", 1)[1], "order": "ab",
             "status": "ok", "winner": "a", "strength": 2,
             "axes": {"H": {"winner": "a", "strength": 3}}, "rationale": rationale,
             "created_at": "x"}
            for jid, pid, _ in verdicts
        ]),
        (LabelRow, [
            {"id": f"l{r}", "completion_id": "cp0-m1", "rater_id": r, "strategies": ["Questions"],
             "created_at": "x"}
            for r in ("r1", "r2")
        ]),
        (ClassificationRow, [
            {"id": f"k{s}", "completion_id": f"cp0-{s}", "classifier": "model",
             "taxonomy_hash": "t", "status": "ok", "labels": {"Questions": {"status": "present"}},
             "created_at": "x"}
            for s in SYSTEMS
        ]),
        (RationaleCodingRow, [
            {"id": f"rc-{jid}", "judgment_id": jid, "coder": "rules", "codebook_hash": "cb",
             "status": "ok", "created_at": "x"}
            for jid in coded
        ]),
        (RationaleCodeRow, [
            {"id": f"code-{jid}", "coding_id": f"rc-{jid}", "judgment_id": jid, "coder": "rules",
             "codebook_hash": "cb", "theme": "empathy", "side": "a", "evidence": "warm"}
            for jid in coded
        ]),
    ]  # fmt: skip


def _bundle(tmp_path: Path, items: int, rationale: str = "Reply A is warmer.") -> Path:
    """The bundle of a study of ``items`` items holding a row or more in every table."""
    root, out = tmp_path / f"study-{items}", tmp_path / f"bundle-{items}"
    root.mkdir()
    roster = "".join(f"  - {{name: {s}, kind: dataset, family: d}}\n" for s in SYSTEMS)
    (root / STUDY_FILE).write_text(f"name: t\nsystems:\n{roster}", encoding="utf-8")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    with store.session() as session:
        for model, rows in _study_rows(items, rationale):
            session.execute(insert(model), rows)
    export_bundle(store, root, out)
    store.close()
    return out


def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows read 5, inserted 3 and looked up 2 at a time, so that every table spans chunks."""
    monkeypatch.setattr(_bundles, "CHUNK", 5)
    monkeypatch.setattr(_rows, "INSERT", 3)
    monkeypatch.setattr(_rows, "LOOKUP", 2)


def _store(path: Path) -> Store:
    return open_store(f"sqlite:///{path}")


def _rows_of(store: Store) -> dict[str, list[str]]:
    """Every row of every table but the imported provenance (which says when it was stored)."""
    rows = snapshot(store)
    rows.pop("bundle_provenance")
    return rows


def test_a_bundle_stores_the_same_rows_whatever_the_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _bundle(tmp_path, items=4)
    manifest = json.loads((bundle / "manifest.json").read_text())
    rows = {name: e["rows"] for name, e in manifest["files"].items() if e["rows"] is not None}
    assert len(rows) == 15 and all(rows.values()) and rows["judgments.jsonl"] == 24
    whole, chunked = _store(tmp_path / "whole.db"), _store(tmp_path / "chunked.db")
    assert import_bundle(whole, bundle).added == {**rows, "provenance.json": 1}
    _small_chunks(monkeypatch)
    assert import_bundle(chunked, bundle).added == {**rows, "provenance.json": 1}
    assert _rows_of(chunked) == _rows_of(whole)
    # what was stored is what was exported: the copy exports to the same files
    export_bundle(chunked, tmp_path / f"study-{4}", tmp_path / "again")
    for name in rows:
        assert (tmp_path / "again" / name).read_bytes() == (bundle / name).read_bytes(), name
    again = import_bundle(chunked, bundle)  # every row stored already, a chunk at a time
    assert again.added == {} and again.unchanged == rows
    assert _rows_of(chunked) == _rows_of(whole)


def test_a_row_repeated_chunks_later_is_counted_or_refused_with_both_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _bundle(tmp_path, items=4)
    _small_chunks(monkeypatch)
    path = bundle / "judgments.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines) + lines[0], encoding="utf-8")  # line 25 repeats line 1
    _sign(bundle)
    summary = import_bundle(_store(tmp_path / "same.db"), bundle)
    assert summary.added["judgments.jsonl"] == 24 and summary.repeated == {"judgments.jsonl": 1}
    path.write_text("".join(lines) + json.dumps({**json.loads(lines[0]), "winner": "b"}))
    _sign(bundle)
    assert refused_bundle(bundle, tmp_path / "differs.db") == (
        f"{path} line 25: line 1 gives the row with key ['p0-m1-m2-j1'] already, and this one "
        "differs in ['winner']; keep one"
    )


def test_a_bundle_refused_in_its_last_table_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _bundle(tmp_path, items=4)
    _small_chunks(monkeypatch)
    path = bundle / "rationale_codes.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    last = json.loads(lines[-1])
    last["judgment_id"] = "p9-m1-m2-j1"
    path.write_text("".join(lines[:-1]) + json.dumps(last) + "\n", encoding="utf-8")
    _sign(bundle)
    message = (
        f"{path} line {len(lines)}: 'judgment_id' refers to unknown judgment 'p9-m1-m2-j1'; add "
        "it to the study (or the bundle) first"
    )
    # into a store (every table before it stored, then rolled back) ...
    assert refused_bundle(bundle, tmp_path / "refused.db") == message
    # ... and into a new folder, which is not left behind
    with pytest.raises(ImportRefused, match="refers to unknown judgment"):
        pipeline.import_into(tmp_path / "new" / "study", bundle)
    assert not (tmp_path / "new").exists()


def _peak_bytes(bundle: Path, db: Path) -> int:
    """The most memory Python held while ``bundle`` was imported into a new store at ``db``."""
    store = _store(db)
    tracemalloc.start()
    try:
        import_bundle(store, bundle)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        store.close()


def test_memory_holds_a_chunk_of_rows_not_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bundles, "CHUNK", 200)
    rationale = "Reply A names the feeling and asks one question. " * 80  # 4,000 characters
    small, large = _bundle(tmp_path, 100, rationale), _bundle(tmp_path, 400, rationale)
    grown = _peak_bytes(large, tmp_path / "large.db") - _peak_bytes(small, tmp_path / "small.db")
    # 300 more items: 1,800 more verdicts of 4 KB each (7.2 MB held if every row were), and
    # about 4,000 more rows in all, whose keys are held
    assert grown < 2_500_000, f"{grown:,} bytes more"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a\u202eb", "holds an invisible control character (U+202E RIGHT-TO-LEFT OVERRIDE) at "),
        ("a\bb", "holds an invisible control character (U+0008) at character 2"),
        ("a\x7fb", "holds an invisible control character (U+007F) at character 2"),
    ],
)
def test_a_refused_character_in_a_line_as_export_writes_it_is_refused(
    tmp_path: Path, text: str, problem: str
) -> None:
    bundle = _bundle(tmp_path, items=1)
    path = bundle / "completions.jsonl"
    first, *rest = path.read_text(encoding="utf-8").splitlines(keepends=True)
    line = _bundles._line({**json.loads(first), "text": text}).removesuffix("\n")
    assert (text in line) == (text != "a\bb")  # written as it is, but for \b (an escape)
    path.write_text(line + "\n" + "".join(rest), encoding="utf-8")
    _sign(bundle)
    assert refused_bundle(bundle, tmp_path / "refused.db").startswith(
        f"{path} line 1: 'text' {problem}"
    )


@pytest.mark.parametrize(
    ("given", "twice"),
    [
        ('"text":"sneaked in","text":', "text"),
        ('"text" :"sneaked in","text":', "text"),
        ('"text":"sneaked in", "text"\t:', "text"),
        ('"spec":{"a":1,"a":2},"text":', "spec"),
        ('"text":{"k":1,"k":2},"status":"ok","text":', "k"),  # the first given twice, nested
        ('"text":{"k":{"k":1},"k":2}, "x":', "k"),  # nested twice in a column that holds no JSON
    ],
)
def test_a_key_given_twice_is_refused_however_spaced(
    tmp_path: Path, given: str, twice: str
) -> None:
    bundle = _bundle(tmp_path, items=1)
    path = bundle / "completions.jsonl"
    first, *rest = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(first.replace('"text":', given, 1) + "".join(rest), encoding="utf-8")
    _sign(bundle)
    name = "a" if twice == "spec" else twice
    assert refused_bundle(bundle, tmp_path / "refused.db") == (
        f"{path} line 1: '{name}' is given twice; keep one"
    )


def test_later_tables_are_checked_against_the_keys_the_import_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table the import added is not read back for the references of the tables after it:
    the keys it held and was given are those the store then holds, on a first import and on
    one that gives them again."""
    bundle = _bundle(tmp_path, items=4)
    store = _store(tmp_path / "study.db")
    read_back: list[str] = []
    kept: dict[str, set[Any] | None] = {}
    reads, keys_of = _rows.existing_keys, _rows._TableAdd.stored_keys

    def existing_keys(session: Any, name: str, column: str) -> set[Any]:
        read_back.append(name)
        return reads(session, name, column)

    def stored_keys(table: _rows._TableAdd, column: str) -> set[Any] | None:
        kept[f"{table.name} {column}"] = keys = keys_of(table, column)
        return keys

    monkeypatch.setattr(_rows, "existing_keys", existing_keys)
    monkeypatch.setattr(_rows._TableAdd, "stored_keys", stored_keys)
    for again in (False, True):
        kept.clear()
        summary = import_bundle(store, bundle)
        assert bool(summary.unchanged) == again and read_back == []
        with store.session() as session:
            for name in ("judgments.jsonl", "rationale_codings.jsonl", "pairs.jsonl"):
                assert kept[f"{name} id"] == reads(session, name, "id") != set()
        assert kept["judges.jsonl name"] == {"j1", "j2"}
