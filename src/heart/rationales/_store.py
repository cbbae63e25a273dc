"""Reading the rationales still to code, and writing a coder's codes, for both coders."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, aliased

from heart.ids import Presentation
from heart.rationales._rules import Code
from heart.store import (
    CompletionRow,
    JudgmentRow,
    PairRow,
    RationaleCodeRow,
    RationaleCodingRow,
    Store,
    counted_judgment,
)
from heart.types import Order, Status, stable_id


@dataclass(frozen=True)
class Rationale:
    """A counted judgment's rationale, with the two replies as the judge saw them."""

    judgment_id: str
    item_id: str
    text: str
    presentation: Presentation
    first: str  # the reply shown first (A)
    second: str  # the reply shown second (B)


def coding_id(judgment: str, coder: str, codebook_hash: str) -> str:
    return stable_id("rc-", judgment, coder, codebook_hash)


def rationales_to_code(
    store: Store, coder: str, codebook_hash: str, *, redo_failed: bool = False
) -> tuple[list[Rationale], int]:
    """The counted judgments with a rationale that ``coder`` has not coded under the codebook
    (``redo_failed``: or whose coding failed), and how many it has coded already."""
    a, b = aliased(CompletionRow), aliased(CompletionRow)
    done = select(RationaleCodingRow.judgment_id).where(
        RationaleCodingRow.coder == coder, RationaleCodingRow.codebook_hash == codebook_hash
    )
    if redo_failed:
        done = done.where(RationaleCodingRow.status == Status.OK)
    has_rationale = (counted_judgment(), func.length(func.trim(JudgmentRow.rationale)) > 0)
    already = select(func.count()).where(*has_rationale, JudgmentRow.id.in_(done))
    query = (
        select(JudgmentRow.id, JudgmentRow.rationale, JudgmentRow.order, PairRow.item_id,
               PairRow.a_id, PairRow.b_id, a.text, b.text)
        .join(PairRow, PairRow.id == JudgmentRow.pair_id)
        .join(a, a.id == PairRow.a_id)
        .join(b, b.id == PairRow.b_id)
        .where(*has_rationale, JudgmentRow.id.not_in(done))
        .order_by(JudgmentRow.id)
    )  # fmt: skip
    out = []
    with store.session() as session:
        for jid, text, order, item, a_id, b_id, a_text, b_text in session.execute(query):
            if not text.strip():  # spaces the database's trim leaves (new lines, tabs)
                continue
            shown = Presentation(a_id, b_id, Order(order))
            first, second = (a_text, b_text) if shown.first == a_id else (b_text, a_text)
            out.append(Rationale(jid, item, text, shown, first, second))
        done_before = session.scalar(already) or 0
    return out, int(done_before)


def code_values(
    rationale: Rationale, coder: str, codebook_hash: str, codes: Iterable[Code]
) -> list[dict[str, object]]:
    """The stored form of ``codes``, as the columns of their rows: sides turned into the pair's
    terms."""
    cid = coding_id(rationale.judgment_id, coder, codebook_hash)
    return [
        {"id": stable_id("rk-", cid, str(n)), "coding_id": cid,
         "judgment_id": rationale.judgment_id, "coder": coder, "codebook_hash": codebook_hash,
         "theme": code.theme, "side": rationale.presentation.to_pair(code.shown).value,
         "negated": code.negated, "evidence": code.evidence,
         "span_start": code.start if code.start >= 0 else None,
         "span_end": code.end if code.end >= 0 else None, "cue": code.cue}
        for n, code in enumerate(codes)
    ]  # fmt: skip


def code_rows(
    rationale: Rationale, coder: str, codebook_hash: str, codes: Iterable[Code]
) -> list[RationaleCodeRow]:
    """The stored form of ``codes`` as rows (see ``code_values``)."""
    return [RationaleCodeRow(**v) for v in code_values(rationale, coder, codebook_hash, codes)]


def replace_codes(
    session: Session, coding: RationaleCodingRow, codes: list[RationaleCodeRow]
) -> None:
    """Store ``coding`` (new or again) and make ``codes`` its only codes."""
    session.merge(coding)
    session.flush()
    session.execute(delete(RationaleCodeRow).where(RationaleCodeRow.coding_id == coding.id))
    session.add_all(codes)
