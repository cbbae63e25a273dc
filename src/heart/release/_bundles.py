"""Bundles: export a study as a self-describing folder (every table as JSON Lines, its study
file, provenance and a sha256 manifest), and read one back and import it as data only."""

from __future__ import annotations

import codecs
import copy
import hashlib
import itertools
import json
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from heart.config import STUDY_FILE, StudyConfig, parse_study
from heart.cores import usable_cores
from heart.errors import ConfigError, ImportRefused
from heart.import_checks import (
    KeyTwice,
    check_row,
    checked_columns,
    describe,
    json_columns,
    plain_lines,
    unique_keys,
)
from heart.provenance import (
    PROVENANCE_FILE,
    Provenance,
    build_provenance,
    parse_provenance,
    record_imported,
)
from heart.release._chunk import Chunk, Row, as_json_text
from heart.release._read_ahead import ReadAhead, reader
from heart.release._rows import (
    BUNDLE_FIX,
    TABLES,
    ImportSummary,
    LinesRead,
    RowWriter,
    carried_columns,
    decode_file,
    file_bytes,
    json_texts,
    key_columns,
    read_lines,
    store_rows,
)
from heart.store import (
    Base,
    Store,
)
from heart.types import sha256_hex

BUNDLE_FORMAT = "heart-bundle"
BUNDLE_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)  # 1 had no raters, labels, rewrites or codes; 2 no provenance
MANIFEST = "manifest.json"
EXPORT_CHUNK = 10_000  # rows written to a bundle's file at a time


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def export_bundle(
    store: Store, study_root: Path, out: Path, provenance: Provenance | None = None
) -> dict[str, Any]:
    """Write every table as sorted JSON Lines plus the study file, its provenance
    (``provenance``, else built now from the study file and the store) and a sha256 manifest.

    Contributors and raters appear only by their pseudonymous ids (raters with their exclusion
    reason); invite-token hashes and entry metadata stay home.
    """
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Any]] = {}
    study_file = study_root / STUDY_FILE
    config_text = study_file.read_text(encoding="utf-8")
    (out / STUDY_FILE).write_text(config_text, encoding="utf-8")
    files[STUDY_FILE] = {"sha256": sha256_hex(config_text), "rows": None}
    if provenance is None:
        try:
            config: StudyConfig | None = parse_study(config_text, str(study_file))
        except ConfigError:  # a file no study opens with: the bundle still says what it can
            config = None
        provenance = build_provenance(store, study_file, config)
    provenance_text = provenance.to_json()
    (out / PROVENANCE_FILE).write_text(provenance_text, encoding="utf-8")
    files[PROVENANCE_FILE] = {"sha256": sha256_hex(provenance_text), "rows": None}
    with store.session() as session:
        connection = session.connection()  # plain rows: no ORM bookkeeping on large studies
        for name, model in TABLES:
            files[name] = _export_table(connection, model, out / name)
    manifest = {"format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "files": files}
    (out / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return manifest


def _export_table(connection: Connection, model: type[Base], path: Path) -> dict[str, Any]:
    """Write the carried columns of every row of ``model``'s table to ``path`` as JSON Lines in
    key order, a chunk at a time; the file's sha256 and rows for the manifest."""
    table, columns = model.__table__, carried_columns(model)
    query = select(*(table.c[c] for c in columns)).order_by(
        *(table.c[k] for k in key_columns(model))
    )
    digest, rows = hashlib.sha256(), 0
    with path.open("w", encoding="utf-8", newline="") as out:
        streamed = query.execution_options(yield_per=EXPORT_CHUNK)
        for chunk in connection.execute(streamed).partitions():
            text = "".join(_line(dict(zip(columns, row, strict=True))) for row in chunk)
            out.write(text)
            digest.update(text.encode("utf-8"))
            rows += len(chunk)
    return {"sha256": digest.hexdigest(), "rows": rows}


FILES_SINCE: dict[str, int] = {
    STUDY_FILE: 1,
    **{name: 1 for name, _ in TABLES},
    "raters.jsonl": 2,
    "strategy_labels.jsonl": 2,
    "rewrites.jsonl": 3,  # these four came while bundles were at version 2, so one may lack them
    "strategy_classifications.jsonl": 3,
    "rationale_codings.jsonl": 3,
    "rationale_codes.jsonl": 3,
    PROVENANCE_FILE: 3,
}
"""The first bundle version whose every bundle has each file; a bundle of an older version may
lack a file its study could not yet hold, and nothing else."""


COLUMNS_SINCE: dict[tuple[str, str], tuple[int, Any]] = {
    ("judgments.jsonl", "refused"): (2, []),
    ("strategy_labels.jsonl", "taxonomy_hash"): (3, None),
    **{
        (name, column): (4, None)
        for name in (
            "completions.jsonl",
            "judgments.jsonl",
            "strategy_classifications.jsonl",
            "rationale_codings.jsonl",
        )
        for column in ("cached_tokens_in", "list_cost_usd")
    },
    ("pairs.jsonl", "people_chance"): (5, None),
}
"""Columns the store gained while bundles of an older version were written: the first version
whose every row has the column, and what a row written before it means (no re-asked answers; a
taxonomy not recorded; cached tokens and list price not recorded; no pair drawn for people).
Every other column of a
bundle's table is required in every row."""


def _read_manifest(bundle: Path) -> tuple[int, dict[str, str]]:
    """The bundle's version and the sha256 of each of its files, from a manifest of a version
    this release reads that lists every file a bundle of its version has."""
    path = bundle / MANIFEST
    if not path.is_file():
        raise ImportRefused(f"{bundle}: no {MANIFEST}; is this a folder written by `heart export`?")
    try:
        manifest = json.loads(decode_file(path, file_bytes(path)), object_pairs_hook=unique_keys)
    except KeyTwice as twice:
        raise ImportRefused(f"{path}: {twice}; keep one, or export the bundle again") from None
    except RecursionError:
        raise ImportRefused(f"{path}: JSON nested too deeply; export the bundle again") from None
    except ValueError as exc:
        where = f" line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ImportRefused(
            f"{path}{where}: not valid JSON ({problem}); export the bundle again"
        ) from None
    if not isinstance(manifest, dict):
        raise ImportRefused(f"{path}: expected a JSON object, got {describe(manifest)}")
    version = manifest.get("version")
    if manifest.get("format") != BUNDLE_FORMAT or not (
        type(version) is int and version in READABLE_VERSIONS
    ):
        raise ImportRefused(
            f"{path}: format {manifest.get('format')!r} version {version!r} is not a heart "
            "bundle this version reads"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or STUDY_FILE not in files:
        raise ImportRefused(
            f"{path}: 'files' must list the bundle's files (study.yaml among them) with their "
            "sha256; export the bundle again"
        )
    hashes: dict[str, str] = {}
    for name, entry in files.items():
        if name not in FILES_SINCE:
            raise ImportRefused(
                f"{path}: 'files' lists {name!r}, which is no file of a heart bundle; "
                "export the bundle again"
            )
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str):
            raise ImportRefused(
                f"{path}: 'files.{name}.sha256' must be the file's sha256; export the bundle again"
            )
        hashes[name] = digest
    for name, since in FILES_SINCE.items():
        if version >= since and name not in hashes:
            raise ImportRefused(
                f"{path}: 'files' does not list {name}, which every bundle of version {version} "
                "has; export the bundle again"
            )
    return version, hashes


def _refuse_unlisted(bundle: Path, listed: Iterable[str]) -> None:
    """A bundle folder holds its manifest and the files it lists, nothing else."""
    known = {MANIFEST, *listed}
    for entry in sorted(bundle.iterdir()):
        if entry.name not in known:
            raise ImportRefused(
                f"{entry}: in the bundle but not listed in {MANIFEST}; a bundle holds only the "
                "files its manifest lists: remove it, or export the bundle again"
            )


def _check_rows(
    path: Path,
    model: type[Base],
    rows: list[Row],
    version: int,
    plain: Container[int] = (),
    read: LinesRead | None = None,
) -> dict[str, tuple[Any, ...]]:
    """The rows' values column by column, once every column is checked: refuse unknown
    columns, missing ones and values the table cannot hold. Every column the
    bundle's version has is required: only a row of an older version may leave out a column the
    store gained since (COLUMNS_SINCE), and it means what such a row meant. ``plain``: the lines
    whose text ``plain_json`` found plain. ``read``: how the lines were read, their keys checked
    here for the whole chunk at once (``LinesRead.check_keys``).

    The chunk is looked at column by column first; only a chunk with a value that this does not
    pass is checked row by row, which names the problem."""
    if not rows:
        return {}
    expected = carried_columns(model)
    older = {
        column: value
        for (name, column), (since, value) in COLUMNS_SINCE.items()
        if name == path.name and version < since
    }
    at = f"{path} line"
    for _, record in rows if older else ():
        for column, value in older.items():
            record.setdefault(column, copy.deepcopy(value))
    records = [record for _, record in rows]
    try:  # every row holds as many columns as expected, and each of them: the same columns
        same = set(map(len, records)) == {len(expected)}
        values = zip(*map(itemgetter(*expected), records), strict=True) if same else None
    except KeyError:
        values = None
    if values is None:
        if read is not None:
            read.refuse_keys_twice()  # as a reading a row at a time would have, first
        for number, record in rows:
            if record.keys() != set(expected):
                unknown, missing = set(record) - set(expected), set(expected) - set(record)
                raise ImportRefused(
                    f"{at} {number}: columns do not match the store "
                    f"(unknown {sorted(unknown)}, missing {sorted(missing)}); {BUNDLE_FIX}"
                )
        raise AssertionError("a row's columns differ, yet none was refused")
    columns = dict(zip(expected, values, strict=True))
    if read is not None:
        read.check_keys(columns, json_columns(model))
    everywhere = isinstance(plain, set) and len(plain) == len(rows)
    if not checked_columns(model, columns, plain=everywhere):
        for number, record in rows:
            check_row(model, record, f"{at} {number}", BUNDLE_FIX, plain=number in plain)
    return columns


@dataclass(frozen=True)
class Bundle:
    """A bundle, its files checked (listed, whole, UTF-8) and nothing written yet: its study
    file (a record of the study it came from, never settings of the study it goes into), the
    sha256 of each table file it holds (their rows are read as they are stored), and that
    study's provenance (none before version 3)."""

    path: Path
    version: int
    study_file: str
    tables: dict[str, str]
    provenance: Provenance | None


def _checked_text(path: Path, digest: str) -> str:
    """The text of a bundle's file, refused unless it is there, matches its sha256 and is
    UTF-8."""
    if not path.is_file():
        raise ImportRefused(f"{path}: listed in {MANIFEST} but missing")
    data = file_bytes(path)
    if hashlib.sha256(data).hexdigest() != digest:
        raise ImportRefused(f"{path}: sha256 differs from {MANIFEST}; the bundle was altered")
    return decode_file(path, data)


READ_BLOCK = 1 << 20
"""Bytes of a bundle's file read at a time while it is checked."""


def _check_file(path: Path, digest: str) -> None:
    """Refuse a bundle's file unless it is there, matches its sha256 and is UTF-8, reading it a
    block at a time (a table file may be larger than memory allows to hold)."""
    if not path.is_file():
        raise ImportRefused(f"{path}: listed in {MANIFEST} but missing")
    sha, decoder, utf8 = hashlib.sha256(), codecs.getincrementaldecoder("utf-8-sig")(), True
    try:
        with path.open("rb") as file:
            while block := file.read(READ_BLOCK):
                sha.update(block)
                if utf8 and not (block.isascii() and not decoder.getstate()[0]):  # ASCII: UTF-8
                    try:
                        decoder.decode(block)
                    except UnicodeDecodeError:
                        utf8 = False
    except OSError as exc:
        raise ImportRefused(f"{path}: cannot be read ({exc.strerror}); check the path") from None
    if sha.hexdigest() != digest:
        raise ImportRefused(f"{path}: sha256 differs from {MANIFEST}; the bundle was altered")
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        utf8 = False
    if not utf8:
        decode_file(path, file_bytes(path))  # refuses it, naming the line of the first bad byte


CHUNK = 10_000
"""Lines of a bundle's table read, checked and stored at a time."""

READ_AHEAD_BYTES = 64 << 20
"""Table files at least this large in all are read ahead, in a process of their own
(``ReadAhead``), when there are two cores."""


def _lines(path: Path, digest: str) -> Iterator[list[str]]:
    """The lines of a bundle's table file, READ_BLOCK bytes read (and hashed) at a time. The
    file was checked before (``_check_file``); one that changed since is refused."""
    altered = ImportRefused(f"{path}: changed while it was imported; the bundle was altered")
    sha, rest, encoding = hashlib.sha256(), b"", "utf-8-sig"
    try:
        with path.open("rb") as file:
            while block := file.read(READ_BLOCK):
                sha.update(block)
                data = rest + block
                end = data.rfind(b"\n") + 1
                data, rest = data[:end], data[end:]
                if data:
                    try:
                        yield data.decode(encoding).split("\n")[:-1]
                    except UnicodeDecodeError:
                        raise altered from None
                    encoding = "utf-8"
    except OSError as exc:
        raise ImportRefused(f"{path}: cannot be read ({exc.strerror}); check the path") from None
    if sha.hexdigest() != digest:
        raise altered
    if rest:
        try:
            yield [rest.decode(encoding)]
        except UnicodeDecodeError:
            raise altered from None


def _chunks(
    path: Path, model: type[Base], digest: str, version: int, size: int,
    texts: Mapping[str, str | None], part: int = 0, parts: int = 1,
) -> Iterator[Chunk]:  # fmt: skip
    """The rows of a bundle's table file, ``size`` lines at a time, each parsed and checked
    (``_check_rows``), column by column, the JSON columns ``texts`` as the text the store
    writes (``json_texts``): of every ``parts`` chunks, the one at ``part``."""
    waiting: list[str] = []
    first, place = 1, 0
    for lines in itertools.chain(_lines(path, digest), [[]]):
        waiting += lines
        while len(waiting) >= size or (waiting and not lines):
            chunk, waiting = waiting[:size], waiting[size:]
            if place % parts == part:
                rows, read = read_lines(path, chunk, first)
                columns = _check_rows(path, model, rows, version, plain_lines(read.lines), read)
                values = [
                    as_json_text(list(column), texts[name]) if name in texts else list(column)
                    for name, column in columns.items()
                ]
                numbers = [number for number, _ in rows]
                held = frozenset(texts).intersection(columns)
                yield Chunk(numbers, names=list(columns), columns=values, texts=held)
            first, place = first + len(chunk), place + 1


def read_bundle(bundle: Path) -> Bundle:
    """Read a bundle folder and check its files before anything is stored: the manifest lists
    every file of its version and the folder holds no other, and each file matches its sha256
    and is UTF-8. Its rows are read, and checked, as they are stored (``store_bundle``)."""
    version, hashes = _read_manifest(bundle)
    _refuse_unlisted(bundle, hashes)
    texts: dict[str, str] = {}
    for name in hashes:  # every file whole and readable before any row is read
        if name in (STUDY_FILE, PROVENANCE_FILE):
            texts[name] = _checked_text(bundle / name, hashes[name])
        else:
            _check_file(bundle / name, hashes[name])
    tables = {name: hashes[name] for name, _ in TABLES if name in hashes}
    provenance = None
    if PROVENANCE_FILE in texts:
        provenance = parse_provenance(texts[PROVENANCE_FILE], str(bundle / PROVENANCE_FILE))
    return Bundle(bundle, version, texts[STUDY_FILE], tables, provenance)


def store_bundle(store: Store, bundle: Bundle, *, alone: bool = False) -> ImportSummary:
    """Add a read bundle's rows to ``store`` in one transaction: all rows or none. Each table is
    read, checked and stored a chunk at a time, in dependency order, so that memory holds one
    chunk of rows and the keys later tables refer to. When it adds any, the provenance of the
    study it came from is kept beside the importing study's own (``provenance.json`` in the
    summary), never in its place. ``alone``: ``store`` is new and no other process can open it
    (a staged study's), so the rows are written without the write-ahead log."""

    tables = [(name, model) for name, model in TABLES if name in bundle.tables]
    readers = [
        reader(_chunks, bundle.path / name, model, bundle.tables[name], bundle.version, CHUNK,
               json_texts(model, store.engine.dialect))
        for name, model in tables
    ]  # fmt: skip
    size = sum((bundle.path / name).stat().st_size for name, _ in tables)

    def write(session: Session) -> ImportSummary:
        writer = RowWriter(session, lambda name, number: f"{bundle.path / name} line {number}")
        if size < READ_AHEAD_BYTES or usable_cores() < 2:
            for (name, _), read in zip(tables, readers, strict=True):
                writer.add_table(name, read(0, 1))
        else:  # large: read, parsed and checked on the other core while rows are stored here
            ahead = ReadAhead(readers)
            try:
                for name, _ in tables:
                    writer.add_table(name, ahead.chunks())
            finally:
                ahead.close()
        summary = writer.summary
        if bundle.provenance is not None and summary.added:  # adding nothing made nothing
            added, unchanged = record_imported(session, bundle.provenance)
            if added:
                summary.added[PROVENANCE_FILE] = added
            if unchanged:
                summary.unchanged[PROVENANCE_FILE] = unchanged
        return summary

    return store_rows(store, bundle.path, write, alone=alone)


def import_bundle(store: Store, bundle: Path) -> ImportSummary:
    """Import a bundle folder into ``store``: its rows, all or none, and never its settings (the
    bundle's study file is not read)."""
    return store_bundle(store, read_bundle(bundle))
