"""The verdicts as one flat table, and the replies they judge. One row per valid verdict, with
its item, both replies, the order they were shown in, the judge, the winner, every axis, the
rationale, whether the analyses count it, and what the call cost; written as CSV, JSON Lines or
Parquet, read as a data frame.

Every value is read from the store, never recomputed, so the table says what the store holds:
the same rows whatever order the data came in (sorted by item, pair, judge and order shown)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import aliased

from heart.errors import HeartError
from heart.frames import frame, optional_module
from heart.spreadsheet import inert
from heart.store import (
    CompletionRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    RaterRow,
    Store,
    SystemRow,
    counted_judgment,
    imported_judgment,
    left_out_reason,
)
from heart.types import Axis, Order, Side, Status

AXES = tuple(axis.value for axis in Axis)


@dataclass(frozen=True)
class VerdictRow:
    """One judge's verdict on one pair in one shown order (see ``VERDICT_COLUMNS``)."""

    judgment_id: str
    item_id: str
    conversation_id: str
    subset: str
    problem_type: str
    pair_id: str
    design: str
    a_system: str
    a_contributor: str
    a_completion: str
    b_system: str
    b_contributor: str
    b_completion: str
    order: str
    first_system: str
    judge: str
    judge_source: str
    judge_family: str
    imported: bool
    winner: str
    winner_system: str
    strength: int | None
    H_winner: str | None
    H_strength: int | None
    E_winner: str | None
    E_strength: int | None
    A_winner: str | None
    A_strength: int | None
    R_winner: str | None
    R_strength: int | None
    T_winner: str | None
    T_strength: int | None
    rationale: str
    excluded: str
    counted: bool
    left_out: str
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    latency_ms: float | None
    created_at: str

    def axis(self, axis: str) -> tuple[str | None, int | None]:
        """The verdict on one axis in the pair's terms (a, b or none) and its strength; (None,
        None) when the judge did not judge that axis (people and imported verdicts)."""
        return getattr(self, f"{axis}_winner"), getattr(self, f"{axis}_strength")


_AXIS_COLUMNS = {
    **{f"{a}_winner": f"axis {a}: a, b or none (no clear advantage); empty when not judged"
       for a in AXES},
    **{f"{a}_strength": f"axis {a}: strength 1-5 of its winner; empty when none or not judged"
       for a in AXES},
}  # fmt: skip

VERDICT_COLUMNS: dict[str, str] = {
    "judgment_id": "the verdict's id in the store",
    "item_id": "the item (context) judged",
    "conversation_id": "the ESConv conversation the item comes from (bootstraps resample these)",
    "subset": "regular or adversarial",
    "problem_type": "the seeker's problem type (ESConv)",
    "pair_id": "the pair judged (the same in both shown orders)",
    "design": (
        "the pair design that made the pair (all, baseline, sampled, imported, ...; "
        "adaptive-N: the adaptive design's round N)"
    ),
    "a_system": "the system of the pair's reply a",
    "a_contributor": "the person who wrote reply a (human systems; empty for the others)",
    "a_completion": "reply a's completion id",
    "b_system": "the system of the pair's reply b",
    "b_contributor": "the person who wrote reply b (human systems; empty for the others)",
    "b_completion": "reply b's completion id",
    "order": "the order shown: ab when reply a was shown first, ba when b was",
    "first_system": "the system whose reply was shown first",
    "judge": "the LLM judge's name, or the human rater's pseudonymous id",
    "judge_source": "llm or human",
    "judge_family": "the judge's model family (human for people)",
    "imported": "true when the verdict came in from a judgments file",
    "winner": "a, b or tie, in the pair's terms whatever the order shown",
    "winner_system": "the winning reply's system; empty for a tie",
    "strength": "the win's strength, 1-5 (people: 1 slightly, 2 much better)",
    **{key: _AXIS_COLUMNS[key] for a in AXES for key in (f"{a}_winner", f"{a}_strength")},
    "rationale": "the judge's reason, as written",
    "excluded": "why quality control excluded the rater; empty when not excluded",
    "counted": "true when the analyses count the verdict",
    "left_out": "why the analyses leave it out; empty when counted",
    "tokens_in": "prompt tokens of the judge's call(s); empty for people and imports",
    "tokens_out": "answer tokens of the judge's call(s); empty for people and imports",
    "cost_usd": "the call's cost in US dollars, when its price is known",
    "latency_ms": "how long the judge's call took, in milliseconds",
    "created_at": "when the verdict was stored (UTC, ISO 8601)",
}
"""Every column of the verdicts table, in order, with its meaning."""

