"""Rows read from a bundle or a table file, checked against the study and added to it all or
nothing: the tables a bundle carries, what an import added, and the store's own refusals."""

from __future__ import annotations

import gc
import json
import random
import re
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import (
    JSON,
    Connection,
    Index,
    String,
    UniqueConstraint,
    insert,
    inspect,
    select,
    tuple_,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session

from heart.errors import ImportRefused
from heart.import_checks import (
    describe,
    parse_json,
)
from heart.provenance import (
    PROVENANCE_FILE,
)
from heart.release._chunk import Chunk, Row, by_column, json_text
from heart.store import (
    Base,
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
)
from heart.utf8 import NotUtf8, decode_utf8

# Export order is dependency order, so an import can insert file by file.
TABLES: list[tuple[str, type[Base]]] = [
    ("systems.jsonl", SystemRow),
    ("judges.jsonl", JudgeRow),
    ("raters.jsonl", RaterRow),
    ("prompts.jsonl", PromptRow),
    ("conversations.jsonl", ConversationRow),
    ("items.jsonl", ItemRow),
    ("screening.jsonl", ScreeningRow),
    ("rewrites.jsonl", RewriteRow),
    ("completions.jsonl", CompletionRow),
    ("pairs.jsonl", PairRow),
    ("judgments.jsonl", JudgmentRow),
    ("strategy_labels.jsonl", LabelRow),
    ("strategy_classifications.jsonl", ClassificationRow),
    ("rationale_codings.jsonl", RationaleCodingRow),
    ("rationale_codes.jsonl", RationaleCodeRow),
]


PRIVATE_COLUMNS: dict[type[Base], frozenset[str]] = {
    RaterRow: frozenset({"token_hash", "meta"}),
}
"""Columns that never leave the study: a rater's invite-token hash and entry metadata. A bundle
carries raters only as pseudonymous ids with their exclusion reason."""


# (file, column) -> (file whose rows it references, the referenced key column)
REFERENCES: dict[tuple[str, str], tuple[str, str]] = {
    ("items.jsonl", "conversation_id"): ("conversations.jsonl", "id"),
    ("screening.jsonl", "conversation_id"): ("conversations.jsonl", "id"),
    ("rewrites.jsonl", "conversation_id"): ("conversations.jsonl", "id"),
    ("completions.jsonl", "item_id"): ("items.jsonl", "id"),
    ("completions.jsonl", "system"): ("systems.jsonl", "name"),
    ("pairs.jsonl", "item_id"): ("items.jsonl", "id"),
    ("pairs.jsonl", "a_id"): ("completions.jsonl", "id"),
    ("pairs.jsonl", "b_id"): ("completions.jsonl", "id"),
    ("judgments.jsonl", "pair_id"): ("pairs.jsonl", "id"),
    ("judgments.jsonl", "judge"): ("judges.jsonl", "name"),
    ("strategy_labels.jsonl", "completion_id"): ("completions.jsonl", "id"),
    ("strategy_labels.jsonl", "rater_id"): ("raters.jsonl", "id"),
    ("strategy_classifications.jsonl", "completion_id"): ("completions.jsonl", "id"),
    ("rationale_codings.jsonl", "judgment_id"): ("judgments.jsonl", "id"),
    ("rationale_codes.jsonl", "coding_id"): ("rationale_codings.jsonl", "id"),
    ("rationale_codes.jsonl", "judgment_id"): ("judgments.jsonl", "id"),
}


def carried_columns(model: type[Base]) -> list[str]:
    """The columns a bundle carries for ``model``'s table."""
    private = PRIVATE_COLUMNS.get(model, frozenset())
    return [str(c.key) for c in inspect(model).columns if c.key not in private]


def key_columns(model: type[Base]) -> list[str]:
    return [str(c.key) for c in inspect(model).primary_key]


@dataclass
class ImportSummary:
    """What an import stored, per table: rows new to the study (``added``), rows the study held
    already, the same (``unchanged``), and rows the file gave again, the same as their first
    (``repeated``). A row that conflicts with either is refused, and with it the import."""

    added: dict[str, int]
    unchanged: dict[str, int]
    repeated: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: the new rows per table, then how many were already stored or repeated."""
        new = ", ".join(f"{name} {n}" for name, n in self.added.items()) or "nothing new"
        stored, repeated = sum(self.unchanged.values()), sum(self.repeated.values())
        notes = [f"{stored} {'row' if stored == 1 else 'rows'} already stored"] if stored else []
        notes += [f"{repeated} repeated in the file"] if repeated else []
        return new + (f" ({', '.join(notes)})" if notes else "")

    def all_new(self) -> ImportSummary:
        """This import into a study it created: what that study held already came from the
        import itself (its study file's systems and judges), so every row stored is new."""
        order = [*dict(TABLES), PROVENANCE_FILE]
        names = sorted({*self.added, *self.unchanged}, key=order.index)
        added = {name: self.added.get(name, 0) + self.unchanged.get(name, 0) for name in names}
        return ImportSummary(added, {}, dict(self.repeated))


BUNDLE_FIX = "correct the row, or export the bundle again"

BOOKKEEPING = frozenset({"created_at"})
"""Columns that say when a row was stored, not what it says: a rerun of an import differs only
there, and adds nothing."""


def decode_file(path: Path, data: bytes) -> str:
    try:
        return decode_utf8(data)
    except NotUtf8 as bad:
        raise ImportRefused(f"{path} line {bad.line}: {bad}; save the file as UTF-8") from None


def file_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ImportRefused(f"{path}: cannot be read ({exc.strerror}); check the path") from None


_SPACED_KEY = re.compile(r'"\s+:')


def _spaced(text: str) -> bool:
    """Whether a key of the JSON lines ``text`` may be spaced from its colon: only JSON's
    whitespace (a space, a tab, a carriage return) may stand there, so a text without any of
    them after a quote is not searched."""
    quick = '" ' in text or '"\t' in text or '"\r' in text
    return quick and _SPACED_KEY.search(text) is not None


def _keys(value: Any) -> int:
    """How many keys the objects in a JSON value hold, nested ones counted: a level of nesting
    at a time, each level's objects and arrays gathered by comprehensions (no call an object)."""
    count, level = 0, [value]
    while level:
        objects = [v for v in level if type(v) is dict]
        count += sum(map(len, objects))
        inner = [x for o in objects for x in o.values()]
        inner += [x for v in level if type(v) is list for x in v]
        level = [x for x in inner if type(x) is dict or type(x) is list]
    return count


def parse_line(path: Path, number: int, line: str) -> dict[str, Any] | None:
    """Line ``number`` of a JSON Lines file: one JSON object, or None for a blank line."""
    try:  # read at the parser's own speed when no key can be given twice in the line: each
        # key ends in '":' (none is spaced from its colon) and there are no more of those
        # than keys read, so none was read twice (the last of a key given twice wins)
        value = json.loads(line)
        if (
            type(value) is dict
            and line.count('":') == _keys(value)
            and _SPACED_KEY.search(line) is None
        ):
            return value
    except (ValueError, RecursionError):
        pass  # read again below, for the message
    if not line.strip():
        return None
    value = parse_json(line, f"{path} line {number}", "write one JSON object a line")
    if not isinstance(value, dict):
        raise ImportRefused(f"{path} line {number}: expected a JSON object, got {describe(value)}")
    return value


_decode: Callable[[str], Any] = msgspec.json.Decoder().decode
"""A JSON parser about twice as fast as ``json``'s on a bundle's lines. Every text it reads,
``json.loads`` reads to the same value (numbers of any size, duplicate keys, nesting as deep);
what ``json`` reads that it refuses (NaN, Infinity, lone surrogates) is read by ``parse_line``."""

_NOT_READ = (msgspec.DecodeError, ValueError, RecursionError)


@dataclass
class LinesRead:
    """A chunk's lines of rows, read with the keys of each line not yet checked for one given
    twice: that is done for the whole chunk at once (``check_keys``)."""

    path: Path
    lines: list[tuple[int, str]]  # (number, text) of each line that gave a row
    keys: int  # the keys of those rows, nested ones not counted

    def check_keys(self, columns: Mapping[str, Iterable[Any]], nested: Container[str]) -> None:
        """Refuse a key given twice in a line, ``columns`` holding the chunk's values column
        by column and ``nested`` naming those that may hold objects or arrays (the keys in any
        other are not counted: a chunk with one is read again a line at a time). Each key of a
        line ends in '":' when none is spaced from its colon, so no line gives a key twice when
        the chunk holds no more of those than keys read (as in ``parse_line``, a line at a
        time)."""
        text = "\n".join(line for _, line in self.lines)
        if not _spaced(text):
            inner = sum(_keys(list(columns[name])) for name in columns if name in nested)
            if text.count('":') == self.keys + inner:
                return
        self.refuse_keys_twice()

    def refuse_keys_twice(self) -> None:
        """Read each line again, a line at a time, refusing the first that gives a key
        twice."""
        for number, line in self.lines:
            parse_line(self.path, number, line)


def read_lines(path: Path, lines: list[str], first: int) -> tuple[list[Row], LinesRead]:
    """The rows of ``lines`` (the first of them line ``first``), each read by the quicker
    parser (``_decode``) when it is one JSON object, else by ``parse_line``; blank lines give
    none. Keys given twice are refused once the chunk's columns are known
    (``LinesRead.check_keys``)."""
    rows: list[Row] = []
    read: list[tuple[int, str]] = []
    for number, line in enumerate(lines, first):
        try:
            value = _decode(line)
        except _NOT_READ:
            value = None
        if type(value) is not dict:
            try:
                value = parse_line(path, number, line)
            except ImportRefused:
                LinesRead(path, read, 0).refuse_keys_twice()  # an earlier line's problem first
                raise
            if value is None:
                continue
        rows.append((number, value))
        read.append((number, line))
    return rows, LinesRead(path, read, sum(len(record) for _, record in rows))


def parse_jsonl(path: Path, text: str) -> list[Row]:
    """One JSON object per line; blank lines are skipped."""
    rows = []
    for number, line in enumerate(text.split("\n"), 1):
        value = parse_line(path, number, line)
        if value is not None:
            rows.append((number, value))
    return rows


def fill_defaults(model: type[Base], record: dict[str, Any]) -> None:
    """Give ``record`` the default of every column a bundle carries that it leaves out and that
    has one."""
    carried = set(carried_columns(model))
    for column in inspect(model).columns:
        default: Any = column.default  # a scalar or callable column default, or None
        if default is not None and column.key in carried and column.key not in record:
            record[str(column.key)] = default.arg(None) if default.is_callable else default.arg


def existing_keys(session: Session, name: str, column: str) -> set[Any]:
    """The values of ``column`` in the stored table of bundle file ``name``; text keys are read
    through the driver's own cursor (a large table's keys in a third of the ORM's time)."""
    model = dict(TABLES)[name]
    key = model.__table__.c[column]
    if not isinstance(key.type, String):  # a value the driver gives needs converting
        return set(session.scalars(select(key)))
    connection = session.connection()
    cursor = connection.connection.cursor()
    try:
        cursor.execute(str(select(key).compile(dialect=connection.dialect)))
        return {row[0] for row in cursor.fetchall()}
    finally:
        cursor.close()


Where = Callable[[str, int], str]
"""The file and line a table's row came from, for messages."""


def _changed(stored: dict[str, Any], record: dict[str, Any]) -> list[str]:
    """The columns in which ``record`` says something other than ``stored``."""
    return sorted(k for k in stored if k not in BOOKKEEPING and stored[k] != record.get(k))


def _unique_columns(model: type[Base]) -> list[tuple[str, ...]]:
    """Every set of columns besides the key that no two rows of ``model``'s table may share."""
    private = PRIVATE_COLUMNS.get(model, frozenset())
    table = Base.metadata.tables[str(model.__tablename__)]
    sets = {
        tuple(str(c.key) for c in u.columns)
        for u in table.constraints
        if isinstance(u, UniqueConstraint)
    }
    sets |= {(str(c.key),) for c in table.columns if c.unique}
    return sorted(s for s in sets if not private & set(s))


Owners = dict[tuple[str, ...], dict[tuple[Any, ...], tuple[Any, ...]]]
"""For each unique set of columns, the key of the row that holds each of its values."""


def _unique_owners(connection: Connection, model: type[Base]) -> Owners:
    """The key of the stored row that holds each value of each unique set of columns."""
    table, keys = model.__table__, key_columns(model)
    owners: Owners = {}
    for unique in _unique_columns(model):
        held = owners[unique] = {}
        for values in connection.execute(select(*(table.c[c] for c in (*keys, *unique)))):
            held[tuple(values[len(keys) :])] = tuple(values[: len(keys)])
    return owners


LOOKUP = 500
"""Keys looked up in the store per query (well under every database's limit of parameters)."""

INSERT = 10_000
"""Rows inserted per statement: the database gets them many at a time, and memory stays small."""

DEFER_INDEXES = 100_000
"""Rows an import adds to a table before its plain indexes are set aside until the end
(``_TableAdd._set_indexes_aside``)."""


def _rows_by_key(
    connection: Connection, model: type[Base], keys: list[tuple[Any, ...]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The stored rows of ``model``'s table among ``keys`` (their carried columns), by key, read
    LOOKUP keys a query."""
    table, names, carried = model.__table__, key_columns(model), carried_columns(model)
    columns = [table.c[c] for c in names]
    at = [carried.index(c) for c in names]
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for start in range(0, len(keys), LOOKUP):
        chunk = keys[start : start + LOOKUP]
        match = (
            columns[0].in_([k[0] for k in chunk])
            if len(columns) == 1
            else tuple_(*columns).in_(chunk)
        )
        query = select(*(table.c[c] for c in carried)).where(match)
        for row in connection.execute(query):
            found[tuple(row[i] for i in at)] = dict(zip(carried, row, strict=True))
    return found


class _TableAdd:
    """The new rows of one table, added a chunk at a time. A row stored already, or given again,
    is left as it is, and only if it says the same; it keeps only the keys of the rows it has
    seen (with their first line) and the values of the table's unique columns."""

    def __init__(self, connection: Connection, name: str, where: Where) -> None:
        self.connection, self.name, self.where = connection, name, where
        self.model = dict(TABLES)[name]
        self.keys, self.uniques = key_columns(self.model), _unique_columns(self.model)
        self.held: set[tuple[Any, ...]] | None = None  # keys stored before the import, once read
        self.owners: Owners = {}
        self.seen: dict[tuple[Any, ...], int] = {}  # key -> the line that first gave it
        self.added = self.unchanged = self.repeated = 0
        self.set_aside: list[Index] = []  # indexes dropped while rows go in, built at the end
        self.null_filled: frozenset[str] | None = None  # columns NULL unless an insert names them

    def add(self, chunk: Chunk) -> None:
        if self.held is None:
            table = self.model.__table__
            self.held = {
                tuple(r) for r in self.connection.execute(select(*(table.c[k] for k in self.keys)))
            }
            self.owners = _unique_owners(self.connection, self.model)
        keys = chunk.tuples(self.keys)
        if self._all_new(chunk, keys):
            self.seen.update(zip(keys, chunk.numbers, strict=True))
            self._insert_chunk(chunk)
            self.added += len(chunk)
            self._set_indexes_aside()
            return
        # rows stored before, and the first of a key an earlier chunk gave (stored by now)
        wanted = {k for k in keys if k in self.held or k in self.seen}
        found = _rows_by_key(self.connection, self.model, list(wanted)) if wanted else {}
        firsts: dict[tuple[Any, ...], dict[str, Any]] = {}  # this chunk's rows, by key
        new: list[dict[str, Any]] = []
        for (number, record), key in zip(chunk.rows(), keys, strict=True):
            first_line = self.seen.get(key)
            if first_line is not None:
                first = firsts[key] if key in firsts else found[key]
                changed = _changed(first, record)
                if changed:
                    raise ImportRefused(
                        f"{self.where(self.name, number)}: line {first_line} gives the row with "
                        f"key {list(key)} already, and this one differs in {changed}; keep one"
                    )
                self.repeated += 1
                continue
            self.seen[key] = number
            firsts[key] = record
            stored = found.get(key)
            if stored is not None:
                changed = _changed(stored, record)
                if changed:
                    raise ImportRefused(
                        f"{self.where(self.name, number)}: a different row with key {list(key)} "
                        f"is already stored (it differs in {changed}); nothing was imported"
                    )
                self.unchanged += 1
                continue
            for unique in self.uniques:
                owner = self.owners[unique].setdefault(tuple(record[c] for c in unique), key)
                if owner != key:
                    raise ImportRefused(
                        f"{self.where(self.name, number)}: the row with key {list(owner)} has the "
                        f"same {', '.join(unique)}; nothing was imported"
                    )
            new.append(record)
        self._insert(new)
        self.added += len(new)

    def _all_new(self, chunk: Chunk, keys: list[tuple[Any, ...]]) -> bool:
        """Whether every row of a chunk is new: its key neither stored, nor given before, nor
        twice in the chunk, and its unique columns' values held by no other row. Then their
        unique values are kept as theirs, and the chunk needs no look a row at a time."""
        distinct = set(keys)
        if (
            len(distinct) != len(keys)
            or not self.held.isdisjoint(distinct)  # type: ignore[union-attr]
            or not self.seen.keys().isdisjoint(distinct)
        ):
            return False
        claims = []
        for unique in self.uniques:
            values = chunk.tuples(unique)
            if len(set(values)) != len(values) or not self.owners[unique].keys().isdisjoint(values):
                return False
            claims.append((unique, values))
        for unique, values in claims:
            self.owners[unique].update(zip(values, keys, strict=True))
        return True

    def _set_indexes_aside(self) -> None:
        """On SQLite, once an import has added DEFER_INDEXES rows or more and at least as many
        as the table held, drop the table's plain (not unique) indexes until ``finish``: one
        index built from every row at the end is quicker than one kept row by row, in random
        order. Dropped inside the import's transaction, they are back if it rolls back."""
        if (
            self.set_aside
            or self.connection.dialect.name != "sqlite"
            or self.added < max(DEFER_INDEXES, len(self.held or ()))
        ):
            return
        table = Base.metadata.tables[str(self.model.__tablename__)]
        self.set_aside = sorted(
            (index for index in table.indexes if not index.unique), key=lambda i: str(i.name)
        )
        for index in self.set_aside:
            index.drop(self.connection)

    def stored_keys(self, column: str) -> set[Any] | None:
        """The values of key ``column`` in the table now that every chunk is added: those
        stored before and those the import gave. None when the table is keyed otherwise, or no
        chunk came (the stored ones were not read)."""
        if self.held is None or self.keys != [column]:
            return None
        return {key for (key,) in self.held} | {key for (key,) in self.seen}

    def finish(self) -> None:
        """Build the indexes set aside while the rows went in."""
        for index in self.set_aside:
            index.create(self.connection)
        self.set_aside = []

    def _insert_chunk(self, chunk: Chunk) -> None:
        """Insert every row of ``chunk``, many rows to a statement: on SQLite straight from its
        columns when every row gives the same ones, else a record at a time (``_insert``)."""
        columns = chunk.as_columns() if self.connection.dialect.name == "sqlite" else None
        if columns is not None:
            columns = self._without_nulls(*columns)
        plain = (
            None if columns is None else _plain_statement(self.connection, self.model, columns[0])
        )
        if columns is None or plain is None:
            self._insert(chunk.records())
            return
        names, values = columns
        for start in range(0, len(chunk), INSERT):
            part = [column[start : start + INSERT] for column in values]
            _insert_columns(self.connection, self.model, plain, names, part, chunk.texts)

    def _without_nulls(
        self, names: list[str], columns: list[list[Any]]
    ) -> tuple[list[str], list[list[Any]]]:
        """The columns of a chunk less those that hold only None and that the store fills with
        NULL when an insert leaves them out (``_null_filled``): SQLite stores the same row, and
        binds fewer values."""
        if self.null_filled is None:
            self.null_filled = _null_filled(self.connection, self.model)
        kept = [
            (name, values)
            for name, values in zip(names, columns, strict=True)
            if name not in self.null_filled or values.count(None) != len(values)
        ]
        return [name for name, _ in kept], [values for _, values in kept]

    def _insert(self, records: list[dict[str, Any]]) -> None:
        """Insert ``records``, many rows to a statement; rows that leave out different columns
        (which take their defaults) go in separate statements."""
        batch: list[dict[str, Any]] = []
        for record in records:
            if batch and (len(batch) == INSERT or batch[0].keys() != record.keys()):
                insert_rows(self.connection, self.model, batch)
                batch = []
            batch.append(record)
        if batch:
            insert_rows(self.connection, self.model, batch)


def _json_text(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert`` for a JSON column (SQLAlchemy's, which writes ``json.dumps`` of the value),
    made quicker: an empty list or object (most rows hold one) gets its text at once, and any
    other list or object is written by one encoder made once (``json_text``), to the same
    text."""
    empty = {"[]": convert([]), "{}": convert({})}
    same = _writes_dumps(convert)

    def quick(value: Any) -> Any:
        kind = type(value)
        if kind is list or kind is dict:
            if not value:
                return empty["[]" if kind is list else "{}"]
            if same:
                return json_text(value)
        return convert(value)

    return quick


_SAMPLE = {"é": [1.5, None, "\n"]}


def _writes_dumps(convert: Callable[[Any], Any]) -> bool:
    """Whether a JSON column's ``convert`` writes the text ``json.dumps`` gives."""
    return bool(convert(_SAMPLE) == json.dumps(_SAMPLE))


def json_texts(model: type[Base], dialect: Dialect) -> dict[str, str | None]:
    """The JSON columns of ``model``'s table that ``dialect`` (SQLite) stores as the text
    ``json.dumps`` gives, each with what it stores for none: an import may carry their values
    as that text (``Chunk.texts``), written by the process that reads them."""
    if dialect.name != "sqlite":
        return {}
    out: dict[str, str | None] = {}
    for column in Base.metadata.tables[str(model.__tablename__)].columns:
        kind = column.type.dialect_impl(dialect)
        process = kind.bind_processor(dialect)
        if isinstance(kind, JSON) and process is not None and _writes_dumps(process):
            out[str(column.key)] = process(None)
    return out


def _null_filled(connection: Connection, model: type[Base]) -> frozenset[str]:
    """On SQLite, the columns of ``model``'s table that take NULL when an insert leaves them out:
    nullable, with no default of SQLAlchemy's nor of the stored table's own (which a migration
    may have given it), and not JSON (SQLAlchemy may write a JSON column's none as its text)."""
    table = Base.metadata.tables[str(model.__tablename__)]
    stored = connection.exec_driver_sql(f'PRAGMA table_info("{table.name}")').fetchall()
    plain = {str(row[1]) for row in stored if row[4] is None and not row[3]}  # dflt_value, notnull
    return frozenset(
        column.key
        for column in table.columns
        if column.key in plain
        and column.nullable
        and column.default is None
        and column.server_default is None
        and not isinstance(column.type, JSON)
    )


def _plain_statement(
    connection: Connection, model: type[Base], names: list[str]
) -> tuple[str, list[str]] | None:
    """On SQLite, the insert of exactly ``names`` into ``model``'s table and its columns' order,
    when it needs no defaults of SQLAlchemy's filled in; else None."""
    table, dialect = Base.metadata.tables[str(model.__tablename__)], connection.dialect
    if dialect.name != "sqlite":
        return None
    compiled = insert(table).compile(dialect=dialect, column_keys=names)
    order = list(compiled.positiontup or ())
    return (compiled.string, order) if set(order) == set(names) else None


def insert_rows(connection: Connection, model: type[Base], records: list[dict[str, Any]]) -> None:
    """Insert ``records`` (each with the same columns) into ``model``'s table in one statement:
    on SQLite a column at a time (``_insert_columns``) when they give every column the statement
    names; other databases, and rows leaving columns to their defaults, go through SQLAlchemy."""
    names = list(records[0])
    plain = _plain_statement(connection, model, names)
    if plain is None:
        connection.execute(insert(Base.metadata.tables[str(model.__tablename__)]), records)
        return
    # records are left as they are: a rerun of the import reads them again
    _insert_columns(connection, model, plain, *by_column(records))


def _insert_columns(
    connection: Connection,
    model: type[Base],
    plain: tuple[str, list[str]],
    names: list[str],
    columns: list[list[Any]],
    texts: Container[str] = (),
) -> None:
    """Insert rows given column by column (``names``) into ``model``'s table with ``plain``,
    the statement ``_plain_statement`` made for them, each value converted as SQLAlchemy
    converts it (JSON to its text) but without SQLAlchemy's work per row; the columns
    ``texts`` come as their text already (``json_texts``)."""
    statement, order = plain
    table, dialect = Base.metadata.tables[str(model.__tablename__)], connection.dialect
    at = {name: i for i, name in enumerate(names)}
    ordered: list[Iterable[Any]] = []
    for key in order:
        kind = table.c[key].type.dialect_impl(dialect)
        process = kind.bind_processor(dialect)
        values: Iterable[Any] = columns[at[key]]
        if process is not None and key not in texts:
            values = map(_json_text(process) if isinstance(kind, JSON) else process, values)
        ordered.append(values)
    connection.exec_driver_sql(statement, list(zip(*ordered, strict=True)))


OWN_WORK = ("judgments.jsonl", "strategy_labels.jsonl")
"""The tables of work that nobody does on a reply they wrote."""


class RowWriter:
    """An import's rows added to the store table by table, in dependency order (TABLES), a chunk
    at a time, inside the caller's transaction (the caller commits). Each chunk is checked
    against the study as it stands with the tables before it added (references, pairs, own
    work), then its new rows are inserted; between tables only the keys and the few columns
    that later tables are checked against are held: the keys of a table it added as it added
    them, the rest read back from the store when first needed. ``names`` maps a column to the
    file's own name for it."""

    def __init__(
        self, session: Session, where: Where, names: Mapping[str, str] | None = None
    ) -> None:
        self.session = session
        self.connection = session.connection()  # plain rows: no ORM bookkeeping per row
        self.where, self.names = where, names or {}
        self.summary = ImportSummary(added={}, unchanged={})
        self._done = -1  # the position in TABLES of the last table added
        self._known: dict[tuple[str, str], set[Any]] = {}
        self._owner: dict[str, tuple[str, str]] | None = None  # completion -> (item, system)
        self._writer: dict[str, str] | None = None  # completion -> its contributor
        self._pairs: dict[str, tuple[str, str]] | None = None  # pair -> (a, b)

    def add_table(self, name: str, chunks: Iterable[Chunk]) -> None:
        """Add one table's rows, given a chunk at a time; tables come in TABLES order."""
        position = [n for n, _ in TABLES].index(name)
        assert position > self._done, f"{name} comes before the tables already added"
        self._done = position
        table = _TableAdd(self.connection, name, self.where)
        references = [(c, t) for (n, c), t in REFERENCES.items() if n == name]
        for chunk in chunks:
            if not len(chunk):
                continue
            for column, target in references:
                self._check_references(name, chunk, column, target)
            if name == "pairs.jsonl":
                self._check_pairs(chunk)
            if name in OWN_WORK:
                self._refuse_own_work(name, chunk)
            table.add(chunk)
        table.finish()
        for column in {c for target, c in REFERENCES.values() if target == name}:
            keys = table.stored_keys(column)
            if keys is not None:  # what later tables refer to, without reading it back
                self._known[(name, column)] = keys
        for kept, n in zip(
            (self.summary.added, self.summary.unchanged, self.summary.repeated),
            (table.added, table.unchanged, table.repeated),
            strict=True,
        ):
            if n:
                kept[name] = n

    def _check_references(
        self, name: str, chunk: Chunk, column: str, target: tuple[str, str]
    ) -> None:
        known = self._known.get(target)
        if known is None:  # the referenced table is added already: the store holds all its keys
            known = self._known[target] = existing_keys(self.session, *target)
        values = chunk.column(column)
        if known.issuperset(values):
            return
        for number, value in zip(chunk.numbers, values, strict=True):
            if value not in known:
                what = target[0].removesuffix(".jsonl").rstrip("s")
                raise ImportRefused(
                    f"{self.where(name, number)}: '{column}' refers to unknown {what} "
                    f"{value!r}; add it to the study (or the bundle) first"
                )

    def _check_pairs(self, pairs: Chunk) -> None:
        """A pair holds two replies to its own item from two different systems (two replies of
        one system say nothing about its rating)."""
        if self._owner is None:
            rows = self.connection.execute(
                select(CompletionRow.id, CompletionRow.item_id, CompletionRow.system)
            )
            self._owner = {cid: (item, system) for cid, item, system in rows}
        owner = self._owner
        for number, a_id, b_id, pair_item in zip(
            pairs.numbers, pairs.column("a_id"), pairs.column("b_id"), pairs.column("item_id"),
            strict=True,
        ):  # fmt: skip
            (a_item, a_system), (b_item, b_system) = owner[a_id], owner[b_id]
            if a_system == b_system:
                raise ImportRefused(
                    f"{self.where('pairs.jsonl', number)}: 'b_id': both replies of the pair "
                    f"belong to system {a_system!r}, and a pair compares the replies of two "
                    f"systems; {BUNDLE_FIX}"
                )
            if a_item != pair_item or b_item != pair_item:
                column, item = ("a_id", a_item) if a_item != pair_item else ("b_id", b_item)
                raise ImportRefused(
                    f"{self.where('pairs.jsonl', number)}: '{column}' is a reply to item "
                    f"{item!r}, not to the pair's item {pair_item!r}; {BUNDLE_FIX}"
                )

    def _refuse_own_work(self, name: str, chunk: Chunk) -> None:
        """Nobody judges a pair holding a reply they wrote, nor labels such a reply: the rule the
        web app keeps when it hands out and takes back work (heart.people), kept for imported
        rows."""
        if self._writer is None:
            written = select(CompletionRow.id, CompletionRow.contributor).where(
                CompletionRow.contributor != ""
            )
            self._writer = {cid: who for cid, who in self.connection.execute(written)}
        writer, names = self._writer, self.names
        people = "rater_id" if name == "strategy_labels.jsonl" else "judge"
        if not set(writer.values()) & set(chunk.column(people)):
            return  # nobody in the chunk wrote a reply
        rows = chunk.rows()
        if name == "strategy_labels.jsonl":
            for number, r in rows:
                if writer.get(r["completion_id"]) == r["rater_id"]:
                    raise ImportRefused(
                        f"{self.where(name, number)}: '{names.get('rater_id', 'rater_id')}' is "
                        f"{r['rater_id']!r}, who wrote completion {r['completion_id']!r}, and "
                        "nobody labels their own reply (the web app refuses it too); leave the "
                        "row out"
                    )
            return
        if self._pairs is None:
            rows_read = self.connection.execute(select(PairRow.id, PairRow.a_id, PairRow.b_id))
            self._pairs = {pid: (a, b) for pid, a, b in rows_read}
        for number, r in rows:
            own = next((c for c in self._pairs[r["pair_id"]] if writer.get(c) == r["judge"]), None)
            if own is not None:
                raise ImportRefused(
                    f"{self.where(name, number)}: '{names.get('judge', 'judge')}' is "
                    f"{r['judge']!r}, who wrote one of the pair's replies (completion {own!r}), "
                    "and nobody judges their own reply (the web app refuses it too); leave the "
                    "row out"
                )


def insert_all(
    session: Session,
    tables: dict[str, list[Row]],
    where: Where,
    names: Mapping[str, str] | None = None,
) -> ImportSummary:
    """Add every table's new rows in dependency order, each checked for its references, pairs
    and own work first (the caller commits). ``names`` maps a column to the file's own name for
    it."""
    writer = RowWriter(session, where, names)
    for name, _ in TABLES:
        if name in tables:
            writer.add_table(name, [Chunk.of_rows(tables[name])])
    return writer.summary


RACE_ATTEMPTS = 5
"""How many times an import runs when imports beside it keep storing the same rows first."""

_CONTENTION = frozenset({"40001", "40P01"})
"""PostgreSQL's serialization failure and deadlock: the transaction lost a race, and can run
again."""


IMPORT_CACHE_KIB = 512 * 1024
"""SQLite's page cache while an import runs (it takes only what it uses): the indexes of a large
import's tables stay in memory instead of being read and written back page by page."""


@contextmanager
def _import_session(store: Store, alone: bool = False) -> Iterator[Session]:
    """A session for one import's transaction, committed on success and rolled back on any
    error. On SQLite its connection gets a larger page cache, and leaves the references to the
    import (which checks each against the store before it inserts a row: RowWriter) instead of
    looking each up again; both are the connection's own again once the transaction ends.
    ``alone``: the store is new and no other process can open it (a staged study's), so the
    import writes through a rollback journal, not the write-ahead log, which would write every
    page twice (once into the log, once into the store); the log is back once it is done."""
    if alone:
        store.engine.dispose()  # no other connection of this process: the journal can change
    with store.engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        before: tuple[Any, ...] = ()
        if sqlite:  # outside any transaction: SQLite ignores foreign_keys inside one
            before = tuple(
                connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("cache_size", "foreign_keys", "journal_mode")
            )
            connection.exec_driver_sql(f"PRAGMA cache_size=-{IMPORT_CACHE_KIB}")
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            if alone:  # refused (the mode stays) while another connection has the store open
                connection.exec_driver_sql("PRAGMA journal_mode=DELETE")
            connection.commit()
        try:
            with store.sessions(bind=connection) as session, session.begin():
                yield session
        finally:
            if sqlite:
                connection.rollback()  # nothing open: the session committed or rolled back
                cache, keys, journal = before
                connection.exec_driver_sql(f"PRAGMA cache_size={int(cache or 0)}")
                connection.exec_driver_sql(f"PRAGMA foreign_keys={'ON' if keys else 'OFF'}")
                if alone:
                    connection.exec_driver_sql(f"PRAGMA journal_mode={journal}")
                connection.commit()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector held off while an import runs: the rows it reads, checks and
    stores hold no cycles (counting references frees each), yet every collection of the oldest
    generation would walk each key a large import keeps, again and again."""
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()


def store_rows(
    store: Store, source: Path, write: Callable[[Session], ImportSummary], *, alone: bool = False
) -> ImportSummary:
    """Run ``write`` in one transaction, all or nothing (``alone``: in a store no other process
    can open, see ``_import_session``). When another import stores some of the
    same rows at the same moment, the store refuses the second of them as a duplicate (or, on
    PostgreSQL, ends one transaction as a deadlock): ``write`` then runs again, reading the
    other import's rows as already stored. A refusal that outlasts RACE_ATTEMPTS runs, or a
    store locked too long, is reported in one line naming ``source``; nothing is imported."""
    for attempt in range(1, RACE_ATTEMPTS + 1):
        try:
            with _import_session(store, alone) as session, collector_paused():
                return write(session)
        except IntegrityError as exc:
            problem = _first_line(exc)
        except OperationalError as exc:
            state = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
            if state not in _CONTENTION:
                if "locked" in str(exc.orig):
                    raise ImportRefused(
                        f"{source}: the store stayed locked by another process writing to it "
                        f"({_first_line(exc)}); nothing was imported; import again when it is "
                        "done"
                    ) from None
                raise
            problem = _first_line(exc)
        time.sleep(random.uniform(0.01, 0.05) * attempt)  # spread the racing imports apart
    raise ImportRefused(
        f"{source}: the store refused the rows {RACE_ATTEMPTS} times ({problem}), though each "
        "was checked against it first; nothing was imported; import again, and if it is "
        "refused again, check the store (`heart check`)"
    )


def _first_line(exc: DBAPIError) -> str:
    return str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc).__name__
