"""Rows read from a bundle or a table file, checked against the study and added to it all or
nothing: the tables a bundle carries, what an import added, and the store's own refusals."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import UniqueConstraint, insert, inspect, select, tuple_
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


def row_dict(row: Base) -> dict[str, Any]:
    return {c: getattr(row, c) for c in carried_columns(type(row))}


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


def parse_jsonl(path: Path, text: str) -> list[Row]:
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


def fill_defaults(model: type[Base], record: dict[str, Any]) -> None:
    """Give ``record`` the default of every column a bundle carries that it leaves out and that
    has one."""
    carried = set(carried_columns(model))
    for column in inspect(model).columns:
        default: Any = column.default  # a scalar or callable column default, or None
        if default is not None and column.key in carried and column.key not in record:
            record[str(column.key)] = default.arg(None) if default.is_callable else default.arg


def existing_keys(session: Session, name: str, column: str) -> set[Any]:
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
            known[target] = bundle_keys | existing_keys(session, *target)
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
    keys = key_columns(model)
    owners: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for unique in _unique_columns(model):
        columns = [getattr(model, c) for c in (*keys, *unique)]
        for values in session.execute(select(*columns)):
            owners[(unique, *values[len(keys) :])] = tuple(values[: len(keys)])
    return owners


LOOKUP = 500
"""Keys looked up in the store per query (well under every database's limit of parameters)."""

INSERT = 10_000
"""Rows inserted per statement: the database gets them many at a time, and memory stays small."""


def _stored_rows(
    session: Session, model: type[Base], keys: list[tuple[Any, ...]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The stored rows of ``model``'s table among ``keys`` (as ``row_dict``), by key. Only the
    keys the table holds are read whole, a chunk at a time, so that an import into a study
    without those rows reads one column."""
    names = key_columns(model)
    columns = [getattr(model, c) for c in names]
    held = {tuple(row) for row in session.execute(select(*columns))}
    wanted = [key for key in keys if key in held]
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for start in range(0, len(wanted), LOOKUP):
        chunk = wanted[start : start + LOOKUP]
        match = (
            columns[0].in_([k[0] for k in chunk])
            if len(columns) == 1
            else tuple_(*columns).in_(chunk)
        )
        for row in session.scalars(select(model).where(match)):
            found[tuple(getattr(row, c) for c in names)] = row_dict(row)
    return found


def _insert_rows(session: Session, model: type[Base], records: list[dict[str, Any]]) -> None:
    """Insert ``records`` into ``model``'s table, many rows to a statement; rows that leave
    out different columns (which take their defaults) go in separate statements."""
    batch: list[dict[str, Any]] = []
    for record in records:
        if batch and (len(batch) == INSERT or batch[0].keys() != record.keys()):
            session.execute(insert(model), batch)
            batch = []
        batch.append(record)
    if batch:
        session.execute(insert(model), batch)


def _add_new_rows(
    session: Session, name: str, rows: list[Row], where: Where
) -> tuple[int, int, int]:
    """Add the rows of one table that are not stored yet; returns (added, already stored,
    repeated). A row stored already, or given again, is left as it is, and only if it says the
    same."""
    model = dict(TABLES)[name]
    keys, uniques = key_columns(model), _unique_columns(model)
    owners = _unique_owners(session, model) if rows and uniques else {}
    stored_rows = _stored_rows(session, model, [tuple(r[k] for k in keys) for _, r in rows])
    seen: dict[tuple[Any, ...], Row] = {}
    new: list[dict[str, Any]] = []
    unchanged = repeated = 0
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
        stored = stored_rows.get(key)
        if stored is not None:
            changed = _changed(stored, record)
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
        new.append(record)
    _insert_rows(session, model, new)
    return len(new), unchanged, repeated


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


def insert_all(
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


RACE_ATTEMPTS = 5
"""How many times an import runs when imports beside it keep storing the same rows first."""

_CONTENTION = frozenset({"40001", "40P01"})
"""PostgreSQL's serialization failure and deadlock: the transaction lost a race, and can run
again."""


def store_rows(
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
