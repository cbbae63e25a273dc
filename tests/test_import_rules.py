"""Imports keep the web app's rules and say honestly what they did: nobody judges or labels their
own reply, values are of the type asked (false is not "no strategies"), a file of no rows is an
error, and the summary tells new rows from rows already stored and rows the file repeats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from heart import pipeline
from heart.errors import ImportRefused
from heart.ids import completion_id
from heart.release import export_bundle, import_table
from heart.store import CompletionRow, LabelRow, RaterRow, Store, open_store
from heart.study import create_study

from .helpers import heart
from .rows import refused_bundle, seed_study, snapshot

ANNS = completion_id("i0", "human", "ann")
"""The reply ann wrote."""


def _study(store: Store, root: Path) -> None:
    """Item i0 with replies of m1, m2 and of ann (system human), stored by import."""
    root.mkdir(exist_ok=True)
    (root / "study.yaml").write_text("name: t\nsystems: []\n")
    seed_study(store, ["m1", "m2", "human"], items=1)
    path = root / "stored.csv"
    path.write_text("item_id,system,text,contributor\ni0,m1,one,\ni0,m2,two,\ni0,human,three,ann\n")
    import_table(store, path, "completions", seed=0)


def _refused(store: Store, path: Path, content: str, kind: str) -> str:
    """Import ``content`` as ``path``: the refusal, after checking that nothing changed."""
    path.write_text(content)
    before = snapshot(store)
    with pytest.raises(ImportRefused) as refused:
        import_table(store, path, kind, seed=0)
    assert snapshot(store) == before
    assert "\n" not in str(refused.value)
    return str(refused.value).replace(f"{path.parent}/", "")


# --- own work ---------------------------------------------------------------------------------


def test_a_label_on_a_reply_the_labeller_wrote_is_refused(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    text = f"completion_id,rater,strategies\n{ANNS},bo,Affirmation\n{ANNS},ann,Offer Hope\n"
    assert _refused(store, tmp_path / "l.csv", text, "labels") == (
        f"l.csv line 3: 'rater' is 'ann', who wrote completion '{ANNS}', and nobody labels their "
        "own reply (the web app refuses it too); leave the row out"
    )


def test_a_verdict_on_a_pair_holding_the_judges_own_reply_is_refused(
    store: Store, tmp_path: Path
) -> None:
    _study(store, tmp_path)
    text = (
        "item_id,judge,a_system,b_system,b_contributor,winner\n"
        "i0,bo,m1,human,ann,b\ni0,ann,m1,human,ann,b\n"
    )
    assert _refused(store, tmp_path / "j.csv", text, "judgments") == (
        f"j.csv line 3: 'judge' is 'ann', who wrote one of the pair's replies (completion "
        f"'{ANNS}'), and nobody judges their own reply (the web app refuses it too); leave the "
        "row out"
    )


def test_a_bundle_label_on_the_labellers_own_reply_is_refused(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path / "s")
    with store.session() as s:  # as an earlier release let in by import
        s.add(RaterRow(id="ann", meta={}, created_at="x"))
        s.flush()
        s.add(LabelRow(id="lb1", completion_id=ANNS, rater_id="ann", strategies=[],
                       created_at="x"))  # fmt: skip
    bundle = tmp_path / "bundle"
    export_bundle(store, tmp_path / "s", bundle)
    assert refused_bundle(bundle, tmp_path / "fresh.db") == (
        f"{bundle / 'strategy_labels.jsonl'} line 1: 'rater_id' is 'ann', who wrote completion "
        f"'{ANNS}', and nobody labels their own reply (the web app refuses it too); leave the "
        "row out"
    )


# --- strict types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "got"),
    [(False, "true/false false"), (0, "the number 0"), ({}, "an object {}"),
     (None, "nothing (null)"), ([1], "a list [1]")],
)  # fmt: skip
def test_strategies_that_are_not_a_list_of_names_are_refused_not_stored_as_none(
    store: Store, tmp_path: Path, value: object, got: str
) -> None:
    _study(store, tmp_path)
    row = {"completion_id": completion_id("i0", "m1"), "rater": "bo", "strategies": value}
    assert _refused(store, tmp_path / "l.jsonl", json.dumps(row) + "\n", "labels") == (
        "l.jsonl line 1: 'strategies' must be a list of strategy names (in CSV: separated by "
        f"';'; empty for none), got {got}"
    )


@pytest.mark.parametrize(
    ("suffix", "content"),
    [
        ("jsonl", json.dumps({"completion_id": completion_id("i0", "m1"), "rater": "bo"}) + "\n"),
        ("csv", f"completion_id,rater\n{completion_id('i0', 'm1')},bo\n"),
    ],
)
def test_a_labels_row_that_does_not_say_its_strategies_is_refused(
    store: Store, tmp_path: Path, suffix: str, content: str
) -> None:
    _study(store, tmp_path)
    message = _refused(store, tmp_path / f"l.{suffix}", content, "labels")
    line = 2 if suffix == "csv" else 1
    assert message == (
        f"l.{suffix} line {line}: missing ['strategies']; every row needs them (an empty list "
        "for none)"
    )


def test_none_is_said_with_an_empty_list_or_an_empty_cell(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    m1, m2 = completion_id("i0", "m1"), completion_id("i0", "m2")
    (tmp_path / "l.csv").write_text(f"completion_id,rater,strategies\n{m1},bo,\n{m2},bo\n")
    (tmp_path / "l.jsonl").write_text(
        json.dumps({"completion_id": m1, "rater": "cy", "strategies": []}) + "\n"
    )
    assert import_table(store, tmp_path / "l.csv", "labels", seed=0).added == {
        "raters.jsonl": 1, "strategy_labels.jsonl": 2
    }  # fmt: skip
    import_table(store, tmp_path / "l.jsonl", "labels", seed=0)
    with store.session() as s:
        assert {tuple(r.strategies) for r in s.scalars(select(LabelRow))} == {()}


@pytest.mark.parametrize(
    ("kind", "content", "column"),
    [
        ("judgments", "item_id,judge,a_system,b_system,winner,strenght\ni0,bo,m1,m2,a,5\n",
         "strenght"),
        ("completions", '{"item_id": "i0", "system": "m1", "text": "hi", "contributer": "bo"}\n',
         "contributer"),
    ],
)  # fmt: skip
def test_a_column_the_import_does_not_read_is_refused_not_left_out(
    store: Store, tmp_path: Path, kind: str, content: str, column: str
) -> None:
    _study(store, tmp_path)
    suffix = "csv" if content.startswith("item_id,") else "jsonl"
    message = _refused(store, tmp_path / f"f.{suffix}", content, kind)
    assert message.startswith(
        f"f.{suffix} line {2 if suffix == 'csv' else 1}: unknown column {column!r}; the columns "
        "are item_id, "
    )
    assert message.endswith("(check its spelling: a misspelt column would be left out)")


def test_trailing_empty_columns_of_a_spreadsheet_are_fine(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    path = tmp_path / "c.csv"
    path.write_text("item_id,system,text,,\ni0,m1,one,,\n")
    assert import_table(store, path, "completions", seed=0).unchanged == {"completions.jsonl": 1}


# --- a file of no rows ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("c.csv", "", "the file is empty"),
        ("c.csv", "item_id,system,text\n", "the file holds only a header"),
        ("c.csv", "item_id,system,text\n,,\n\n", "the file holds only a header"),
        ("c.jsonl", "", "the file is empty"),
        ("c.jsonl", "\n  \n", "the file is empty"),
    ],
)
def test_a_file_of_no_rows_is_refused(
    store: Store, tmp_path: Path, name: str, content: str, problem: str
) -> None:
    _study(store, tmp_path)
    fix = " below the header" if name.endswith(".csv") else ""
    assert _refused(store, tmp_path / name, content, "completions") == (
        f"{name}: no rows to import ({problem}); give one row a line{fix}, or check the path"
    )


def _cli_study(tmp_path: Path) -> Path:
    root = tmp_path / "study"
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_study(store, ["m1", "m2"])
    store.close()
    return root


def test_heart_import_of_a_header_only_file_fails_in_one_line(tmp_path: Path) -> None:
    root = _cli_study(tmp_path)
    path = tmp_path / "c.csv"
    path.write_text("item_id,system,text\n")
    result = heart("import", path, "--table", "completions", "--study", root, check=False)
    assert result.returncode == 2
    assert (
        result.stdout.replace("\n", " ").split()
        == (
            f"error: {path}: no rows to import (the file holds only a header); give one row a line "
            "below the header, or check the path"
        ).split()
    )
    assert "Traceback" not in result.stderr


# --- honest summaries -------------------------------------------------------------------------


def test_rows_a_file_repeats_are_counted_as_repeated_not_as_stored(
    store: Store, tmp_path: Path
) -> None:
    _study(store, tmp_path)
    path = tmp_path / "c.csv"
    path.write_text("item_id,system,text\ni0,m2,two\ni0,m1,one\ni0,m1,one\ni0,m1,one\n")
    summary = import_table(store, path, "completions", seed=0)
    assert (summary.added, summary.unchanged, summary.repeated) == (
        {}, {"completions.jsonl": 2}, {"completions.jsonl": 2}
    )  # fmt: skip
    assert summary.describe() == "nothing new (2 rows already stored, 2 repeated in the file)"
    with store.session() as s:  # m1's reply stays the stored one; ann's too
        texts = {c.system: c.text for c in s.scalars(select(CompletionRow))}
    assert texts == {"m1": "one", "m2": "two", "human": "three"}


def test_a_labels_file_repeating_a_label_counts_it_once(store: Store, tmp_path: Path) -> None:
    _study(store, tmp_path)
    m1 = completion_id("i0", "m1")
    path = tmp_path / "l.csv"
    path.write_text(f"completion_id,rater,strategies\n{m1},bo,Affirmation\n{m1},bo,Affirmation\n")
    summary = import_table(store, path, "labels", seed=0)
    assert summary.added == {"raters.jsonl": 1, "strategy_labels.jsonl": 1}
    assert (summary.unchanged, summary.repeated) == ({}, {"strategy_labels.jsonl": 1})


def test_heart_import_says_new_already_stored_and_repeated(tmp_path: Path) -> None:
    root = _cli_study(tmp_path)
    path = tmp_path / "c.csv"
    path.write_text("item_id,system,text\ni0,m1,one\ni0,m2,two\ni0,m1,one\n")
    first = heart("import", path, "--table", "completions", "--study", root).stdout
    again = heart("import", path, "--table", "completions", "--study", root).stdout
    assert first.strip() == "Imported: completions.jsonl 2 (1 repeated in the file)"
    assert again.strip() == "Imported: nothing new (2 rows already stored, 1 repeated in the file)"


def test_a_bundle_imported_into_a_new_folder_is_all_new(tmp_path: Path) -> None:
    root = _cli_study(tmp_path)
    path = tmp_path / "c.csv"
    path.write_text("item_id,system,text\ni0,m1,one\ni0,m2,two\n")
    heart("import", path, "--table", "completions", "--study", root)
    bundle = tmp_path / "bundle"
    heart("export", bundle, "--study", root)
    summary = pipeline.import_into(tmp_path / "fresh", bundle)
    rows = {name: n for name, n in summary.added.items() if name != "provenance.json"}
    written = json.loads((bundle / "manifest.json").read_text())["files"]
    assert rows == {name: f["rows"] for name, f in written.items() if f["rows"]}
    assert summary.unchanged == {} and summary.repeated == {}
    again = pipeline.import_into(tmp_path / "fresh", bundle)
    assert again.added == {} and sum(again.unchanged.values()) == sum(rows.values())
