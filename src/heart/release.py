"""Release: export a study as a self-describing bundle, and import bundles or completion/judgment
files into a study, all-or-nothing."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from heart.config import STUDY_FILE
from heart.errors import ImportRefused
from heart.ids import Presentation, completion_id, judgment_id, pair_id, seeded_order
from heart.store import (
    Base,
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    PromptRow,
    RaterRow,
    RewriteRow,
    ScreeningRow,
    Store,
    SystemRow,
    now_iso,
)
from heart.types import JudgeSource, Order, Shown, Status, sha256_hex

BUNDLE_FORMAT = "heart-bundle"
BUNDLE_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1 had no raters, strategy labels or rewrites
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


def export_bundle(store: Store, study_root: Path, out: Path) -> dict[str, Any]:
    """Write every table as sorted JSON Lines plus the study file and a sha256 manifest.

    Contributors and raters appear only by their pseudonymous ids (raters with their exclusion
    reason); invite-token hashes and entry metadata stay home.
    """
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Any]] = {}
    config_text = (study_root / STUDY_FILE).read_text(encoding="utf-8")
    (out / STUDY_FILE).write_text(config_text, encoding="utf-8")
    files[STUDY_FILE] = {"sha256": sha256_hex(config_text), "rows": None}
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
    added: dict[str, int]
    unchanged: dict[str, int]


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportRefused(f"{path} line {number}: not valid JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise ImportRefused(f"{path} line {number}: expected a JSON object")
        rows.append((number, value))
    return rows


def read_bundle(bundle: Path) -> tuple[str, dict[str, list[tuple[int, dict[str, Any]]]]]:
    """The study file text and every table's rows, after checking the manifest's hashes."""
    manifest_path = bundle / MANIFEST
    if not manifest_path.is_file():
        raise ImportRefused(f"{bundle}: no {MANIFEST}; is this a folder written by `heart export`?")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("format") != BUNDLE_FORMAT or manifest.get("version") not in READABLE_VERSIONS:
        raise ImportRefused(
            f"{manifest_path}: format {manifest.get('format')!r} version "
            f"{manifest.get('version')!r} is not a heart bundle this version reads"
        )
    for name, entry in manifest["files"].items():
        path = bundle / name
        if not path.is_file():
            raise ImportRefused(f"{path}: listed in {MANIFEST} but missing")
        if sha256_hex(path.read_text(encoding="utf-8")) != entry["sha256"]:
            raise ImportRefused(f"{path}: sha256 differs from {MANIFEST}; the bundle was altered")
    tables = {name: _read_jsonl(bundle / name) for name, _ in TABLES if name in manifest["files"]}
    return (bundle / STUDY_FILE).read_text(encoding="utf-8"), tables


def _check_columns(name: str, model: type[Base], rows: list[tuple[int, dict[str, Any]]]) -> None:
    """Refuse unknown columns and missing required ones; a column added to the store after the
    bundle was written (it has a default) takes that default."""
    expected = set(_columns(model))
    defaults = {str(c.key): c.default for c in inspect(model).columns if c.default is not None}
    for number, record in rows:
        for column in (expected - set(record)) & set(defaults):
            default: Any = defaults[column]  # a scalar or callable column default
            record[column] = default.arg(None) if default.is_callable else default.arg
        unknown = set(record) - expected
        missing = expected - set(record)
        if unknown or missing:
            raise ImportRefused(
                f"{name} line {number}: columns do not match the store "
                f"(unknown {sorted(unknown)}, missing {sorted(missing)})"
            )


def _existing_keys(session: Session, name: str, column: str) -> set[Any]:
    model = dict(TABLES)[name]
    return set(session.scalars(select(getattr(model, column))))


def _insert_all(
    session: Session,
    tables: dict[str, list[tuple[int, dict[str, Any]]]],
    source: dict[str, str] | None = None,
) -> ImportSummary:
    """Check references and conflicts for every row, then add the new ones (caller commits).

    ``source`` names, per table, the file its rows came from, for error messages.
    """
    source = source or {}
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
                    f"{source.get(name, name)} line {number}: '{column}' refers to unknown {what} "
                    f"{record[column]!r}; add it to the study (or the bundle) first"
                )
    added: dict[str, int] = {}
    unchanged: dict[str, int] = {}
    for name, model in TABLES:
        keys = _key_columns(model)
        for number, record in tables.get(name, []):
            existing = session.get(model, tuple(record[k] for k in keys))
            if existing is not None:
                if _row_dict(existing) != record:
                    raise ImportRefused(
                        f"{source.get(name, name)} line {number}: a different row with key "
                        f"{[record[k] for k in keys]} is already stored; nothing was imported"
                    )
                unchanged[name] = unchanged.get(name, 0) + 1
                continue
            session.add(model(**record))
            added[name] = added.get(name, 0) + 1
        session.flush()
    return ImportSummary(added=added, unchanged=unchanged)


def import_bundle(store: Store, bundle: Path) -> ImportSummary:
    """Import a bundle into ``store`` in one transaction: all rows or none."""
    _, tables = read_bundle(bundle)
    for name, model in TABLES:
        if name in tables:
            _check_columns(name, model, tables[name])
    with store.session() as session:
        return _insert_all(session, tables)


def _read_table_file(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return [(n, dict(r)) for n, r in enumerate(csv.DictReader(handle), 2)]
    return _read_jsonl(path)


def _need(path: Path, number: int, record: dict[str, Any], fields: Iterable[str]) -> None:
    missing = [f for f in fields if not str(record.get(f) or "").strip()]
    if missing:
        raise ImportRefused(f"{path} line {number}: missing {missing}; every row needs them")


def completion_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Completions from CSV/JSONL with columns item_id, system, text (contributor optional)."""
    out = []
    for number, r in _read_table_file(path):
        _need(path, number, r, ("item_id", "system", "text"))
        contributor = str(r.get("contributor") or "")
        out.append(
            (
                number,
                {
                    "id": completion_id(r["item_id"], r["system"], contributor),
                    "item_id": r["item_id"],
                    "system": r["system"],
                    "contributor": contributor,
                    "status": Status.OK.value,
                    "text": str(r["text"]).strip(),
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
                },
            )
        )
    return out