assert list(VERDICT_COLUMNS) == [f.name for f in fields(VerdictRow)]

FORMATS = (".csv", ".jsonl", ".parquet")


class VerdictTable(list[VerdictRow]):
    """The verdicts, one row each, readable as a data frame or an Arrow table."""

    def to_pandas(self) -> Any:
        """A pandas DataFrame with the columns of ``VERDICT_COLUMNS`` (nullable types: a
        missing number is <NA>, and whole numbers stay whole)."""
        return frame((asdict(row) for row in self), list(VERDICT_COLUMNS)).convert_dtypes()

    def to_arrow(self) -> Any:
        """A pyarrow Table with the columns of ``VERDICT_COLUMNS``, typed even when empty."""
        pa = optional_module("pyarrow", "an Arrow table of verdicts")
        schema = pa.schema([(name, _arrow_type(pa, name)) for name in VERDICT_COLUMNS])
        columns = {name: [getattr(row, name) for row in self] for name in VERDICT_COLUMNS}
        return pa.table(columns, schema=schema)


def _arrow_type(pa: Any, name: str) -> Any:
    kind = VerdictRow.__dataclass_fields__[name].type
    if "bool" in str(kind):
        return pa.bool_()
    if "int" in str(kind):
        return pa.int64()
    if "float" in str(kind):
        return pa.float64()
    return pa.string()


def _axis(axes: dict[str, Any], axis: str) -> tuple[str | None, int | None]:
    cell = axes.get(axis) if isinstance(axes, dict) else None
    if not isinstance(cell, dict) or cell.get("winner") is None:
        return None, None
    winner, strength = str(cell["winner"]), cell.get("strength")
    if winner == Side.NONE or not isinstance(strength, int):
        return winner, None
    return winner, strength


def verdict_rows(
    store: Store,
    *,
    item: str | None = None,
    system: str | None = None,
    judge: str | None = None,
) -> VerdictTable:
    """Every valid verdict (failed calls gave none), counted or not, by item, pair, judge and
    order shown; only those on ``item``, on pairs holding a reply of ``system``, or of
    ``judge``, when given."""
    a, b = aliased(CompletionRow), aliased(CompletionRow)
    query = (
        select(
            JudgmentRow, PairRow.item_id, PairRow.design, ItemRow.conversation_id,
            ItemRow.subset, ItemRow.problem_type, a.id, a.system, a.contributor, b.id,
            b.system, b.contributor, JudgeRow.source, JudgeRow.family,
            RaterRow.excluded_reason, counted_judgment(), left_out_reason(),
            imported_judgment(),
        )
        .join(PairRow, PairRow.id == JudgmentRow.pair_id)
        .join(ItemRow, ItemRow.id == PairRow.item_id)
        .join(a, a.id == PairRow.a_id)
        .join(b, b.id == PairRow.b_id)
        .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
        .outerjoin(RaterRow, RaterRow.id == JudgmentRow.judge)
        .where(JudgmentRow.status == Status.OK)
        .order_by(PairRow.item_id, JudgmentRow.pair_id, JudgmentRow.judge, JudgmentRow.order)
    )  # fmt: skip
    if item is not None:
        query = query.where(PairRow.item_id == item)
    if system is not None:
        query = query.where((a.system == system) | (b.system == system))
    if judge is not None:
        query = query.where(JudgmentRow.judge == judge)
    with store.session() as session:
        found = session.execute(query).all()
    table = VerdictTable()
    for row in found:
        (j, item_id, design, conversation, subset, problem, a_id, a_system, a_who, b_id,
         b_system, b_who, source, family, excluded, counted, reason, imported) = row  # fmt: skip
        winner = str(j.winner)
        axes: dict[str, Any] = {}
        for axis in AXES:
            axes[f"{axis}_winner"], axes[f"{axis}_strength"] = _axis(j.axes, axis)
        table.append(
            VerdictRow(
                judgment_id=j.id, item_id=item_id, conversation_id=conversation, subset=subset,
                problem_type=problem, pair_id=j.pair_id, design=design, a_system=a_system,
                a_contributor=a_who, a_completion=a_id, b_system=b_system, b_contributor=b_who,
                b_completion=b_id, order=j.order,
                first_system=a_system if j.order == Order.AB else b_system,
                judge=j.judge, judge_source=source, judge_family=family, imported=bool(imported),
                winner=winner,
                winner_system={Side.A: a_system, Side.B: b_system}.get(Side(winner), ""),
                strength=j.strength, **axes, rationale=j.rationale,
                excluded=excluded or "", counted=bool(counted), left_out=reason or "",
                tokens_in=j.tokens_in, tokens_out=j.tokens_out, cost_usd=j.cost_usd,
                latency_ms=j.latency_ms, created_at=j.created_at,
            )
        )  # fmt: skip
    return table


