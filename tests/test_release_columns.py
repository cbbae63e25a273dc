"""A bundle's chunk of rows is checked a column at a time, and row by row only to name a problem:
the column checks pass only what the row checks take, a problem is named as a row-by-row reading
names it, and SQLite's own look at each reference, left to the import's check while it runs, is
back once it is done, as is Python's cycle collector."""

from __future__ import annotations

import gc
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Index, inspect, text
from sqlalchemy.orm import Session

from heart import import_checks, pipeline
from heart.errors import ImportRefused
from heart.import_checks import MAX_INT, check_row, checked_columns
from heart.release import _bundles, _rows, import_bundle
from heart.release._rows import REFERENCES, TABLES, ImportSummary, store_rows
from heart.store import JudgmentRow, RationaleCodeRow, Store, open_store

from .rows import refused_bundle, snapshot
from .test_release_bundles import _sign
from .test_release_streaming import _bundle, _small_chunks

json_objects = st.dictionaries(
    st.text(max_size=4),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=8,
    ),
    max_size=4,
)
"""Any JSON object json writes: numbers of any size, NaN and infinities, any text."""


def test_every_foreign_key_is_a_reference_the_import_checks() -> None:
    files = {model.__tablename__: name for name, model in TABLES}
    for name, model in TABLES:
        for key in model.__table__.foreign_keys:
            column = str(key.parent.key)
            target = (files[key.column.table.name], str(key.column.key))
            assert REFERENCES.get((name, column)) == target, (name, column)


def _pragmas(store: Store) -> tuple[int, int]:
    with store.engine.connect() as connection:
        keys = connection.execute(text("PRAGMA foreign_keys")).scalar()
        cache = connection.execute(text("PRAGMA cache_size")).scalar()
    return int(keys or 0), int(cache or 0)


def test_sqlite_looks_up_references_again_once_an_import_is_done(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, items=2)
    store = open_store(f"sqlite:///{tmp_path / 'copy.db'}")
    before = _pragmas(store)
    assert before[0] == 1
    assert import_bundle(store, bundle).added["judgments.jsonl"] == 12
    assert _pragmas(store) == before
    # a refused import gives the connection back as it was too
    path = bundle / "rationale_codes.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace('"side":"a"', '"side":"c"'))
    _sign(bundle)
    with pytest.raises(ImportRefused, match=r"differs in \['side'\]"):
        import_bundle(store, bundle)
    assert _pragmas(store) == before


JUDGMENT: dict[str, Any] = {
    "id": "p0-m1-m2-j1", "pair_id": "p0-m1-m2", "judge": "j1", "order": "ab", "status": "ok",
    "winner": "a", "strength": 2, "axes": {"H": {"winner": "a", "strength": 3}},
    "rationale": "Reply A is warmer.", "raw": None, "refused": [], "error": None,
    "prompt_hash": None, "call_hash": None, "latency_ms": 12.5, "tokens_in": 10,
    "tokens_out": None, "cost_usd": 0, "cached_tokens_in": None, "list_cost_usd": None,
    "created_at": "x",
}  # fmt: skip


def _columns(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [record[key] for record in records] for key in records[0]}


def test_a_chunk_of_good_rows_passes_column_by_column() -> None:
    other = {**JUDGMENT, "id": "p1", "winner": None, "status": "failed", "strength": None}
    assert checked_columns(JudgmentRow, _columns([JUDGMENT, other]), plain=True)
    assert not checked_columns(JudgmentRow, _columns([JUDGMENT, other]), plain=False)


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("strength", True),  # equal to 1, but not a whole number
        ("strength", 6),
        ("strength", 2.0),
        ("tokens_in", MAX_INT + 1),
        ("tokens_in", -MAX_INT - 1),
        ("tokens_in", False),
        ("latency_ms", "12"),
        ("winner", "c"),
        ("winner", None),  # an ok verdict names its winner
        ("order", None),
        ("judge", "j" * 81),
        ("judge", 1),
        ("axes", {"H": {"winner": "a"}}),
        ("axes", []),
        ("refused", {}),
        ("rationale", None),
        ("raw", ["a"]),
    ],
)
def test_a_column_passes_only_what_the_row_check_takes(column: str, value: Any) -> None:
    bad = {**JUDGMENT, "id": "p1", column: value}
    assert not checked_columns(JudgmentRow, _columns([JUDGMENT, bad]), plain=True)
    check_row(JudgmentRow, JUDGMENT, "line 1", "fix it", plain=True)
    with pytest.raises(ImportRefused, match=f"^line 2: '{column}' "):
        check_row(JudgmentRow, bad, "line 2", "fix it", plain=True)


