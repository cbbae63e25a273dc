"""Import refuses rows that reference unknown items or systems, and never half-imports."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

from .helpers import heart
from .rows import Verdict, seed_study, seed_verdicts, snapshot


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
    manifest["version"] = 1  # bundles of version 2 on have the column in every row
    (bundle / "manifest.json").write_text(json.dumps(manifest))

    fresh = open_store(f"sqlite:///{tmp_path / 'fresh.db'}")
    import_bundle(fresh, bundle)
    with fresh.session() as s:
        row = s.get(JudgmentRow, "jd1")
        assert row is not None and row.refused == [] and row.winner == "a"
    fresh.close()


def _people_study(root: Path) -> None:
    """A study with LLM and human verdicts, three raters (one excluded) and strategy labels; the
    people's replies are by a writer who judges none of them."""
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    rank = ["m1", "human/w1", "m2"]
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


# --- files from outside: every problem is one line naming file, line and field -------------


def _refused(store: Store, path: Path, content: str | bytes, kind: str = "completions") -> str:
    """Import ``content`` as ``path``; return the refusal, after checking the store is as it
    was."""
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    before = snapshot(store)
    with pytest.raises(ImportRefused) as err:
        import_table(store, path, kind, seed=0)
    assert snapshot(store) == before
    message = str(err.value)
    assert "\n" not in message
    return message.replace(f"{path.parent}/", "")


