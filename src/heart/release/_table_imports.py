"""Table imports: completions, judgments and people's strategy labels from a CSV or JSON Lines
file, each row checked and named by its line, stored all or nothing."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.errors import ImportRefused
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
    check_row,
    describe,
    text_problem,
)
from heart.release._chunk import Row
from heart.release._rows import (
    ImportSummary,
    decode_file,
    existing_keys,
    file_bytes,
    fill_defaults,
    insert_all,
    parse_jsonl,
    store_rows,
)
from heart.store import (
    CompletionRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    RaterRow,
    Store,
    imported_judgment,
    now_iso,
)
from heart.strategies import Taxonomy, load_taxonomy
from heart.types import JudgeSource, Order, Shown, Status

MAX_CELL = 128 * 1024
"""The most characters one field of a completions or judgments file may hold (the csv module's
own default limit)."""


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


TABLE_FIX = "correct the row"


def _read_table_file(path: Path, columns: Iterable[str]) -> list[Row]:
    """The rows of a completions, judgments or labels file, each holding only ``columns``; a
    file without a row is refused (an import of nothing is a mistake, most likely the wrong
    file)."""
    text = decode_file(path, file_bytes(path))
    csv_file = path.suffix.lower() == ".csv"
    rows = _parse_csv(path, text) if csv_file else parse_jsonl(path, text)
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
        fill_defaults(CompletionRow, record)
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
        fill_defaults(JudgmentRow, judgment)
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
            stored = existing_keys(session, name, key)
            tables[name] = [r for r in tables[name] if r[1][key] not in stored]
    summary = insert_all(session, tables, lambda _, n: f"{path} line {n}", FILE_NAMES)
    for name in SHARED:  # one an import beside this one stored meanwhile is reused too
        summary.unchanged.pop(name, None)
    return summary


def import_table(store: Store, path: Path, kind: str, seed: int) -> ImportSummary:
    """Import completions, judgments or strategy labels from a CSV or JSON Lines file,
    all-or-nothing; safe beside other imports into the same study (see store_rows)."""
    if not path.is_file():
        raise ImportRefused(f"{path}: no such file")
    rows = _table_rows(store, path, kind, seed)
    return store_rows(store, path, lambda session: _store_table(session, path, kind, rows))


def _require_pair_completions(session: Session, path: Path, pairs: list[Row]) -> None:
    stored = existing_keys(session, "completions.jsonl", "id")
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