@dataclass(frozen=True)
class Reply:
    """One system's stored reply to an item (a human system: one per contributor)."""

    completion_id: str
    system: str
    kind: str
    contributor: str
    status: str
    text: str
    error: str | None


def item_replies(store: Store, item: str, system: str | None = None) -> list[Reply]:
    """Every reply stored for ``item`` (only ``system``'s when given), failed ones with their
    error, by system and contributor."""
    query = (
        select(CompletionRow, SystemRow.kind)
        .join(SystemRow, SystemRow.name == CompletionRow.system)
        .where(CompletionRow.item_id == item)
        .order_by(CompletionRow.system, CompletionRow.contributor)
    )
    if system is not None:
        query = query.where(CompletionRow.system == system)
    with store.session() as session:
        return [
            Reply(c.id, c.system, kind, c.contributor, c.status, c.text, c.error)
            for c, kind in session.execute(query)
        ]


def _csv_cell(value: Any) -> str:
    """Empty for no value, booleans as true/false, text a spreadsheet would run as a formula
    behind an apostrophe (numbers stay numbers)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return inert(value)
    return repr(value) if isinstance(value, float) else str(value)


@contextmanager
def _written_whole(path: Path) -> Iterator[Path]:
    """A temporary name beside ``path`` to write to, put in its place once written (a failure
    leaves any earlier file as it was)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def verdicts_format(path: Path) -> str:
    """The file format ``path``'s name asks for (.csv, .jsonl or .parquet); a one-line error
    otherwise."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise HeartError(
            f"{path}: the verdicts file must end in .csv, .jsonl or .parquet, got "
            f"{suffix or 'no extension'}"
        )
    return suffix


def write_verdicts(rows: Sequence[VerdictRow], path: Path) -> None:
    """Write ``rows`` to ``path`` in the format its extension names, whole or not at all."""
    suffix = verdicts_format(path)
    if not path.parent.is_dir():
        raise HeartError(f"{path}: folder {path.parent} does not exist; make it first")
    if suffix == ".parquet":
        parquet = optional_module("pyarrow.parquet", "writing Parquet")
        table = VerdictTable(rows).to_arrow()
        with _written_whole(path) as temporary:
            parquet.write_table(table, str(temporary))
        return
    with (
        _written_whole(path) as temporary,
        temporary.open("w", encoding="utf-8", newline="") as out,
    ):
        if suffix == ".csv":
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(VERDICT_COLUMNS)
            for row in rows:
                writer.writerow([_csv_cell(v) for v in asdict(row).values()])
        else:
            for row in rows:
                out.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")


__all__ = [
    "VERDICT_COLUMNS",
    "Reply",
    "VerdictRow",
    "VerdictTable",
    "item_replies",
    "verdict_rows",
    "verdicts_format",
    "write_verdicts",
]