def test_a_boolean_column_takes_only_true_or_false() -> None:
    code = {
        "id": "k", "coding_id": "c", "judgment_id": "j", "coder": "rules", "codebook_hash": "h",
        "theme": "warmth", "side": "a", "negated": False, "evidence": "warm", "span_start": None,
        "span_end": None, "cue": "",
    }  # fmt: skip
    columns = [p.key for p in inspect(RationaleCodeRow).columns]
    assert sorted(code) == sorted(columns)
    assert checked_columns(RationaleCodeRow, _columns([code]), plain=True)
    assert not checked_columns(RationaleCodeRow, _columns([{**code, "negated": 0}]), plain=True)


@pytest.mark.parametrize(
    ("second", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('{"id":"x"}', "columns do not match"),
    ],
)
def test_a_key_given_twice_is_named_before_a_later_lines_problem(
    tmp_path: Path, second: str, problem: str
) -> None:
    bundle = _bundle(tmp_path, items=1)
    path = bundle / "completions.jsonl"
    first, *rest = path.read_text(encoding="utf-8").splitlines(keepends=True)
    twice = first.replace('"text":', '"text":"sneaked in","text":', 1)
    path.write_text(twice + second + "\n" + "".join(rest), encoding="utf-8")
    _sign(bundle)
    assert refused_bundle(bundle, tmp_path / "refused.db") == (
        f"{path} line 1: 'text' is given twice; keep one"
    )
    path.write_text(first + second + "\n" + "".join(rest), encoding="utf-8")
    _sign(bundle)
    assert problem in refused_bundle(bundle, tmp_path / "refused-2.db")
    assert f"{path} line 2: " in refused_bundle(bundle, tmp_path / "refused-3.db")


def test_a_line_the_parser_reads_alone_and_one_it_does_not_give_the_same_rows(
    tmp_path: Path,
) -> None:
    bundle = _bundle(tmp_path, items=1)
    path = bundle / "completions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    spaced = [" " + json.dumps(json.loads(line)) + " \t" for line in lines]
    as_read = import_bundle(open_store(f"sqlite:///{tmp_path / 'a.db'}"), bundle)
    path.write_text("\n".join(spaced) + "\n\n", encoding="utf-8")
    _sign(bundle)
    spaced_read = import_bundle(open_store(f"sqlite:///{tmp_path / 'b.db'}"), bundle)
    assert spaced_read.added == as_read.added and as_read.added["completions.jsonl"] == 3


@pytest.mark.parametrize(
    "line",
    [
        '{"a":1,"b":[1.5,{"c":null}],"d":"\\u00e9\\n"}',
        '{"a":99999999999999999999999,"b":-1e-320}',  # an int past 64 bits stays an int
        '{"a":NaN,"b":Infinity,"c":-Infinity}',  # read by json alone
        '{"a":1e400}',
        '{"a":"\\ud800"}',  # a lone surrogate, escaped
        ' {"a" : true} \t',
        '{"a":' + "[" * 900 + "]" * 900 + "}",
    ],
)
def test_every_line_is_read_to_the_value_json_reads(line: str) -> None:
    rows, read = _rows.read_lines(Path("t.jsonl"), [line], 7)
    assert [number for number, _ in rows] == [7] and read.keys == len(json.loads(line))
    assert repr(rows[0][1]) == repr(json.loads(line))  # the same types, to the float


@given(json_objects)
@settings(max_examples=300, deadline=None)
def test_any_object_is_read_to_the_value_json_reads(value: dict[str, Any]) -> None:
    line = json.dumps(value)
    rows, _ = _rows.read_lines(Path("t.jsonl"), [line], 1)
    assert repr(rows[0][1]) == repr(json.loads(line))


