"""People's strategy labels as the analyses count them, and each labelled completion's
consensus.

A label counts when its rater was not excluded by quality control, its completion holds a
reply, and it was made with the taxonomy in use (labels stored before taxonomy hashes were kept,
whose hash is empty, were made with the same 15 names and count too). Names outside the taxonomy
are dropped.
"""

from __future__ import annotations

from sqlalchemy import or_, select

from heart.store import CompletionRow, LabelRow, RaterRow, Store
from heart.strategies import Consensus, Taxonomy, consensus
from heart.types import Status


def human_consensus(store: Store, taxonomy: Taxonomy) -> list[Consensus]:
    """The consensus of every completion with at least one counted label, by completion id."""
    excluded = select(RaterRow.id).where(RaterRow.excluded_reason.is_not(None))
    with store.session() as s:
        rows = s.execute(
            select(LabelRow.completion_id, LabelRow.rater_id, LabelRow.strategies)
            .join(CompletionRow, CompletionRow.id == LabelRow.completion_id)
            .where(
                CompletionRow.status == Status.OK,
                LabelRow.rater_id.not_in(excluded),
                or_(LabelRow.taxonomy_hash == taxonomy.hash, LabelRow.taxonomy_hash.is_(None)),
            )
            .order_by(LabelRow.completion_id, LabelRow.rater_id)
        ).all()
    names = set(taxonomy.names)
    choices: dict[str, dict[str, list[str]]] = {}
    for completion, rater, strategies in rows:
        choices.setdefault(completion, {})[rater] = [s for s in strategies if s in names]
    return [consensus(completion, by_rater) for completion, by_rater in choices.items()]
