"""Import refuses rows that reference unknown items or systems, and never half-imports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select

from heart.errors import ImportRefused
from heart.release import export_bundle, import_bundle, import_table
from heart.store import CompletionRow, JudgeRow, JudgmentRow, PairRow, Store, open_store
from heart.types import sha256_hex

from .rows import seed_study


def _study(store: Store, root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "study.yaml").write_text("name: t\nsystems: []\n")
    seed_study(store, ["m1", "m2"], items=1)


def _completions(store: Store) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(CompletionRow)) or 0)


def test_completions_file_with_unknown_item_is_refused_whole(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    path = tmp_path / "c.csv"
    path.write_text("item_id,system,text\ni0,m1,first reply\ni9,m1,orphan reply\n")
    with pytest.raises(
        ImportRefused, match=r"c\.csv line 3: 'item_id' refers to unknown item 'i9'"
    ):
        import_table(store, path, "completions", seed=0)
    assert _completions(store) == 0


def test_completions_file_with_unknown_system_is_refused(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"item_id": "i0", "system": "nobody", "text": "x"}) + "\n")
    with pytest.raises(
        ImportRefused, match=r"c\.jsonl line 1: 'system' refers to unknown system 'nobody'"
    ):
        import_table(store, path, "completions", seed=0)
    assert _completions(store) == 0


def test_completions_then_human_judgments_import(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    completions = tmp_path / "c.csv"
    completions.write_text("item_id,system,text\ni0,m1,one\ni0,m2,two\n")
    assert import_table(store, completions, "completions", seed=0).added == {"completions.jsonl": 2}
    judgments = tmp_path / "j.csv"
    judgments.write_text(
        "item_id,judge,a_system,b_system,winner,strength,rationale\n"
        "i0,rater-1,m1,m2,a,2,warmer\n"
        "i0,rater-2,m2,m1,tie,1,same\n"
    )
    summary = import_table(store, judgments, "judgments", seed=0)
    assert summary.added == {"judges.jsonl": 2, "pairs.jsonl": 1, "judgments.jsonl": 2}
    with store.session() as s:
        rows = {r.judge: r for r in s.scalars(select(JudgmentRow))}
        completions_by_id = {c.id: c.system for c in s.scalars(select(CompletionRow))}
        from heart.store import PairRow

        pair = s.scalars(select(PairRow)).one()
    winner_system = completions_by_id[pair.a_id if rows["rater-1"].winner == "a" else pair.b_id]
    assert winner_system == "m1"
    assert rows["rater-2"].winner == "tie"


def test_judgment_for_missing_completion_is_refused(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    judgments = tmp_path / "j.csv"
    judgments.write_text("item_id,judge,a_system,b_system,winner\ni0,r,m1,m2,a\n")
    with pytest.raises(ImportRefused, match="line 2: item 'i0' has no stored completion"):
        import_table(store, judgments, "judgments", seed=0)


def test_bad_winner_names_the_line(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    judgments = tmp_path / "j.csv"
    judgments.write_text("item_id,judge,a_system,b_system,winner\ni0,r,m1,m2,A+\n")
    with pytest.raises(ImportRefused, match="line 2: 'winner' must be a, b or tie"):
        import_table(store, judgments, "judgments", seed=0)


def test_tampered_bundle_is_refused(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path / "s")
    bundle = tmp_path / "bundle"
    export_bundle(store, tmp_path / "s", bundle)
    items = bundle / "items.jsonl"
    items.write_text(items.read_text().replace('"reference":"r"', '"reference":"changed"'))
    with pytest.raises(ImportRefused, match="sha256 differs"):
        import_bundle(store, bundle)


def test_bundle_row_conflicting_with_stored_row_is_refused(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path / "s")
    bundle = tmp_path / "bundle"
    export_bundle(store, tmp_path / "s", bundle)
    other = tmp_path / "other"
    shutil.copytree(bundle, other)
    items = other / "items.jsonl"
    items.write_text(items.read_text().replace('"reference":"r"', '"reference":"changed"'))
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["files"]["items.jsonl"]["sha256"] = sha256_hex(items.read_text())
    (other / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ImportRefused, match=r"items\.jsonl line 1: a different row"):
        import_bundle(store, other)


def test_a_bundle_from_before_a_new_column_imports_with_its_default(
    store: Store, tmp_path: Path
) -> None:
    _study(store, tmp_path / "s")
    with store.session() as s:
        s.add(CompletionRow(id="c1", item_id="i0", system="m1", contributor="", status="ok",
                            text="a", created_at="x"))  # fmt: skip
        s.add(CompletionRow(id="c2", item_id="i0", system="m2", contributor="", status="ok",
                            text="b", created_at="x"))  # fmt: skip
        s.add(PairRow(id="p1", item_id="i0", a_id="c1", b_id="c2", design="all"))
        s.add(JudgeRow(name="j", source="llm", family="x", spec={}))
        s.flush()
        s.add(JudgmentRow(id="jd1", pair_id="p1", judge="j", order="ab", status="ok",
                          winner="a", strength=2, created_at="x"))  # fmt: skip
    bundle = tmp_path / "bundle"
    export_bundle(store, tmp_path / "s", bundle)
    judgments = bundle / "judgments.jsonl"
    rows = [json.loads(line) for line in judgments.read_text().splitlines()]
    for row in rows:
        del row["refused"]  # as written before judgments kept refused answers
    judgments.write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"]["judgments.jsonl"]["sha256"] = sha256_hex(judgments.read_text())
    (bundle / "manifest.json").write_text(json.dumps(manifest))

    fresh = open_store(f"sqlite:///{tmp_path / 'fresh.db'}")
    import_bundle(fresh, bundle)
    with fresh.session() as s:
        row = s.get(JudgmentRow, "jd1")
        assert row is not None and row.refused == [] and row.winner == "a"
    fresh.close()