def test_an_insert_leaves_out_only_columns_the_store_fills_with_null(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'study.db'}")
    with store.session() as session:
        filled = _rows._null_filled(session.connection(), JudgmentRow)
    assert {"winner", "raw", "error", "latency_ms", "cached_tokens_in"} <= filled
    assert not filled & {"id", "axes", "refused", "rationale", "status"}  # JSON, or a default
    with sqlite3.connect(tmp_path / "study.db") as db:
        columns = {row[1]: row for row in db.execute("PRAGMA table_info(judgments)")}
    assert columns["refused"][4] == "'[]'"  # the default a migration gave it
    assert all(columns[name][3] == 0 and columns[name][4] is None for name in filled)


def test_the_cycle_collector_rests_while_an_import_runs_and_only_then(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'study.db'}")
    running: list[bool] = []

    def write(session: Session) -> ImportSummary:
        running.append(gc.isenabled())
        return ImportSummary({}, {})

    def refuse(session: Session) -> ImportSummary:
        running.append(gc.isenabled())
        raise ImportRefused("refused")

    assert gc.isenabled()
    store_rows(store, tmp_path, write)
    assert gc.isenabled()
    with pytest.raises(ImportRefused):
        store_rows(store, tmp_path, refuse)
    assert gc.isenabled() and running == [False, False]
    gc.disable()  # a program that runs without it keeps it off
    try:
        store_rows(store, tmp_path, write)
        assert not gc.isenabled()
    finally:
        gc.enable()


def _indexes(store: Store) -> list[tuple[str, str]]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name")
        )
        return [(name, sql) for name, sql in rows]


def test_a_large_imports_plain_indexes_are_built_at_its_end_and_kept_if_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _bundle(tmp_path, items=40)  # 240 verdicts
    kept = open_store(f"sqlite:///{tmp_path / 'kept.db'}")
    import_bundle(kept, bundle)
    dropped: list[str] = []
    real_drop = Index.drop

    def drop(index: Index, bind: Any, checkfirst: bool = False) -> None:
        dropped.append(str(index.name))
        real_drop(index, bind, checkfirst)

    monkeypatch.setattr(Index, "drop", drop)
    monkeypatch.setattr(_rows, "DEFER_INDEXES", 200)
    _small_chunks(monkeypatch)
    store = open_store(f"sqlite:///{tmp_path / 'heart.db'}")
    before = _indexes(store)
    summary = import_bundle(store, bundle)
    assert summary.added["judgments.jsonl"] == 240  # judgments alone: 200 rows or more
    assert dropped == ["ix_judgments_judge", "ix_judgments_pair_id"]
    assert _indexes(store) == before
    assert snapshot(store) == snapshot(kept) | {
        "bundle_provenance": snapshot(store)["bundle_provenance"]
    }
    with store.engine.connect() as connection:  # the rebuilt index is the one a lookup uses
        plan = connection.execute(
            text("EXPLAIN QUERY PLAN SELECT id FROM judgments WHERE judge = 'j1'")
        ).all()
    assert "ix_judgments_judge" in str(plan)
    # refused in its last table: the indexes dropped on the way are back with the rollback
    path = bundle / "rationale_codes.jsonl"
    path.write_text(path.read_text(encoding="utf-8") + "{}\n", encoding="utf-8")
    _sign(bundle)
    fresh = open_store(f"sqlite:///{tmp_path / 'fresh.db'}")
    with pytest.raises(ImportRefused, match="columns do not match"):
        import_bundle(fresh, bundle)
    assert "ix_judgments_judge" in dropped[2:] and _indexes(fresh) == before


@pytest.mark.parametrize(
    ("value", "keys"),
    [
        ({}, 0),
        ([], 0),
        ("text", 0),
        ({"a": 1, "b": {"c": 2, "d": [{"e": 3}, 4, {"f": {}, "g": []}]}}, 7),
        ([{"H": {"winner": "a", "strength": 2}}, [{"x": 1}], [[{"y": 2, "z": 3}]], None], 6),
    ],
)
def test_keys_are_counted_at_every_depth(value: Any, keys: int) -> None:
    """The count a chunk's key check compares with the '":' in its lines."""
    assert _rows._keys(value) == keys