def _completions_stored(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    path = tmp_path / "stored.csv"
    path.write_text("item_id,system,text\ni0,m1,one\ni0,m2,two\n")
    import_table(store, path, "completions", seed=0)


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_byte_that_is_not_utf8_is_refused_with_its_line(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    _study(store, tmp_path)
    first = b"item_id,system,text\n" if suffix == "csv" else b""
    row = b"i0,m1,caf\xe9\n" if suffix == "csv" else b'{"item_id":"i0","system":"m1","text":"\xe9"}'
    message = _refused(store, tmp_path / f"c.{suffix}", first + b"\n" + row)
    line = 3 if suffix == "csv" else 2
    assert message.startswith(f"c.{suffix} line {line}: byte ")
    assert message.endswith("is not valid UTF-8; save the file as UTF-8")


def test_a_cell_over_128_kib_names_its_field(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    text = "item_id,system,text\ni0,m1,short\ni0,m2," + "x" * 200_000 + "\n"
    assert _refused(store, tmp_path / "c.csv", text) == (
        "c.csv line 3: 'text' is 200,000 characters long, over the 131,072 a field may hold; "
        "shorten it"
    )


@pytest.mark.parametrize(
    ("field", "value", "got"),
    [
        ("item_id", 17, "the number 17"),
        ("system", ["m1"], 'a list ["m1"]'),
        ("text", {"reply": "hi"}, 'an object {"reply": "hi"}'),
        ("contributor", True, "true/false true"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_not_stored(
    store: Store, tmp_path: Path, field: str, value: object, got: str
) -> None:
    _study(store, tmp_path)
    row = {"item_id": "i0", "system": "m1", "text": "hello", field: value}
    assert _refused(store, tmp_path / "c.jsonl", json.dumps(row) + "\n") == (
        f"c.jsonl line 1: '{field}' must be text, got {got}; write it in quotes"
    )


JUDGMENTS = "item_id,judge,a_system,b_system,winner,strength,source\n"


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("i0,r,m1,m2,a,2,robot", "'source' must be llm or human, got 'robot'"),
        ("i0,r,m1,m2,c,2,human", "'winner' must be a, b or tie, got 'c'"),
        ("i0,r,m1,m2,a,7,human", "'strength' must be a whole number 1-5, got the text \"7\""),
        ("i0,r,m1,m2,a,2.5,human", "'strength' must be a whole number 1-5, got the text \"2.5\""),
        ("i0,r,m1,m2,a,2,human,extra", "8 cells, but the header names 7 columns"),
    ],
)
def test_a_judgments_row_outside_the_vocabulary_is_refused(
    store: Store, tmp_path: Path, row: str, problem: str
) -> None:
    _completions_stored(store, tmp_path)
    message = _refused(store, tmp_path / "j.csv", f"{JUDGMENTS}{row}\n", "judgments")
    assert message.startswith(f"j.csv line 2: {problem}")


def test_a_judge_name_too_long_for_the_store_is_refused(store: Store, tmp_path: Path) -> None:
    _completions_stored(store, tmp_path)
    message = _refused(
        store, tmp_path / "j.csv", f"{JUDGMENTS}i0,{'r' * 81},m1,m2,a,2,\n", "judgments"
    )
    assert message == (
        "j.csv line 2: 'judge' is 81 characters long; the most it may be is 80; correct the row"
    )


def test_a_pair_of_a_system_with_itself_is_refused(store: Store, tmp_path: Path) -> None:
    _completions_stored(store, tmp_path)
    message = _refused(store, tmp_path / "j.csv", f"{JUDGMENTS}i0,r,m1,m1,a,2,\n", "judgments")
    assert message.startswith("j.csv line 2: 'b_system' is 'm1', the same as 'a_system'; a pair")


def test_an_llm_judge_of_the_study_cannot_be_imported_as_a_rater(
    store: Store, tmp_path: Path
) -> None:
    _completions_stored(store, tmp_path)
    seed_study(store, [], judges=["g1"])
    message = _refused(store, tmp_path / "j.csv", f"{JUDGMENTS}i0,g1,m1,m2,a,2,\n", "judgments")
    assert message.startswith(
        "j.csv line 2: 'source' is human, but the study's judge 'g1' has source llm"
    )


def test_one_verdict_given_twice_differently_in_a_file_names_both_lines(
    store: Store, tmp_path: Path
) -> None:
    _completions_stored(store, tmp_path)
    text = f"{JUDGMENTS}i0,r,m1,m2,a,2,\ni0,r,m1,m2,b,2,\n"  # one order shown, two verdicts
    assert _refused(store, tmp_path / "j.csv", text, "judgments").startswith(
        "j.csv line 3: line 2 gives the row with key ["
    )


def test_importing_a_file_again_adds_nothing(store: Store, tmp_path: Path) -> None:
    _completions_stored(store, tmp_path)
    again = tmp_path / "again.csv"
    again.write_text("item_id,system,text\ni0,m1,one\ni0,m2,two\n")
    before = snapshot(store)
    summary = import_table(store, again, "completions", seed=0)
    assert (summary.added, summary.unchanged) == ({}, {"completions.jsonl": 2})
    judgments = tmp_path / "j.csv"
    judgments.write_text(f"{JUDGMENTS}i0,r,m1,m2,a,2,human\n")
    assert import_table(store, judgments, "judgments", seed=0).added["judgments.jsonl"] == 1
    judged = snapshot(store)
    summary = import_table(store, judgments, "judgments", seed=0)
    assert (summary.added, summary.unchanged) == ({}, {"judgments.jsonl": 1})
    assert snapshot(store) == judged != before


def test_a_csv_with_a_byte_order_mark_imports(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    path = tmp_path / "c.csv"
    path.write_bytes("item_id,system,text\ni0,m1,café\n".encode("utf-8-sig"))
    assert import_table(store, path, "completions", seed=0).added == {"completions.jsonl": 1}
    with store.session() as s:
        assert s.scalars(select(CompletionRow.text)).one() == "café"


def test_heart_import_twice_says_nothing_new(tmp_path: Path) -> None:
    root = tmp_path / "study"
    create_study(root, demo=True)
    seed_study(store := open_store(f"sqlite:///{root / 'heart.db'}"), ["m1", "m2"])
    store.close()
    path = tmp_path / "c.csv"
    path.write_text("item_id,system,text\ni0,m1,one\ni0,m2,two\n")
    first = heart("import", path, "--table", "completions", "--study", root).stdout
    again = heart("import", path, "--table", "completions", "--study", root).stdout
    assert first.strip() == "Imported: completions.jsonl 2"
    assert again.strip() == "Imported: nothing new (2 rows already stored)"


# --- bundles ---------------------------------------------------------------------------------


def _bundle(store: Store, tmp_path: Path) -> Path:
    _completions_stored(store, tmp_path / "s")
    bundle = tmp_path / "bundle"
    export_bundle(store, tmp_path / "s", bundle)
    return bundle


def _rewrite(bundle: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """Change every row of one bundle file and re-sign it in the manifest."""
    path = bundle / name
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        edit(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = sha256_hex(path.read_text())
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _bundle_refused(bundle: Path) -> str:
    fresh = open_store(f"sqlite:///{bundle.parent / 'fresh.db'}")
    before = snapshot(fresh)
    with pytest.raises(ImportRefused) as err:
        import_bundle(fresh, bundle)
    assert snapshot(fresh) == before
    fresh.close()
    assert "\n" not in str(err.value)
    return str(err.value).replace(f"{bundle}/", "")


@pytest.mark.parametrize(
    ("manifest", "problem"),
    [
        ("{not json", "manifest.json line 1: not valid JSON (Expecting property name"),
        ("[1, 2]", "manifest.json: expected a JSON object, got a list [1, 2]"),
        ('{"format": "heart-bundle", "version": 2}', "manifest.json: 'files' must list"),
        (
            '{"format": "heart-bundle", "version": 2, "files": {"study.yaml": {}}}',
            "manifest.json: 'files.study.yaml.sha256' must be the file's sha256",
        ),
        (
            '{"format": "heart-bundle", "version": 2, "files": {"study.yaml": {"sha256": ""}, '
            '"../x": {"sha256": ""}}}',
            "manifest.json: 'files' lists '../x', which is no file of a heart bundle",
        ),
    ],
)
def test_a_manifest_that_is_not_a_bundles_is_refused(
    store: Store, tmp_path: Path, manifest: str, problem: str
) -> None:
    bundle = _bundle(store, tmp_path)
    (bundle / "manifest.json").write_text(manifest)
    assert _bundle_refused(bundle).startswith(problem)


@pytest.mark.parametrize(
    ("name", "column", "value", "problem"),
    [
        ("completions.jsonl", "text", {"a": 1}, "'text' must be text, got an object"),
        ("completions.jsonl", "item_id", 7, "'item_id' must be text, got the number 7"),
        ("completions.jsonl", "tokens_in", "12", "'tokens_in' must be a whole number"),
        ("systems.jsonl", "kind", "robot", "'kind' must be one of model, human, dataset, control"),
        ("items.jsonl", "subset", "hard", "'subset' must be one of regular, adversarial"),
        ("items.jsonl", "context", [{"role": "bot"}], "'context' turn 0 role: Input should be"),
        ("items.jsonl", "meta", [], "'meta' must be an object, got a list []"),
        ("completions.jsonl", "contributor", "x" * 41, "'contributor' is 41 characters long"),
        (
            "completions.jsonl",
            "text",
            "a\x00b",
            "'text' holds an invisible control character (U+0000) at character 2",
        ),
        ("completions.jsonl", "text", "\ud83d", "'text' holds a lone surrogate"),
        ("systems.jsonl", "spec", json.loads('{"a":' * 40 + "1" + "}" * 40), "'spec' is nested"),
    ],
)
def test_a_bundle_value_the_store_cannot_hold_is_refused(
    store: Store, tmp_path: Path, name: str, column: str, value: object, problem: str
) -> None:
    bundle = _bundle(store, tmp_path)
    _rewrite(bundle, name, lambda row: row.__setitem__(column, value))
    message = _bundle_refused(bundle)
    assert message.startswith(f"{name} line 1: {problem}"), message
    assert message.endswith("; correct the row, or export the bundle again")


def _judged_bundle(store: Store, tmp_path: Path) -> Path:
    _completions_stored(store, tmp_path / "s")
    judgments = tmp_path / "j.csv"
    judgments.write_text(f"{JUDGMENTS}i0,r,m1,m2,a,2,human\n")
    import_table(store, judgments, "judgments", seed=0)
    bundle = tmp_path / "bundle"
    export_bundle(store, tmp_path / "s", bundle)
    return bundle


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("winner", "A", "'winner' must be one of a, b, tie, got the text \"A\""),
        ("winner", None, "'winner' must be given when 'status' is ok"),
        ("strength", 9, "'strength' must be 1 to 5, got 9"),
        ("strength", 2.0, "'strength' must be a whole number, got the number 2.0"),
        ("axes", {"H": {"winner": "a", "strength": "3"}}, "'axes' H: winner must be one of"),
        ("axes", {"Q": {"winner": "a", "strength": 3}}, "'axes' names axis 'Q'"),
    ],
)
def test_a_bundle_verdict_outside_the_vocabulary_is_refused(
    store: Store, tmp_path: Path, column: str, value: object, problem: str
) -> None:
    bundle = _judged_bundle(store, tmp_path)
    _rewrite(bundle, "judgments.jsonl", lambda row: row.__setitem__(column, value))
    assert _bundle_refused(bundle).startswith(f"judgments.jsonl line 1: {problem}")


def test_a_bundle_pair_of_one_system_is_refused(store: Store, tmp_path: Path) -> None:
    bundle = _judged_bundle(store, tmp_path)
    _rewrite(bundle, "pairs.jsonl", lambda row: row.__setitem__("b_id", row["a_id"]))
    assert _bundle_refused(bundle).startswith(
        "pairs.jsonl line 1: 'b_id': both replies of the pair belong to system"
    )


def test_a_bundle_reply_stored_under_another_key_is_refused(store: Store, tmp_path: Path) -> None:
    bundle = _bundle(store, tmp_path)
    _rewrite(bundle, "completions.jsonl", lambda row: row.__setitem__("id", row["id"] + "x"))
    before = snapshot(store)
    with pytest.raises(ImportRefused, match=r"completions\.jsonl line 1: the row with key \["):
        import_bundle(store, bundle)
    assert snapshot(store) == before


def test_a_bundle_imported_again_adds_nothing(store: Store, tmp_path: Path) -> None:
    bundle = _judged_bundle(store, tmp_path)
    before = snapshot(store)
    summary = import_bundle(store, bundle)
    assert summary.added == {} and summary.unchanged["judgments.jsonl"] == 1
    assert snapshot(store) == before


def test_a_reply_holding_a_line_separator_survives_a_bundle(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'a.db'}")
    _study(store, tmp_path / "s")
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"item_id": "i0", "system": "m1", "text": "one\u2028two"}) + "\n")
    import_table(store, path, "completions", seed=0)
    export_bundle(store, tmp_path / "s", tmp_path / "bundle")
    fresh = open_store(f"sqlite:///{tmp_path / 'b.db'}")
    assert import_bundle(fresh, tmp_path / "bundle").added["completions.jsonl"] == 1
    copied, kept = snapshot(fresh), snapshot(store)
    assert len(copied.pop("bundle_provenance")) == 1  # where the rows came from, kept apart
    assert copied == {name: rows for name, rows in kept.items() if name != "bundle_provenance"}
    store.close()
    fresh.close()
