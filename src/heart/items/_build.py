"""Writing a selection to the store: conversations, items and the screening record, all at once."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from heart.errors import HeartError
from heart.items._select import Selection
from heart.store import (
    CompletionRow,
    ConversationRow,
    ItemRow,
    RewriteRow,
    ScreeningRow,
    Store,
)
from heart.types import Item, Subset, Turn

if TYPE_CHECKING:
    from heart.corpus import Corpus


def turn_to_json(turn: Turn) -> dict[str, object]:
    return turn.model_dump(mode="json")


def item_from_row(row: ItemRow) -> Item:
    """The domain item stored in ``row``."""
    return Item(
        id=row.id,
        content_hash=row.content_hash,
        subset=Subset(row.subset),
        conversation_id=row.conversation_id,
        turn_index=row.turn_index,
        context=tuple(Turn.model_validate(t) for t in row.context),
        reference=row.reference,
        problem_type=row.problem_type,
        emotion_type=row.emotion_type,
        situation=row.situation,
        meta=row.meta,
    )


def item_to_row(item: Item) -> ItemRow:
    return ItemRow(
        id=item.id,
        content_hash=item.content_hash,
        subset=item.subset.value,
        conversation_id=item.conversation_id,
        turn_index=item.turn_index,
        context=[turn_to_json(t) for t in item.context],
        reference=item.reference,
        problem_type=item.problem_type,
        emotion_type=item.emotion_type,
        situation=item.situation,
        meta=item.meta,
    )


def store_conversations(session: Session, corpus: Corpus, ids: set[str]) -> None:
    """Store the corpus's conversations named in ``ids`` that the store does not hold yet."""
    existing = set(session.scalars(select(ConversationRow.id)))
    for conversation in corpus.conversations:
        if conversation.id in existing or conversation.id not in ids:
            continue
        session.add(
            ConversationRow(
                id=conversation.id,
                problem_type=conversation.problem_type,
                emotion_type=conversation.emotion_type,
                experience_type=conversation.experience_type,
                situation=conversation.situation,
                survey=conversation.survey,
                turns=[turn_to_json(t) for t in conversation.turns],
                origin=asdict(corpus.origins[conversation.id]),
            )
        )
    session.flush()


def save_selection(store: Store, corpus: Corpus, selection: Selection) -> bool:
    """Store a regular selection; returns False when the same items are already stored.

    Replacing a different selection is refused once completions refer to the old items, so a
    rebuild never orphans work already paid for.
    """
    new_ids = {item.id for item in selection.items}
    with store.session() as session:
        old_ids = set(
            session.scalars(select(ItemRow.id).where(ItemRow.subset == Subset.REGULAR.value))
        )
        if old_ids == new_ids:
            return False
        if old_ids:
            used = session.scalar(
                select(func.count())
                .select_from(CompletionRow)
                .where(CompletionRow.item_id.in_(old_ids - new_ids))
            )
            if used:
                raise HeartError(
                    f"this study already has {len(old_ids)} regular items with {used} completions "
                    "that the new selection would drop; build items in a new study "
                    "(`heart init DIR`) or keep the corpus, seed and item settings unchanged"
                )
            session.execute(delete(ItemRow).where(ItemRow.id.in_(old_ids - new_ids)))
        session.execute(delete(ScreeningRow))
        store_conversations(session, corpus, {d.conversation_id for d in selection.decisions})
        for item in selection.items:
            if item.id not in old_ids:
                session.add(item_to_row(item))
        session.add_all(ScreeningRow(**asdict(d)) for d in selection.decisions)
    return True


def stored_items(store: Store) -> list[Item]:
    """Every stored item, by problem type and id."""
    with store.session() as session:
        rows = session.scalars(select(ItemRow).order_by(ItemRow.problem_type, ItemRow.id))
        return [item_from_row(row) for row in rows]


def count_items(store: Store) -> dict[str, int]:
    """Stored items per subset (every subset named, zero when it has none)."""
    with store.session() as session:
        found = dict(
            session.execute(select(ItemRow.subset, func.count()).group_by(ItemRow.subset)).all()
        )
    return {subset.value: int(found.get(subset.value, 0)) for subset in Subset}


def stored_item(store: Store, item_id: str) -> tuple[Item, str | None]:
    """One stored item and what the screen said of it; HeartError naming the fix if absent."""
    with store.session() as session:
        row = session.get(ItemRow, item_id)
        if row is None:
            raise HeartError(
                f"no item {item_id!r} in this study; list them with `heart items list`"
            )
        detail = session.scalars(
            select(ScreeningRow.detail).where(ScreeningRow.item_id == item_id)
        ).first()
        return item_from_row(row), detail


def count_rewrites(store: Store) -> int:
    """How many conversations the adversarial stage has settled (kept or rejected)."""
    with store.session() as session:
        return int(session.scalar(select(func.count()).select_from(RewriteRow)) or 0)
