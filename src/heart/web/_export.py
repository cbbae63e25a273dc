"""What people produced, as rows for the admin's CSV and JSON Lines downloads: completions of
the human system, judgments by human raters (each marked whether the analyses count it),
strategy labels, the labelled completions whose labellers split evenly on a strategy, and the
raters themselves: their quality measures and flags, and whether to approve them, ask them to
return the submission or keep them out of the analyses, and why; and for Prolific, each
submission with what to do about it. People appear only by their pseudonymous rater ids (and
Prolific's submission ids), with the reason if quality control excluded them."""

from __future__ import annotations

import csv
import io
import json
import math
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from heart.analyses import human_consensus
from heart.config import PeopleSpec
from heart.people import RETURN, review_quality, session_state
from heart.spreadsheet import inert
from heart.stats import Share
from heart.store import (
    CompletionRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    RaterRow,
    Store,
    counted_judgment,
)
from heart.strategies import Taxonomy
from heart.types import JudgeSource, Status

TABLES = ("completions", "judgments", "labels", "disagreements", "raters", "prolific")
FORMATS = ("csv", "jsonl")


def _exclusions(store: Store) -> dict[str, str]:
    with store.session() as s:
        rows = s.execute(
            select(RaterRow.id, RaterRow.excluded_reason).where(
                RaterRow.excluded_reason.is_not(None)
            )
        ).all()
    return {rater: str(reason) for rater, reason in rows}


def _completions(store: Store, human_system: str) -> list[dict[str, Any]]:
    with store.session() as s:
        rows = s.execute(
            select(CompletionRow.id, CompletionRow.item_id, CompletionRow.contributor,
                   CompletionRow.text, CompletionRow.created_at)
            .where(CompletionRow.system == human_system, CompletionRow.status == Status.OK)
            .order_by(CompletionRow.created_at, CompletionRow.id)
        ).all()  # fmt: skip
    return [
        {"id": cid, "item_id": item, "rater": rater, "text": text, "created_at": created}
        for cid, item, rater, text, created in rows
    ]


def _answer(raw: str | None) -> dict[str, Any]:
    """The rater's own answer (five-option choice, checklist) kept in a judgment's ``raw``."""
    try:
        answer = json.loads(raw or "{}")
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _judgments(store: Store) -> list[dict[str, Any]]:
    with store.session() as s:
        rows = s.execute(
            select(JudgmentRow.id, JudgmentRow.pair_id, PairRow.item_id, JudgmentRow.judge,
                   JudgmentRow.order, JudgmentRow.winner, JudgmentRow.strength,
                   JudgmentRow.raw, JudgmentRow.rationale, JudgmentRow.created_at,
                   counted_judgment())
            .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
            .join(PairRow, PairRow.id == JudgmentRow.pair_id)
            .where(JudgeRow.source == JudgeSource.HUMAN)
            .order_by(JudgmentRow.created_at, JudgmentRow.id)
        ).all()  # fmt: skip
    out = []
    for jid, pair, item, rater, order, winner, strength, raw, rationale, created, counted in rows:
        answer = _answer(raw)
        out.append(
            {"id": jid, "pair_id": pair, "item_id": item, "rater": rater, "order": order,
             "winner": winner, "strength": strength, "choice": answer.get("choice", ""),
             "checklist": answer.get("checklist", []), "rationale": rationale,
             "created_at": created, "counted": bool(counted)}
        )  # fmt: skip
    return out


def _labels(store: Store) -> list[dict[str, Any]]:
    with store.session() as s:
        rows = s.execute(
            select(LabelRow.id, LabelRow.completion_id, CompletionRow.item_id, LabelRow.rater_id,
                   LabelRow.strategies, LabelRow.created_at)
            .join(CompletionRow, CompletionRow.id == LabelRow.completion_id)
            .order_by(LabelRow.created_at, LabelRow.id)
        ).all()  # fmt: skip
    return [
        {"id": lid, "completion_id": cid, "item_id": item, "rater": rater,
         "strategies": list(strategies), "created_at": created}
        for lid, cid, item, rater, strategies, created in rows
    ]  # fmt: skip


@dataclass(frozen=True)
class Disagreement:
    """A labelled completion left out of the classifier's F1: its labellers (counted ones only)
    split evenly on the ``split`` strategies. ``choices``: labeller → strategies chosen."""

    completion_id: str
    item_id: str
    text: str
    split: tuple[str, ...]
    choices: dict[str, tuple[str, ...]]


def disagreements(store: Store, taxonomy: Taxonomy) -> list[Disagreement]:
    """Every completion whose counted labellers split evenly on some strategy, by id."""
    split = [c for c in human_consensus(store, taxonomy) if c.disagreement]
    with store.session() as s:
        completions = {
            cid: (item, text)
            for cid, item, text in s.execute(
                select(CompletionRow.id, CompletionRow.item_id, CompletionRow.text).where(
                    CompletionRow.id.in_([c.completion_id for c in split])
                )
            )
        }
    return [
        Disagreement(c.completion_id, *completions[c.completion_id], c.split, c.choices)
        for c in split
    ]


