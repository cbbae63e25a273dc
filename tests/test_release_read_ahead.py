"""A large bundle's files are read, parsed and checked in a process of their own while the rows
are stored: the rows stored, the counts and every refusal are those of reading the files in the
importing process, and the reading process never outlives the import."""

from __future__ import annotations

import json
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.dialects import postgresql

from heart.errors import ImportRefused
from heart.release import _bundles, _read_ahead, import_bundle
from heart.release._chunk import Chunk, as_json_text, json_text, shared
from heart.release._read_ahead import ReadAhead, reader
from heart.release._rows import TABLES, json_texts
from heart.store import JudgmentRow

from .docs.markdown import ROOT
from .rows import refused_bundle
from .test_release_bundles import _sign
from .test_release_streaming import _bundle, _rows_of, _small_chunks, _store

started: list[ReadAhead] = []


class _Watched(ReadAhead):
    """ReadAhead, each one kept to look at after the import."""

    def __init__(self, readers: list[Any]) -> None:
        super().__init__(readers, _read_ahead.READERS)
        started.append(self)

    def stopped(self) -> bool:
        return all(worker._process.poll() is not None for worker in self._workers)


@pytest.fixture
def read_ahead(monkeypatch: pytest.MonkeyPatch) -> list[ReadAhead]:
    """Every bundle read ahead, however small, in chunks of 5 rows."""
    started.clear()
    monkeypatch.setattr(_bundles, "READ_AHEAD_BYTES", 0)
    monkeypatch.setattr(_bundles, "usable_cores", lambda: 2)
    monkeypatch.setattr(_bundles, "ReadAhead", _Watched)
    _small_chunks(monkeypatch)
    return started


def test_rows_packed_by_column_come_back_as_they_were() -> None:
    rows = [(3, {"id": "a", "axes": {"H": 1}, "n": None}), (5, {"n": 2, "id": "b", "axes": {}})]
    packed = Chunk.of_rows(rows).packed()
    assert packed == (
        [3, 5], ["id", "axes", "n"], [["a", "b"], [{"H": 1}, {}], [None, 2]], frozenset()
    )  # fmt: skip
    chunk = Chunk.unpacked(packed)
    assert chunk.column("axes") == [{"H": 1}, {}] and chunk.tuples(["n", "id"]) == [
        (None, "a"),
        (2, "b"),
    ]
    assert chunk.rows() == rows


def test_a_chunk_of_rows_with_different_columns_is_inserted_a_record_at_a_time() -> None:
    rows = [(1, {"id": "a", "n": 1}), (2, {"id": "b"})]
    chunk = Chunk.of_rows(rows)
    assert chunk.as_columns() is None and chunk.column("id") == ["a", "b"]
    assert chunk.rows() == rows


@pytest.mark.parametrize("readers", [1, 2, 3])
def test_a_bundle_read_ahead_stores_what_one_read_here_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: list[ReadAhead], readers: int
) -> None:
    """However many processes read the chunks in turn (five rows each, 24 judgments)."""
    monkeypatch.setattr(_read_ahead, "READERS", readers)
    bundle = _bundle(tmp_path, items=4)
    ahead = import_bundle(_store(tmp_path / "ahead.db"), bundle)
    assert len(read_ahead) == 1 and read_ahead[0].stopped()
    monkeypatch.setattr(_bundles, "READ_AHEAD_BYTES", 1 << 40)
    here = import_bundle(_store(tmp_path / "here.db"), bundle)
    assert len(read_ahead) == 1  # the second import read its files itself
    assert ahead == here and ahead.added["judgments.jsonl"] == 24
    assert _rows_of(_store(tmp_path / "ahead.db")) == _rows_of(_store(tmp_path / "here.db"))
    monkeypatch.setattr(_bundles, "READ_AHEAD_BYTES", 0)
    again = import_bundle(_store(tmp_path / "ahead.db"), bundle)  # all stored: read ahead again
    assert (
        len(read_ahead) == 2
        and again.added == {}
        and again.unchanged
        == {name: n for name, n in here.added.items() if name != "provenance.json"}
    )


def test_a_line_refused_while_read_ahead_is_refused_as_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: list[ReadAhead]
) -> None:
    bundle = _bundle(tmp_path, items=4)
    path = bundle / "rationale_codes.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = json.loads(lines[-1])
    bad["span_start"] = "seven"
    path.write_text("".join(lines[:-1]) + json.dumps(bad) + "\n", encoding="utf-8")
    _sign(bundle)
    message = refused_bundle(bundle, tmp_path / "refused.db")
    assert message.startswith(f"{path} line {len(lines)}: 'span_start'"), message
    assert read_ahead and read_ahead[-1].stopped()  # store as it was
    monkeypatch.setattr(_bundles, "READ_AHEAD_BYTES", 1 << 40)
    assert refused_bundle(bundle, tmp_path / "here.db") == message and len(read_ahead) == 1


def test_a_row_refused_here_stops_the_reading_at_once(
    tmp_path: Path, read_ahead: list[ReadAhead]
) -> None:
    bundle = _bundle(tmp_path, items=40)
    path = bundle / "pairs.jsonl"  # refused here (its reply is unknown), files later still read
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[0])
    first["a_id"] = "nobody"
    path.write_text(json.dumps(first) + "\n" + "".join(lines[1:]), encoding="utf-8")
    _sign(bundle)
    assert refused_bundle(bundle, tmp_path / "refused.db") == (
        f"{path} line 1: 'a_id' refers to unknown completion 'nobody'; add it to the study (or "
        "the bundle) first"
    )
    assert read_ahead[-1].stopped()


