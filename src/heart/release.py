"""Release: export a study as a self-describing bundle, and import bundles or completion/judgment
files into a study, all-or-nothing."""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import UniqueConstraint, inspect, select
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session

from heart.config import STUDY_FILE, StudyConfig, parse_study
from heart.errors import ConfigError, ImportRefused
from heart.ids import (
    Presentation,
    completion_id,
    judgment_id,
    label_id,
    pair_id,
    seeded_order,
)
from heart.import_checks import (
    STRENGTHS,
    KeyTwice,
    check_row,
    describe,
    parse_json,
    text_problem,
    unique_keys,
)
from heart.provenance import (
    PROVENANCE_FILE,
    Provenance,
    build_provenance,
    parse_provenance,
    record_imported,
)
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
    imported_judgment,
    now_iso,
)
from heart.strategies import Taxonomy, load_taxonomy
from heart.types import JudgeSource, Order, Shown, Status, sha256_hex
from heart.utf8 import NotUtf8, decode_utf8

BUNDLE_FORMAT = "heart-bundle"
BUNDLE_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)  # 1 had no raters, labels, rewrites or codes; 2 no provenance
MANIFEST = "manifest.json"

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


def _columns(model: type[Base]) -> list[str]:
    """The columns a bundle carries for ``model``'s table."""
    private = PRIVATE_COLUMNS.get(model, frozenset())
    return [str(c.key) for c in inspect(model).columns if c.key not in private]


def _key_columns(model: type[Base]) -> list[str]:
    return [str(c.key) for c in inspect(model).primary_key]