def _random_axes(rng: random.Random) -> Any:
    """Axes that are mostly fine, with now and then one thing wrong in one verdict."""
    if rng.random() < 0.03:
        return rng.choice([None, [], "H", 3])
    axes: dict[str, Any] = {}
    for axis in rng.sample("HEART", rng.randint(0, 5)):
        axes[axis] = {"winner": rng.choice(["a", "b", "none"]), "strength": rng.randint(0, 5)}
    if axes and rng.random() < 0.2:
        axis = rng.choice(list(axes))
        verdict = axes[axis]
        fault = rng.randrange(8)
        if fault == 0:
            axes["X"] = axes.pop(axis)
        elif fault == 1:
            verdict["strength"] = rng.choice([True, 6, -1, 2.0, "2", None])
        elif fault == 2:
            verdict["winner"] = rng.choice(["A", "tie", None, 1])
        elif fault == 3:
            del verdict[rng.choice(["winner", "strength"])]
        elif fault == 4:
            verdict["why"] = "x"
        elif fault == 5:
            axes[axis] = [verdict["winner"], verdict["strength"]]
        elif fault == 6:
            verdict["Winner"] = verdict.pop("winner")
        else:
            axes[axis] = None
    return axes


def test_the_axes_column_passes_exactly_when_each_row_would() -> None:
    """The whole-column check of judgments' axes agrees with the check a row at a time, on
    columns that are all fine and on columns with one fault of many kinds somewhere."""
    rng = random.Random(5)
    faulty = 0
    for _ in range(3000):
        column = [_random_axes(rng) for _ in range(rng.randint(0, 6))]
        each = all(
            isinstance(axes, dict) and import_checks._axes_problem(axes) is None for axes in column
        )
        faulty += not each
        assert import_checks._axes_fine(column) == each, column
    assert 300 < faulty < 2700


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    scalars = [None, True, False, 0, -7, 2**70, 1.5, -0.0, 1e-300, "", 'é\n"\\/\u2028', "🙂"]
    if depth > 3 or rng.random() < 0.4:
        return rng.choice(scalars)
    if rng.random() < 0.5:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice("abé\"") * rng.randrange(1, 3): _json_value(rng, depth + 1)
            for _ in range(rng.randrange(4))}  # fmt: skip


def test_a_json_column_is_written_as_sqlalchemy_writes_it() -> None:
    """The import's quicker writing of JSON gives SQLAlchemy's text for every value (that of
    json.dumps), on random nested values, odd characters and numbers among them."""
    store = open_store("sqlite://")
    try:
        dialect = store.engine.dialect
        kind = JudgmentRow.__table__.c.axes.type.dialect_impl(dialect)
        convert = kind.bind_processor(dialect)
        quick = _rows._json_text(convert)
        rng = random.Random(5)
        values = [_json_value(rng) for _ in range(3_000)] + [[], {}, None, {"a": [{}]}]
        assert [quick(v) for v in values] == [convert(v) for v in values]
        assert quick({"é": [1.5, None]}) == '{"\\u00e9": [1.5, null]}'
    finally:
        store.close()


def test_a_new_study_from_a_bundle_is_written_without_the_write_ahead_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into a new folder (a store nobody else can open yet), the rows go through a rollback
    journal, and the store keeps its write-ahead log afterwards; into a study that has its
    store, and when refused, the log stays throughout."""
    bundle = _bundle(tmp_path, items=2)
    seen: list[str] = []
    add_table = _rows.RowWriter.add_table

    def watched(writer: _rows.RowWriter, name: str, chunks: Any) -> None:
        seen.append(writer.connection.exec_driver_sql("PRAGMA journal_mode").scalar())
        add_table(writer, name, chunks)

    monkeypatch.setattr(_bundles.RowWriter, "add_table", watched)
    summary = pipeline.import_into(tmp_path / "fresh", bundle)
    assert summary.added["judgments.jsonl"] == 12 and set(seen) == {"delete"}
    placed = sqlite3.connect(tmp_path / "fresh" / "heart.db")  # opened anew, without heart
    assert placed.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # the log is back
    placed.close()
    seen.clear()
    store = open_store(f"sqlite:///{tmp_path / 'copy.db'}")
    assert import_bundle(store, bundle).added["judgments.jsonl"] == 12
    assert set(seen) == {"wal"}
    seen.clear()
    path = bundle / "rationale_codes.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = json.loads(lines[-1]) | {"span_start": "seven"}
    path.write_text("".join(lines[:-1]) + json.dumps(bad) + "\n", encoding="utf-8")
    _sign(bundle)
    with pytest.raises(ImportRefused, match="'span_start'"):
        pipeline.import_into(tmp_path / "refused", bundle)
    assert "delete" in seen and not (tmp_path / "refused").exists()
