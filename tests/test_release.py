"""Import refuses rows that reference unknown items or systems, and never half-imports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select

from heart import pipeline
from heart.errors import ImportRefused
from heart.release import export_bundle, import_bundle, import_table
from heart.store import (
    CompletionRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    RaterRow,
    Store,
    open_store,
)
from heart.study import create_study, open_study
from heart.types import sha256_hex

from .rows import Verdict, seed_study, seed_verdicts


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


def _people_study(root: Path) -> None:
    """A study with LLM and human verdicts, three raters (one excluded) and strategy labels."""
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    rank = ["m1", "human/r1", "m2"]
    verdicts = [
        Verdict(i, rank[x], rank[y], judge, "b" if (i + x + n) % 4 == 0 else "a", 1 + n % 2)
        for i in range(6)
        for x in range(3)
        for y in range(x + 1, 3)
        for n, judge in enumerate(["g1", "g2", "r1", "r2", "r3"])
    ]
    # the excluded rater always picks the other reply: counted, it would change the board
    verdicts += [Verdict(i, "m1", "m2", "r3", "b", 2, order="ba") for i in range(6)]
    seed_verdicts(store, verdicts, sources={r: "human" for r in ("r1", "r2", "r3")})
    with store.session() as s:
        for rater in ("r1", "r2", "r3"):
            s.add(RaterRow(id=rater, token_hash=sha256_hex(rater), meta={"entry": "invite"},
                           excluded_reason="failed 2 of 3 checks" if rater == "r3" else None,
                           created_at="x"))  # fmt: skip
        s.flush()
        for i in range(6):
            for rater, strategies in (("r1", ["Affirmation"]), ("r2", ["Offer Hope", "Chit Chat"])):
                s.add(LabelRow(id=f"lb-{i}-{rater}", completion_id=f"cp-{i}-m1", rater_id=rater,
                               strategies=strategies, created_at="x"))  # fmt: skip
    store.close()


def _figures(root: Path) -> tuple[object, ...]:
    from heart.report import gather_facts

    with open_study(root) as study:
        facts = gather_facts(study)
        with study.store.session() as s:
            labels = sorted(
                (r.completion_id, r.rater_id, tuple(r.strategies))
                for r in s.scalars(select(LabelRow))
            )
            raters = sorted((r.id, r.excluded_reason) for r in s.scalars(select(RaterRow)))
    boards = [(b.key, b.leaderboard.standings, b.best_human) for b in facts.boards]
    return boards, facts.agreement, labels, raters


def test_a_bundle_carries_raters_and_labels_and_reproduces_every_figure(tmp_path: Path) -> None:
    _people_study(tmp_path / "study")
    bundle, fresh = tmp_path / "bundle", tmp_path / "fresh"
    with open_study(tmp_path / "study") as study:
        rows = pipeline.export(study, bundle)
    assert rows["raters.jsonl"] == 3 and rows["strategy_labels.jsonl"] == 12
    # pseudonymous ids and exclusion reasons only: no token hashes, no entry metadata
    raters = [json.loads(line) for line in (bundle / "raters.jsonl").read_text().splitlines()]
    assert {tuple(sorted(r)) for r in raters} == {("created_at", "excluded_reason", "id")}
    assert "token_hash" not in (bundle / "raters.jsonl").read_text()

    pipeline.import_into(fresh, bundle)
    original, copied = _figures(tmp_path / "study"), _figures(fresh)
    assert repr(copied) == repr(original)  # NaN (no axis data) compares equal only in print
    _, agreement, labels, excluded = copied
    assert len(labels) == 12 and ("r3", "failed 2 of 3 checks") in excluded
    assert agreement is not None and agreement.inter_human is not None


def test_a_bundle_written_before_raters_and_labels_still_imports(tmp_path: Path) -> None:
    _people_study(tmp_path / "study")
    bundle = tmp_path / "bundle"
    with open_study(tmp_path / "study") as study:
        pipeline.export(study, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    for name in ("raters.jsonl", "strategy_labels.jsonl"):
        (bundle / name).unlink()
        del manifest["files"][name]
    manifest["version"] = 1
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    summary = pipeline.import_into(tmp_path / "fresh", bundle)
    assert summary.added["judgments.jsonl"] == 6 * 3 * 5 + 6
    assert "raters.jsonl" not in summary.added