def _disagreements(store: Store, taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """One row per labeller of each disagreement."""
    return [
        {"completion_id": d.completion_id, "item_id": d.item_id, "text": d.text,
         "split": list(d.split), "rater": rater, "strategies": list(chosen)}
        for d in disagreements(store, taxonomy)
        for rater, chosen in d.choices.items()
    ]  # fmt: skip


def _share_cells(name: str, share: Share | None) -> dict[str, Any]:
    """A share as its count, total and interval (empty when there is no evidence)."""
    if share is None:
        return {f"{name}_{part}": None for part in ("hits", "n", "low", "high")}
    return {f"{name}_hits": share.hits, f"{name}_n": share.n, f"{name}_low": round(share.low, 4),
            f"{name}_high": round(share.high, 4)}  # fmt: skip


def _number(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 4)


def _raters(store: Store, people: PeopleSpec) -> list[dict[str, Any]]:
    """One row per rater: the decision and its reason, the exclusion, the flags, the measures."""
    out = []
    for q in review_quality(store, people):
        m = q.measures
        out.append(
            {"rater": q.rater, "entry": q.entry, "decision": q.decision,
             "decision_reason": q.decision_reason, "excluded": q.excluded or "",
             "flags": [f"{f.name}{' (excludes)' if f.excludes else ''}: {f.reason}"
                       for f in q.flags],
             "verdicts": m.verdicts, "counted": q.counted, "ties": m.ties,
             **_share_cells("first_shown", m.first_shown),
             "timed": m.timed, "median_seconds": _number(m.median_seconds),
             "median_floor": _number(m.median_floor), **_share_cells("too_fast", m.too_fast),
             "longest_run": m.longest_run, "run_answer": m.run_answer, "shared": m.shared,
             **_share_cells("agreement", m.agreement), "kappa": _number(m.kappa),
             "gold": m.gold, "gold_failed": m.gold_failed, "attention": m.attention,
             "attention_failed": m.attention_failed}
        )  # fmt: skip
    return out


def _prolific(store: Store, people: PeopleSpec) -> list[dict[str, Any]]:
    """One row per Prolific participant, by their submission (session) id, with what to do
    about the submission: approve, ask to return (two failed attention checks), or wait while
    their session is still under way."""
    with store.session() as s:
        metas = {r.id: r.meta or {} for r in s.scalars(select(RaterRow))}
    out = []
    now = time.time()
    for q in review_quality(store, people):
        meta = metas.get(q.rater, {})
        if meta.get("entry") != "prolific":
            continue
        at = session_state(store, q.rater, people, now=now)
        action = "return" if q.decision == RETURN else ("approve" if at.ended else "wait")
        out.append(
            {"submission_id": meta.get("session", ""), "study_id": meta.get("study", ""),
             "rater": q.rater, "action": action, "session": at.ended or "under way",
             "tasks": at.done, "reason": q.decision_reason}
        )  # fmt: skip
    return out


def export_rows(
    store: Store,
    table: str,
    human_system: str,
    taxonomy: Taxonomy,
    people: PeopleSpec | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``table`` (one of TABLES), each with an ``excluded`` reason (or "") but for
    disagreements, whose labels all count. Raters are judged by the ``people`` settings (else
    the defaults)."""
    if table == "disagreements":
        return _disagreements(store, taxonomy)
    if table == "raters":
        return _raters(store, people or PeopleSpec())
    if table == "prolific":
        return _prolific(store, people or PeopleSpec())
    if table == "completions":
        rows = _completions(store, human_system)
    elif table == "judgments":
        rows = _judgments(store)
    elif table == "labels":
        rows = _labels(store)
    else:
        raise ValueError(f"unknown export table {table!r}; use one of {', '.join(TABLES)}")
    excluded = _exclusions(store)
    for row in rows:
        row["excluded"] = excluded.get(row["rater"], "")
    return rows


def _cell(value: Any) -> str:
    """A CSV cell: lists joined with "; ", and text a spreadsheet would run as a formula
    prefixed with an apostrophe."""
    if isinstance(value, list):
        value = "; ".join(map(str, value))
    text = "" if value is None else str(value)
    return inert(text)


def to_csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row[c]) for c in columns])
    return out.getvalue()


def to_jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


COLUMNS = {
    "completions": ["id", "item_id", "rater", "text", "created_at", "excluded"],
    "judgments": ["id", "pair_id", "item_id", "rater", "order", "winner", "strength", "choice",
                  "checklist", "rationale", "created_at", "counted", "excluded"],
    "labels": ["id", "completion_id", "item_id", "rater", "strategies", "created_at",
               "excluded"],
    "disagreements": ["completion_id", "item_id", "text", "split", "rater", "strategies"],
    "raters": ["rater", "entry", "decision", "decision_reason", "excluded", "flags", "verdicts",
               "counted", "ties", "first_shown_hits", "first_shown_n", "first_shown_low",
               "first_shown_high", "timed", "median_seconds", "median_floor", "too_fast_hits",
               "too_fast_n", "too_fast_low", "too_fast_high", "longest_run", "run_answer",
               "shared", "agreement_hits", "agreement_n", "agreement_low", "agreement_high",
               "kappa", "gold", "gold_failed", "attention", "attention_failed"],
    "prolific": ["submission_id", "study_id", "rater", "action", "session", "tasks", "reason"],
}  # fmt: skip