def _row_dict(row: Base) -> dict[str, Any]:
    return {c: getattr(row, c) for c in _columns(type(row))}


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
        for name, model in TABLES:
            keys = [getattr(model, k) for k in _key_columns(model)]
            text = "".join(
                _line(_row_dict(r)) for r in session.scalars(select(model).order_by(*keys))
            )
            (out / name).write_text(text, encoding="utf-8")
            files[name] = {"sha256": sha256_hex(text), "rows": text.count("\n")}
    manifest = {"format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "files": files}
    (out / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return manifest


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


Row = tuple[int, dict[str, Any]]
"""A record read from a file, with the line it starts on."""

MAX_CELL = 128 * 1024
"""The most characters one field of a completions or judgments file may hold (the csv module's
own default limit)."""

BOOKKEEPING = frozenset({"created_at"})
"""Columns that say when a row was stored, not what it says: a rerun of an import differs only
there, and adds nothing."""

BUNDLE_FIX = "correct the row, or export the bundle again"


def _decode(path: Path, data: bytes) -> str:
    try:
        return decode_utf8(data)
    except NotUtf8 as bad:
        raise ImportRefused(f"{path} line {bad.line}: {bad}; save the file as UTF-8") from None


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ImportRefused(f"{path}: cannot be read ({exc.strerror}); check the path") from None


def _parse_jsonl(path: Path, text: str) -> list[Row]:
    """One JSON object per line; blank lines are skipped."""
    rows = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        value = parse_json(line, f"{path} line {number}", "write one JSON object a line")
        if not isinstance(value, dict):
            raise ImportRefused(
                f"{path} line {number}: expected a JSON object, got {describe(value)}"
            )
        rows.append((number, value))
    return rows


@contextmanager
def _cells_of_any_length() -> Iterator[None]:
    """Let the csv module read long cells, so that MAX_CELL is checked with the field's name."""
    limit = csv.field_size_limit(2**31 - 1)
    try:
        yield
    finally:
        csv.field_size_limit(limit)


def _parse_csv(path: Path, text: str) -> list[Row]:
    """Rows keyed by the header's column names; rows of empty cells are skipped, and cells a
    short row lacks are empty."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[Row] = []
    with _cells_of_any_length():
        try:
            header = [name.strip() for name in next(reader, [])]
            for name in header:
                if name and header.count(name) > 1:
                    raise ImportRefused(f"{path} line 1: column {name!r} appears twice; keep one")
            while True:
                start = reader.line_num + 1
                cells = next(reader, None)
                if cells is None:
                    return rows
                if not any(cell.strip() for cell in cells):
                    continue
                if len(cells) > len(header):
                    raise ImportRefused(
                        f"{path} line {start}: {len(cells)} cells, but the header names "
                        f"{len(header)} columns; quote any cell that holds a comma"
                    )
                cells += [""] * (len(header) - len(cells))
                rows.append((start, dict(zip(header, cells, strict=True))))
        except csv.Error as exc:
            raise ImportRefused(
                f"{path} line {reader.line_num}: not valid CSV ({exc}); save it as CSV again"
            ) from None


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
}
"""Columns the store gained while bundles of an older version were written: the first version
whose every row has the column, and what a row written before it means (no re-asked answers; a
taxonomy not recorded). Every other column of a bundle's table is required in every row."""


def _read_manifest(bundle: Path) -> tuple[int, dict[str, str]]:
    """The bundle's version and the sha256 of each of its files, from a manifest of a version
    this release reads that lists every file a bundle of its version has."""
    path = bundle / MANIFEST
    if not path.is_file():
        raise ImportRefused(f"{bundle}: no {MANIFEST}; is this a folder written by `heart export`?")
    try:
        manifest = json.loads(_decode(path, _read_bytes(path)), object_pairs_hook=unique_keys)
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


def _fill_defaults(model: type[Base], record: dict[str, Any]) -> None:
    """Give ``record`` the default of every column a bundle carries that it leaves out and that
    has one."""
    carried = set(_columns(model))
    for column in inspect(model).columns:
        default: Any = column.default  # a scalar or callable column default, or None
        if default is not None and column.key in carried and column.key not in record:
            record[str(column.key)] = default.arg(None) if default.is_callable else default.arg


def _check_rows(path: Path, model: type[Base], rows: list[Row], version: int) -> None:
    """Refuse unknown columns, missing ones and values the table cannot hold. Every column the
    bundle's version has is required: only a row of an older version may leave out a column the
    store gained since (COLUMNS_SINCE), and it means what such a row meant."""
    expected = set(_columns(model))
    older = {
        column: value
        for (name, column), (since, value) in COLUMNS_SINCE.items()
        if name == path.name and version < since
    }
    for number, record in rows:
        for column, value in older.items():
            record.setdefault(column, copy.deepcopy(value))
        unknown = set(record) - expected
        missing = expected - set(record)
        if unknown or missing:
            raise ImportRefused(
                f"{path} line {number}: columns do not match the store "
                f"(unknown {sorted(unknown)}, missing {sorted(missing)}); {BUNDLE_FIX}"
            )
        check_row(model, record, f"{path} line {number}", BUNDLE_FIX)


@dataclass(frozen=True)
class Bundle:
    """A bundle, read and checked and nothing written yet: its study file (a record of the study
    it came from, never settings of the study it goes into), every table's rows, and that
    study's provenance (none before version 3)."""

    path: Path
    version: int
    study_file: str
    tables: dict[str, list[Row]]
    provenance: Provenance | None


def read_bundle(bundle: Path) -> Bundle:
    """Read a bundle folder and check all of it before anything is stored: the manifest lists
    every file of its version and the folder holds no other, each file matches its sha256, and
    every row holds every column its table has, each value one the store can take."""
    version, hashes = _read_manifest(bundle)
    _refuse_unlisted(bundle, hashes)
    texts: dict[str, str] = {}
    for name, digest in hashes.items():
        path = bundle / name
        if not path.is_file():
            raise ImportRefused(f"{path}: listed in {MANIFEST} but missing")
        data = _read_bytes(path)
        if hashlib.sha256(data).hexdigest() != digest:
            raise ImportRefused(f"{path}: sha256 differs from {MANIFEST}; the bundle was altered")
        texts[name] = _decode(path, data)
    tables = {name: _parse_jsonl(bundle / name, texts[name]) for name, _ in TABLES if name in texts}
    for name, model in TABLES:
        if name in tables:
            _check_rows(bundle / name, model, tables[name], version)
    provenance = None
    if PROVENANCE_FILE in texts:
        provenance = parse_provenance(texts[PROVENANCE_FILE], str(bundle / PROVENANCE_FILE))
    return Bundle(bundle, version, texts[STUDY_FILE], tables, provenance)


def _existing_keys(session: Session, name: str, column: str) -> set[Any]:
    model = dict(TABLES)[name]
    return set(session.scalars(select(getattr(model, column))))


Where = Callable[[str, int], str]
"""The file and line a table's row came from, for messages."""


def _check_references(session: Session, tables: dict[str, list[Row]], where: Where) -> None:
    known: dict[tuple[str, str], set[Any]] = {}
    for (name, column), target in REFERENCES.items():
        if name not in tables:
            continue
        if target not in known:
            bundle_keys = {r[target[1]] for _, r in tables.get(target[0], [])}
            known[target] = bundle_keys | _existing_keys(session, *target)
        for number, record in tables[name]:
            if record[column] not in known[target]:
                what = target[0].removesuffix(".jsonl").rstrip("s")
                raise ImportRefused(
                    f"{where(name, number)}: '{column}' refers to unknown {what} "
                    f"{record[column]!r}; add it to the study (or the bundle) first"
                )


def _check_pairs(session: Session, tables: dict[str, list[Row]], where: Where) -> None:
    """A pair holds two replies to its own item from two different systems (two replies of one
    system say nothing about its rating)."""
    pairs = tables.get("pairs.jsonl", [])
    if not pairs:
        return
    owner = {
        cid: (item, system)
        for cid, item, system in session.execute(
            select(CompletionRow.id, CompletionRow.item_id, CompletionRow.system)
        )
    }
    owner |= {r["id"]: (r["item_id"], r["system"]) for _, r in tables.get("completions.jsonl", [])}
    for number, pair in pairs:
        (a_item, a_system), (b_item, b_system) = owner[pair["a_id"]], owner[pair["b_id"]]
        if a_system == b_system:
            raise ImportRefused(
                f"{where('pairs.jsonl', number)}: 'b_id': both replies of the pair belong to "
                f"system {a_system!r}, and a pair compares the replies of two systems; {BUNDLE_FIX}"
            )
        for column, item in (("a_id", a_item), ("b_id", b_item)):
            if item != pair["item_id"]:
                raise ImportRefused(
                    f"{where('pairs.jsonl', number)}: '{column}' is a reply to item {item!r}, not "
                    f"to the pair's item {pair['item_id']!r}; {BUNDLE_FIX}"
                )


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


def _unique_owners(session: Session, model: type[Base]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The key of the stored row that holds each value of each unique set of columns, keyed by
    (columns, *values)."""
    keys = _key_columns(model)
    owners: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for unique in _unique_columns(model):
        columns = [getattr(model, c) for c in (*keys, *unique)]
        for values in session.execute(select(*columns)):
            owners[(unique, *values[len(keys) :])] = tuple(values[: len(keys)])
    return owners


def _add_new_rows(
    session: Session, name: str, rows: list[Row], where: Where
) -> tuple[int, int, int]:
    """Add the rows of one table that are not stored yet; returns (added, already stored,
    repeated). A row stored already, or given again, is left as it is, and only if it says the
    same."""
    model = dict(TABLES)[name]
    keys, uniques = _key_columns(model), _unique_columns(model)
    owners = _unique_owners(session, model) if rows and uniques else {}
    seen: dict[tuple[Any, ...], Row] = {}
    added = unchanged = repeated = 0
    for number, record in rows:
        key = tuple(record[k] for k in keys)
        first = seen.get(key)
        if first is not None:
            changed = _changed(first[1], record)
            if changed:
                raise ImportRefused(
                    f"{where(name, number)}: line {first[0]} gives the row with key "
                    f"{list(key)} already, and this one differs in {changed}; keep one"
                )
            repeated += 1
            continue
        seen[key] = (number, record)
        stored = session.get(model, key)
        if stored is not None:
            changed = _changed(_row_dict(stored), record)
            if changed:
                raise ImportRefused(
                    f"{where(name, number)}: a different row with key {list(key)} is already "
                    f"stored (it differs in {changed}); nothing was imported"
                )
            unchanged += 1
            continue
        for unique in uniques:
            owner = owners.setdefault((unique, *(record[c] for c in unique)), key)
            if owner != key:
                raise ImportRefused(
                    f"{where(name, number)}: the row with key {list(owner)} has the same "
                    f"{', '.join(unique)}; nothing was imported"
                )
        session.add(model(**record))
        added += 1
    session.flush()
    return added, unchanged, repeated


def _refuse_own_work(
    session: Session, tables: dict[str, list[Row]], where: Where, names: Mapping[str, str]
) -> None:
    """Nobody judges a pair holding a reply they wrote, nor labels such a reply: the rule the web
    app keeps when it hands out and takes back work (heart.people), kept for imported rows."""
    judgments, labels = tables.get("judgments.jsonl", []), tables.get("strategy_labels.jsonl", [])
    if not judgments and not labels:
        return
    written = select(CompletionRow.id, CompletionRow.contributor).where(
        CompletionRow.contributor != ""
    )
    writer = {cid: who for cid, who in session.execute(written)}
    writer |= {r["id"]: r["contributor"] for _, r in tables.get("completions.jsonl", [])}
    pairs: dict[str, tuple[str, str]] = {}
    if judgments:
        pairs = {pid: (a, b) for pid, a, b in session.execute(
            select(PairRow.id, PairRow.a_id, PairRow.b_id))}  # fmt: skip
        pairs |= {r["id"]: (r["a_id"], r["b_id"]) for _, r in tables.get("pairs.jsonl", [])}
    for number, r in judgments:
        own = next((c for c in pairs[r["pair_id"]] if writer.get(c) == r["judge"]), None)
        if own is not None:
            raise ImportRefused(
                f"{where('judgments.jsonl', number)}: '{names.get('judge', 'judge')}' is "
                f"{r['judge']!r}, who wrote one of the pair's replies (completion {own!r}), and "
                "nobody judges their own reply (the web app refuses it too); leave the row out"
            )
    for number, r in labels:
        if writer.get(r["completion_id"]) == r["rater_id"]:
            raise ImportRefused(
                f"{where('strategy_labels.jsonl', number)}: '{names.get('rater_id', 'rater_id')}' "
                f"is {r['rater_id']!r}, who wrote completion {r['completion_id']!r}, and nobody "
                "labels their own reply (the web app refuses it too); leave the row out"
            )


def _insert_all(
    session: Session,
    tables: dict[str, list[Row]],
    where: Where,
    names: Mapping[str, str] | None = None,
) -> ImportSummary:
    """Check references, pairs and own work, then add every table's new rows in dependency order
    (the caller commits). ``names`` maps a column to the file's own name for it."""
    _check_references(session, tables, where)
    _check_pairs(session, tables, where)
    _refuse_own_work(session, tables, where, names or {})
    summary = ImportSummary(added={}, unchanged={})
    for name, _ in TABLES:
        counts = _add_new_rows(session, name, tables.get(name, []), where)
        for kept, n in zip(
            (summary.added, summary.unchanged, summary.repeated), counts, strict=True
        ):
            if n:
                kept[name] = n
    return summary


def store_bundle(store: Store, bundle: Bundle) -> ImportSummary:
    """Add a read bundle's rows to ``store`` in one transaction: all rows or none. When it adds
    any, the provenance of the study it came from is kept beside the importing study's own
    (``provenance.json`` in the summary), never in its place."""

    def write(session: Session) -> ImportSummary:
        summary = _insert_all(
            session, bundle.tables, lambda name, number: f"{bundle.path / name} line {number}"
        )
        if bundle.provenance is not None and summary.added:  # adding nothing made nothing
            added, unchanged = record_imported(session, bundle.provenance)
            if added:
                summary.added[PROVENANCE_FILE] = added
            if unchanged:
                summary.unchanged[PROVENANCE_FILE] = unchanged
        return summary

    return _store_rows(store, bundle.path, write)


def import_bundle(store: Store, bundle: Path) -> ImportSummary:
    """Import a bundle folder into ``store``: its rows, all or none, and never its settings (the
    bundle's study file is not read)."""
    return store_bundle(store, read_bundle(bundle))


TABLE_FIX = "correct the row"


def _read_table_file(path: Path, columns: Iterable[str]) -> list[Row]:
    """The rows of a completions, judgments or labels file, each holding only ``columns``; a
    file without a row is refused (an import of nothing is a mistake, most likely the wrong
    file)."""
    text = _decode(path, _read_bytes(path))
    csv_file = path.suffix.lower() == ".csv"
    rows = _parse_csv(path, text) if csv_file else _parse_jsonl(path, text)
    if not rows:
        held = "holds only a header" if csv_file and text.strip() else "is empty"
        raise ImportRefused(
            f"{path}: no rows to import (the file {held}); give one row a line"
            + (" below the header" if csv_file else "")
            + ", or check the path"
        )
    known = list(columns)
    for number, record in rows:
        unknown = [name for name in record if name not in known and (name or record[name])]
        if unknown:
            raise ImportRefused(
                f"{path} line {number}: unknown column {unknown[0]!r}; the columns are "
                f"{', '.join(known)} (check its spelling: a misspelt column would be left out)"
            )
    return rows


def _text_fields(
    where: str, record: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, str]:
    """The row's text in each field ('' when absent, null or empty); numbers, true/false, lists
    and objects are refused, and so is text the text policy refuses and a row without a
    required field."""
    out: dict[str, str] = {}
    for name in (*required, *optional):
        value = record.get(name)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ImportRefused(
                f"{where}: '{name}' must be text, got {describe(value)}; write it in quotes"
            )
        if len(value) > MAX_CELL:
            raise ImportRefused(
                f"{where}: '{name}' is {len(value):,} characters long, over the {MAX_CELL:,} a "
                "field may hold; shorten it"
            )
        problem = text_problem(value)
        if problem:
            raise ImportRefused(f"{where}: '{name}' {problem}; {TABLE_FIX}")
        out[name] = value
    missing = [f for f in required if not out[f].strip()]
    if missing:
        raise ImportRefused(f"{where}: missing {missing}; every row needs them")
    return out


def _one_of(where: str, field: str, given: str, words: Iterable[str], default: str) -> str:
    """``given`` (trimmed, lower case) when it is one of ``words``; ``default`` when empty."""
    word = given.strip().lower() or default
    allowed = list(words)
    if word not in allowed:
        raise ImportRefused(
            f"{where}: '{field}' must be {', '.join(allowed[:-1])} or {allowed[-1]}, got {given!r}"
        )
    return word


def _strength(where: str, value: Any) -> int:
    """A whole number from 1 to 5 (1 when absent), as a JSON number or the text of one."""
    if value is None or value == "":
        return 1
    number: int | None = None
    if isinstance(value, str):
        with suppress(ValueError):
            number = int(value.strip())
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    if number is None or number not in STRENGTHS:
        raise ImportRefused(
            f"{where}: 'strength' must be a whole number 1-5, got {describe(value)}"
        )
    return number


COMPLETION_FIELDS = ("item_id", "system", "text")
COMPLETION_OPTIONS = ("contributor",)


def completion_rows(path: Path) -> list[Row]:
    """Completions from CSV/JSONL with columns item_id, system, text (contributor optional)."""
    out = []
    for number, r in _read_table_file(path, (*COMPLETION_FIELDS, *COMPLETION_OPTIONS)):
        where = f"{path} line {number}"
        f = _text_fields(where, r, COMPLETION_FIELDS, COMPLETION_OPTIONS)
        record = {
            "id": completion_id(f["item_id"], f["system"], f["contributor"]),
            "item_id": f["item_id"],
            "system": f["system"],
            "contributor": f["contributor"],
            "status": Status.OK.value,
            "text": f["text"].strip(),
            "error": None,
            "prompt_hash": None,
            "call_hash": None,
            "ttft_ms": None,
            "latency_ms": None,
            "tokens_in": None,
            "tokens_out": None,
            "cost_usd": None,
            "finish_reason": None,
            "created_at": now_iso(),
        }
        _fill_defaults(CompletionRow, record)
        check_row(CompletionRow, record, where, TABLE_FIX)
        out.append((number, record))
    return out


IMPORT_WINNERS = {"a": Shown.FIRST, "b": Shown.SECOND, "tie": Shown.TIE}
"""A judgments file's winner column, in the terms of its own a_system and b_system."""

JUDGMENT_FIELDS = ("item_id", "judge", "a_system", "b_system", "winner")
JUDGMENT_OPTIONS = ("a_contributor", "b_contributor", "rationale", "source")


PairOrder = Mapping[str, tuple[str, str]]
"""Pair id -> its stored (a, b) completions."""


def judgment_rows(
    path: Path, seed: int, stored: PairOrder | None = None
) -> tuple[list[Row], list[Row], list[Row]]:
    """Judgments from CSV/JSONL: item_id, judge, a_system, b_system, winner (a|b|tie), strength,
    optional a_contributor, b_contributor, rationale, source (human|llm; default human).

    A row's a_system is the reply its judge saw first: each judgment keeps that order, relative
    to the pair's a/b (``stored`` for pairs the study has, else the seeded order), so a judge who
    saw a pair both ways keeps two judgments. Returns the judges, pairs and judgments to add.
    """
    stored = stored or {}
    judges: dict[str, Row] = {}
    pairs: dict[str, Row] = {}
    judgments = []
    columns = (*JUDGMENT_FIELDS, "strength", *JUDGMENT_OPTIONS)
    for number, r in _read_table_file(path, columns):
        where = f"{path} line {number}"
        f = _text_fields(where, r, JUDGMENT_FIELDS, JUDGMENT_OPTIONS)
        given = _one_of(where, "winner", f["winner"], IMPORT_WINNERS, "")
        strength = _strength(where, r.get("strength"))
        source = _one_of(where, "source", f["source"], JudgeSource, JudgeSource.HUMAN)
        item = f["item_id"]
        x = completion_id(item, f["a_system"], f["a_contributor"])
        y = completion_id(item, f["b_system"], f["b_contributor"])
        if f["a_system"] == f["b_system"]:
            raise ImportRefused(
                f"{where}: 'b_system' is {f['b_system']!r}, the same as 'a_system'; a pair "
                "compares the replies of two systems (two replies of one say nothing about its "
                "rating), so judge it against another system's reply"
            )
        pid = pair_id(item, x, y)
        a, b = stored.get(pid) or seeded_order(seed, item, x, y)
        pairs.setdefault(
            pid, (number, {"id": pid, "item_id": item, "a_id": a, "b_id": b, "design": "imported"})
        )
        shown = Presentation.of(a, b, first=x)  # the file's a_system was shown first
        judge: dict[str, Any] = {
            "name": f["judge"],
            "source": source,
            "family": "human" if source == JudgeSource.HUMAN else "",
            "spec": {},
        }
        first = judges.setdefault(f["judge"], (number, judge))
        if first[1]["source"] != source:
            raise ImportRefused(
                f"{where}: 'source' is {source}, but line {first[0]} gives judge {f['judge']!r} "
                f"source {first[1]['source']}; one judge has one source"
            )
        check_row(JudgeRow, judge, where, TABLE_FIX, {"name": "judge"})
        judgment: dict[str, Any] = {
            "id": judgment_id(pid, f["judge"], shown.order),
            "pair_id": pid,
            "judge": f["judge"],
            "order": shown.order.value,
            "status": Status.OK.value,
            "winner": shown.to_pair(IMPORT_WINNERS[given]).value,
            "strength": strength,
            "axes": {},
            "rationale": f["rationale"],
            "raw": None,
            "error": None,
            "prompt_hash": None,
            "call_hash": None,
            "latency_ms": None,
            "tokens_in": None,
            "tokens_out": None,
            "cost_usd": None,
            "created_at": now_iso(),
        }
        _fill_defaults(JudgmentRow, judgment)
        check_row(JudgmentRow, judgment, where, TABLE_FIX)
        judgments.append((number, judgment))
    return list(judges.values()), list(pairs.values()), judgments


def _strategies(where: str, value: Any, taxonomy: Taxonomy) -> list[str]:
    """A labels row's strategies: a JSON list of names, or their names separated by ';' (an
    empty list or empty text for none). Anything else, false, 0 and null among them, is
    refused: none is said, never inferred."""
    if isinstance(value, str):
        names = [name.strip() for name in value.split(";") if name.strip()]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = [name.strip() for name in value]
    else:
        raise ImportRefused(
            f"{where}: 'strategies' must be a list of strategy names (in CSV: separated by "
            f"';'; empty for none), got {describe(value)}"
        )
    for name in names:
        problem = text_problem(name)
        if problem:
            raise ImportRefused(f"{where}: 'strategies' {problem}; {TABLE_FIX}")
    unknown = [name for name in names if name not in taxonomy.names]
    if unknown:
        raise ImportRefused(
            f"{where}: 'strategies': {unknown[0]!r} is not one of the {len(taxonomy.names)} "
            f"strategies ({'; '.join(taxonomy.names)}); use their names as written"
        )
    return sorted(set(names))


LABEL_FIELDS = ("completion_id", "rater", "strategies")


def label_rows(path: Path) -> tuple[list[Row], list[Row]]:
    """People's strategy labels from CSV/JSONL: completion_id, rater, strategies (every row says
    them: none is an empty list, or an empty cell in CSV). Returns the raters and the labels to
    add, the labels one a row."""
    taxonomy = load_taxonomy()
    raters: dict[str, Row] = {}
    labels: list[Row] = []
    first: dict[str, Row] = {}
    for number, r in _read_table_file(path, LABEL_FIELDS):
        where = f"{path} line {number}"
        f = _text_fields(where, r, ("completion_id", "rater"))
        if "strategies" not in r:
            raise ImportRefused(
                f"{where}: missing ['strategies']; every row needs them (an empty list for none)"
            )
        strategies = _strategies(where, r["strategies"], taxonomy)
        rater = {"id": f["rater"], "excluded_reason": None, "created_at": now_iso()}
        check_row(RaterRow, rater, where, TABLE_FIX, {"id": "rater"})
        raters.setdefault(f["rater"], (number, rater))
        lid = label_id(f["completion_id"], f["rater"])
        label = {
            "id": lid, "completion_id": f["completion_id"], "rater_id": f["rater"],
            "strategies": strategies, "taxonomy_hash": taxonomy.hash, "created_at": now_iso(),
        }  # fmt: skip
        earlier = first.setdefault(lid, (number, label))
        if earlier[1]["strategies"] != strategies:
            raise ImportRefused(
                f"{where}: rater {f['rater']!r} labels completion {f['completion_id']!r} again, "
                f"differently from line {earlier[0]}; keep one row per rater and completion"
            )
        labels.append((number, label))
    return list(raters.values()), labels


TABLE_KINDS = ("completions", "judgments", "labels")

FILE_NAMES = {"rater_id": "rater"}
"""A labels file's own name for a column of the store's labels."""

SHARED = {"raters.jsonl": "id", "judges.jsonl": "name", "pairs.jsonl": "id"}
"""The tables whose rows a file names rather than gives (by their key): those the study has
are reused as they are, and a summary counts only the new ones."""

RACE_ATTEMPTS = 5
"""How many times an import runs when imports beside it keep storing the same rows first."""

_CONTENTION = frozenset({"40001", "40P01"})
"""PostgreSQL's serialization failure and deadlock: the transaction lost a race, and can run
again."""


def _store_rows(
    store: Store, source: Path, write: Callable[[Session], ImportSummary]
) -> ImportSummary:
    """Run ``write`` in one transaction, all or nothing. When another import stores some of the
    same rows at the same moment, the store refuses the second of them as a duplicate (or, on
    PostgreSQL, ends one transaction as a deadlock): ``write`` then runs again, reading the
    other import's rows as already stored. A refusal that outlasts RACE_ATTEMPTS runs, or a
    store locked too long, is reported in one line naming ``source``; nothing is imported."""
    for attempt in range(1, RACE_ATTEMPTS + 1):
        try:
            with store.session() as session:
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


def _table_rows(store: Store, path: Path, kind: str, seed: int) -> dict[str, list[Row]]:
    """The rows a completions, judgments or labels file adds, per bundle table."""
    if kind == "completions":
        return {"completions.jsonl": completion_rows(path)}
    if kind == "judgments":
        with store.session() as session:
            orders = {
                pid: (a, b)
                for pid, a, b in session.execute(select(PairRow.id, PairRow.a_id, PairRow.b_id))
            }
        judges, pairs, judgments = judgment_rows(path, seed, orders)
        return {"judges.jsonl": judges, "pairs.jsonl": pairs, "judgments.jsonl": judgments}
    if kind == "labels":
        raters, labels = label_rows(path)
        return {"raters.jsonl": raters, "strategy_labels.jsonl": labels}
    raise ImportRefused(
        f"--table must be {', '.join(TABLE_KINDS[:-1])} or {TABLE_KINDS[-1]}, got {kind!r}"
    )


def _store_table(
    session: Session, path: Path, kind: str, rows: dict[str, list[Row]]
) -> ImportSummary:
    """Check a file's rows against the study and add the new ones (the caller commits). Raters,
    judges and pairs the study already has are reused as they are."""
    tables = dict(rows)
    if kind == "judgments":
        _require_pair_completions(session, path, tables["pairs.jsonl"])
        _require_judge_sources(session, path, tables["judges.jsonl"])
        _refuse_verdicts_imported_unordered(session, path, tables["judgments.jsonl"])
    for name, key in SHARED.items():
        if name in tables:
            stored = _existing_keys(session, name, key)
            tables[name] = [r for r in tables[name] if r[1][key] not in stored]
    summary = _insert_all(session, tables, lambda _, n: f"{path} line {n}", FILE_NAMES)
    for name in SHARED:  # one an import beside this one stored meanwhile is reused too
        summary.unchanged.pop(name, None)
    return summary


def import_table(store: Store, path: Path, kind: str, seed: int) -> ImportSummary:
    """Import completions, judgments or strategy labels from a CSV or JSON Lines file,
    all-or-nothing; safe beside other imports into the same study (see _store_rows)."""
    if not path.is_file():
        raise ImportRefused(f"{path}: no such file")
    rows = _table_rows(store, path, kind, seed)
    return _store_rows(store, path, lambda session: _store_table(session, path, kind, rows))


def _require_pair_completions(session: Session, path: Path, pairs: list[Row]) -> None:
    stored = _existing_keys(session, "completions.jsonl", "id")
    for number, record in pairs:
        for column in ("a_id", "b_id"):
            if record[column] not in stored:
                raise ImportRefused(
                    f"{path} line {number}: item {record['item_id']!r} has no stored completion "
                    "for one of its two systems (check a_system/b_system and the contributors); "
                    "import or generate the completions first"
                )


def _refuse_verdicts_imported_unordered(session: Session, path: Path, judgments: list[Row]) -> None:
    """Refuse a verdict shown b first whose twin (same judge and pair, shown a first, the same
    winner, strength and rationale) is stored from an import and missing from the file. Earlier
    releases stored every imported verdict as shown a first: the twin is most likely this very
    row, imported before, and adding it would count the verdict twice."""
    given = {(r["pair_id"], r["judge"], r["order"]) for _, r in judgments}
    imported = session.execute(
        select(JudgmentRow.pair_id, JudgmentRow.judge, JudgmentRow.order, JudgmentRow.winner,
               JudgmentRow.strength, JudgmentRow.rationale)
        .where(JudgmentRow.status == Status.OK, imported_judgment())
    )  # fmt: skip
    stored = {(pair, judge, order): said for pair, judge, order, *said in imported}
    for number, r in judgments:
        pair, judge = r["pair_id"], r["judge"]
        if r["order"] != Order.BA or (pair, judge, Order.BA.value) in stored:
            continue  # shown a first, or stored already
        twin = (pair, judge, Order.AB.value)
        if twin not in given and stored.get(twin) == [r["winner"], r["strength"], r["rationale"]]:
            raise ImportRefused(
                f"{path} line {number}: judge {r['judge']!r} has this verdict on this pair stored "
                "already as if shown the other way round, as releases before this one stored "
                "every imported verdict: most likely this row, imported before. Import the file "
                "into a new study to keep the order shown (or, if the judge did see the pair both "
                "ways, give both rows in one file); nothing was imported"
            )


def _require_judge_sources(session: Session, path: Path, judges: list[Row]) -> None:
    """A judge the study has keeps its source: a file cannot turn an LLM judge into a rater."""
    stored = {
        name: source for name, source in session.execute(select(JudgeRow.name, JudgeRow.source))
    }
    for number, judge in judges:
        source = stored.get(judge["name"], judge["source"])
        if source != judge["source"]:
            raise ImportRefused(
                f"{path} line {number}: 'source' is {judge['source']}, but the study's judge "
                f"{judge['name']!r} has source {source}; set source to {source} or name "
                "another judge"
            )