def test_a_refusal_while_reading_ahead_ends_the_reading_where_it_happened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the worker imports this test module
    ahead = ReadAhead([reader(_reads, 3), reader(_refuses), reader(_reads, 2)])
    assert [chunk.rows() for chunk in ahead.chunks()] == [
        [(1, {"id": "1"}), (2, {"id": "2"}), (3, {"id": "3"})]
    ]
    with pytest.raises(ImportRefused, match=r"^table.jsonl line 2: refused$"):
        list(ahead.chunks())
    ahead.close()


def _reads(rows: int, part: int, parts: int) -> list[Chunk]:
    """A file of one chunk of ``rows`` rows: the first reader's."""
    return [Chunk.of_rows([(n, {"id": str(n)}) for n in range(1, rows + 1)])][part::parts]


def _refuses(part: int, parts: int) -> list[Any]:
    raise ImportRefused("table.jsonl line 2: refused")


def test_a_column_held_as_json_text_is_read_back_when_asked_for() -> None:
    axes = [{"H": {"winner": "a", "strength": 2}}, {}, None]
    values = as_json_text(axes, None)
    assert values == ['{"H": {"winner": "a", "strength": 2}}', "{}", None]
    assert [json_text(v) for v in ({"é": [1.5, None]}, "x\n", None)] == [
        json.dumps(v) for v in ({"é": [1.5, None]}, "x\n", None)
    ]
    packed = Chunk([1, 2, 3], names=["id", "axes"], columns=[["a", "b", "c"], values],
                   texts=frozenset({"axes"})).packed()  # fmt: skip
    chunk = Chunk.unpacked(packed)
    assert chunk.texts == {"axes"} and chunk.as_columns() == (
        ["id", "axes"],
        [["a", "b", "c"], values],
    )
    assert chunk.column("axes") == axes and [r["axes"] for _, r in chunk.rows()] == axes


def test_json_columns_come_as_the_text_sqlite_stores_and_are_stored_as_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: list[ReadAhead]
) -> None:
    """Read ahead, a bundle's JSON columns come as their text (written by the reading
    processes) and are stored as that text: byte for byte what SQLAlchemy writes of their
    values, as when they come as values. PostgreSQL gets them as values."""
    bundle = _bundle(tmp_path, items=4)
    store = _store(tmp_path / "text.db")
    texts = json_texts(JudgmentRow, store.engine.dialect)
    assert texts == {"axes": "null", "refused": "null"}  # none written as JSON's null
    read = _bundles.read_bundle(bundle)
    path, digest = bundle / "judgments.jsonl", read.tables["judgments.jsonl"]
    first = next(iter(_bundles._chunks(path, JudgmentRow, digest, read.version, 5, texts)))
    assert first.texts == {"axes", "refused"} and first.as_columns() is not None
    assert isinstance(first.as_columns()[1][first.as_columns()[0].index("axes")][0], str)
    import_bundle(store, bundle)
    monkeypatch.setattr(_bundles, "json_texts", lambda model, dialect: {})
    import_bundle(_store(tmp_path / "values.db"), bundle)
    assert len(read_ahead) == 2 and read_ahead[-1].stopped()
    as_text, as_values = (
        sqlite3.connect(tmp_path / "text.db"),
        sqlite3.connect(tmp_path / "values.db"),
    )
    for name, model in TABLES:
        columns = sorted(json_texts(model, store.engine.dialect))
        if not columns:
            continue
        query = f"SELECT {', '.join(columns)} FROM {model.__tablename__}"
        stored = sorted(as_text.execute(query).fetchall(), key=repr)
        assert stored == sorted(as_values.execute(query).fetchall(), key=repr), name
    assert as_text.execute("SELECT count(*) FROM judgments").fetchone() == (24,)
    assert json_texts(JudgmentRow, postgresql.dialect()) == {}


def test_a_column_that_repeats_its_texts_is_sent_holding_each_once() -> None:
    hashes = [f"{n % 3:064d}" for n in range(200)]  # equal texts, each a new object
    assert len({id(h) for h in hashes}) == 200
    ids = [f"row-{n}" for n in range(200)]
    axes: list[Any] = [{"E": {"winner": "a", "strength": 1}}] * 100 + [[1], [2]] * 50
    chunk = Chunk(list(range(1, 201)), names=["h", "id", "axes"], columns=[hashes, ids, axes])
    numbers, names, columns, _ = chunk.packed()
    assert columns == [hashes, ids, axes] and numbers == list(range(1, 201))
    assert len({id(h) for h in columns[0]}) == 3 and columns[1] is ids and columns[2] is axes
    alone = pickle.dumps((numbers, names, [hashes, ids, axes], frozenset()))
    assert len(pickle.dumps(chunk.packed())) < len(alone) - 150 * 64  # each hash pickled once
    unpacked = Chunk.unpacked(pickle.loads(pickle.dumps(chunk.packed())))
    assert unpacked.column("h") == hashes and len({id(h) for h in unpacked.column("h")}) == 3
    mixed = ["x", "x", "x", "x", {"a": 1}]  # a JSON column's values, text and not
    assert shared(mixed) is mixed