IMPORT_WINNERS = {"a": Shown.FIRST, "b": Shown.SECOND, "tie": Shown.TIE}
"""A judgments file's winner column, in the terms of its own a_system and b_system."""


def judgment_rows(
    path: Path, seed: int
) -> tuple[
    list[tuple[int, dict[str, Any]]],
    list[tuple[int, dict[str, Any]]],
    list[tuple[int, dict[str, Any]]],
]:
    """Judgments from CSV/JSONL: item_id, judge, a_system, b_system, winner (a|b|tie), strength,
    optional a_contributor, b_contributor, rationale, source (human|llm; default human).

    Returns the judges, pairs and judgments to add.
    """
    judges: dict[str, tuple[int, dict[str, Any]]] = {}
    pairs: dict[str, tuple[int, dict[str, Any]]] = {}
    judgments = []
    for number, r in _read_table_file(path):
        _need(path, number, r, ("item_id", "judge", "a_system", "b_system", "winner"))
        given = str(r["winner"]).strip().lower()
        if given not in IMPORT_WINNERS:
            raise ImportRefused(
                f"{path} line {number}: 'winner' must be a, b or tie, got {given!r}"
            )
        try:
            strength = int(r.get("strength") or 1)
        except ValueError:
            raise ImportRefused(
                f"{path} line {number}: 'strength' must be an integer 1-5"
            ) from None
        if not 1 <= strength <= 5:
            raise ImportRefused(f"{path} line {number}: 'strength' must be 1-5, got {strength}")
        source = str(r.get("source") or JudgeSource.HUMAN)
        item = r["item_id"]
        x = completion_id(item, r["a_system"], str(r.get("a_contributor") or ""))
        y = completion_id(item, r["b_system"], str(r.get("b_contributor") or ""))
        pid = pair_id(item, x, y)
        a, b = seeded_order(seed, item, x, y)
        pairs.setdefault(
            pid, (number, {"id": pid, "item_id": item, "a_id": a, "b_id": b, "design": "imported"})
        )
        # the file's a_system is its first reply: its verdict is in those terms
        winner = Presentation.of(a, b, first=x).to_pair(IMPORT_WINNERS[given])
        judges.setdefault(
            r["judge"],
            (
                number,
                {
                    "name": r["judge"],
                    "source": source,
                    "family": "human" if source == JudgeSource.HUMAN else "",
                    "spec": {},
                },
            ),
        )
        judgments.append(
            (
                number,
                {
                    "id": judgment_id(pid, r["judge"], Order.AB),
                    "pair_id": pid,
                    "judge": r["judge"],
                    "order": Order.AB.value,
                    "status": Status.OK.value,
                    "winner": winner,
                    "strength": strength,
                    "axes": {},
                    "rationale": str(r.get("rationale") or ""),
                    "raw": None,
                    "error": None,
                    "prompt_hash": None,
                    "call_hash": None,
                    "latency_ms": None,
                    "tokens_in": None,
                    "tokens_out": None,
                    "cost_usd": None,
                    "created_at": now_iso(),
                },
            )
        )
    return list(judges.values()), list(pairs.values()), judgments


def import_table(store: Store, path: Path, kind: str, seed: int) -> ImportSummary:
    """Import completions or judgments from a CSV or JSON Lines file, all-or-nothing."""
    if not path.is_file():
        raise ImportRefused(f"{path}: no such file")
    if kind == "completions":
        tables = {"completions.jsonl": completion_rows(path)}
    elif kind == "judgments":
        judges, pairs, judgments = judgment_rows(path, seed)
        tables = {"judges.jsonl": judges, "pairs.jsonl": pairs, "judgments.jsonl": judgments}
    else:
        raise ImportRefused(f"--table must be 'completions' or 'judgments', got {kind!r}")
    with store.session() as session:
        if kind == "judgments":
            _require_pair_completions(session, path, tables["pairs.jsonl"])
            # judges and pairs the study already has are reused as they are
            for name, key in (("judges.jsonl", "name"), ("pairs.jsonl", "id")):
                stored = _existing_keys(session, name, key)
                tables[name] = [r for r in tables[name] if r[1][key] not in stored]
        return _insert_all(session, tables, dict.fromkeys(tables, str(path)))


def _require_pair_completions(
    session: Session, path: Path, pairs: list[tuple[int, dict[str, Any]]]
) -> None:
    stored = _existing_keys(session, "completions.jsonl", "id")
    for number, record in pairs:
        for column in ("a_id", "b_id"):
            if record[column] not in stored:
                raise ImportRefused(
                    f"{path} line {number}: item {record['item_id']!r} has no stored completion "
                    "for one of its two systems (check a_system/b_system and the contributors); "
                    "import or generate the completions first"
                )
