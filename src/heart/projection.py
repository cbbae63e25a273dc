"""The study as it will stand once the earlier stages have run, so that a dry run prices every
stage before its inputs exist: the items the rules choose (or the adversarial sources), and a
reply of an assumed length for every completion not generated yet.

What is projected is said in the projection's notes; a call that reads projected work is an
estimate (its prompt, and so its tokens in, are), and the stage plans count those apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from heart.config import PairDesign
from heart.errors import HeartError
from heart.generate import GenerationPlan, fixed_reply, plan_generation
from heart.ids import completion_id, judgment_id
from heart.items import count_rewrites, item_from_row, select_study_items
from heart.judging import JudgingInputs, JudgingPlan, pairs_to_add, projected_pairs
from heart.rationales._store import Rationale
from heart.store import CompletionRow, ItemRow
from heart.study import Study
from heart.types import Item, Status, SystemKind

ASSUMED_WORD = "abc "
"""A stand-in reply is this word repeated once per assumed token: four characters, one token
by the engine's estimate (four characters a token)."""


def assumed_text(tokens: int) -> str:
    """A stand-in text of about ``tokens`` tokens."""
    return (ASSUMED_WORD * tokens).strip()


@dataclass
class Projection:
    """Items (stored and projected), every usable reply (stored, fixed, or assumed), and the
    generation plan that fills the gap."""

    items: dict[str, Item]
    estimated_items: set[str]  # projected items whose text is itself an estimate
    replies: list[CompletionRow]  # usable replies, stored and projected
    assumed: set[str]  # ids of replies not generated yet (stand-in text)
    generation: GenerationPlan
    reply_tokens: dict[str, int]  # the assumed length of each model system's replies
    item_notes: list[str] = field(default_factory=list)  # what was assumed about items
    reply_notes: list[str] = field(default_factory=list)  # and about replies

    def reads_estimates(self, item_id: str, *replies: str) -> bool:
        """Whether a call on ``item_id`` reading ``replies`` reads projected work."""
        return item_id in self.estimated_items or any(r in self.assumed for r in replies)


def _stored_items(study: Study) -> dict[str, Item]:
    with study.store.session() as session:
        rows = session.scalars(select(ItemRow).order_by(ItemRow.id))
        return {row.id: item_from_row(row) for row in rows}


def _project_items(study: Study, items: dict[str, Item]) -> tuple[set[str], list[str]]:
    """Add the items `heart run` would build to ``items``; returns the ones that are estimates
    and what was assumed."""
    from heart.corpus import load_corpus
    from heart.items.adversarial import projected_items

    spec = study.config.items
    estimated: set[str] = set()
    notes: list[str] = []
    try:
        if not items:
            corpus = load_corpus(study.esconv_path())
            chosen = select_study_items(corpus.conversations, spec, study.config.seed).items
            items.update((item.id, item) for item in chosen)
            note = f"the {len(chosen)} regular items are not built yet: the rules choose them now"
            if spec.screener is not None:
                estimated.update(item.id for item in chosen)
                note += " (the LLM screener's vetoes are unknown, so they are estimates)"
            notes.append(note + ", as `heart items build` will")
        if spec.adversarial and not count_rewrites(study.store):
            sources = projected_items(study)
            items.update((item.id, item) for item in sources)
            estimated.update(item.id for item in sources)
            notes.append(
                f"{len(sources)} adversarial items are not built yet: priced on their source "
                "conversations' turns (the rewrites, and which are kept, are estimates)"
            )
    except HeartError as exc:
        notes.append(f"the items to come cannot be projected ({exc}); only stored items count")
    return estimated, notes


def project(study: Study, reply_tokens: int | None = None) -> Projection:
    """The study once items are built and every reply generated; a reply not generated yet is
    ``reply_tokens`` long, else as long as its system's ``max_tokens``."""
    items = _stored_items(study)
    estimated, item_notes = _project_items(study, items)
    notes: list[str] = []
    generation = plan_generation(study, list(items.values()))
    with study.store.session() as session:
        replies = list(
            session.scalars(select(CompletionRow).where(CompletionRow.status == Status.OK))
        )
    for item, system in generation.fixed:
        replies.append(_reply(item, system.name, fixed_reply(item, system)))
    lengths: dict[str, int] = {}
    assumed: set[str] = set()
    for item, system in generation.asks:
        assert system.model is not None
        tokens = lengths.setdefault(system.name, reply_tokens or system.model.max_tokens)
        replies.append(_reply(item, system.name, assumed_text(tokens)))
        assumed.add(replies[-1].id)
    if lengths:
        basis = "the stated length" if reply_tokens else "each system's max_tokens"
        each = ", ".join(f"{name} {n}" for name, n in lengths.items())
        notes.append(
            f"{len(assumed)} replies are not generated yet: assumed {basis} long ({each} tokens)"
        )
    humans = [s.name for s in study.config.systems if s.kind is SystemKind.HUMAN]
    if humans:
        written = sum(r.system in humans for r in replies)
        notes.append(f"people's replies count once written ({written} so far)")
    return Projection(items, estimated, replies, assumed, generation, lengths, item_notes, notes)


def _reply(item: Item, system: str, text: str) -> CompletionRow:
    return CompletionRow(
        id=completion_id(item.id, system), item_id=item.id, system=system, contributor="",
        status=Status.OK, text=text,
    )  # fmt: skip


def judging_inputs(study: Study, projection: Projection) -> JudgingInputs:
    """What judging would plan from once every reply exists: the stored pairs, and the pairs
    the design adds for the projected replies (the adaptive design: balanced stand-ins up to
    its budget, every pair without one)."""
    inputs = JudgingInputs.stored(study.store)
    inputs.items = projection.items
    for reply in projection.replies:
        inputs.systems[reply.id] = reply.system
        inputs.texts[reply.id] = reply.text
    stored = [(p.id, p.item_id, p.a_id, p.b_id) for p in inputs.pairs]
    usable = [(r.id, r.item_id, r.system) for r in projection.replies]
    if study.config.pairs.design is PairDesign.ADAPTIVE:
        added = projected_pairs(study, usable, stored)
    else:
        added = pairs_to_add(study.config.pairs, usable, stored, study.config.seed)
    inputs.pairs = sorted([*inputs.pairs, *added], key=lambda p: (p.item_id, p.id))
    return inputs


def projected_rationales(plan: JudgingPlan, inputs: JudgingInputs) -> list[Rationale]:
    """The rationale of every verdict ``plan`` asks for, each as long as its judge's
    ``max_tokens`` (an upper bound: the verdict holds more than its rationale)."""
    return [
        Rationale(
            judgment_id(pair.id, judge.name, shown.order),
            pair.item_id,
            assumed_text(judge.model.max_tokens),
            shown,
            inputs.texts[shown.first],
            inputs.texts[shown.second],
        )
        for pair, judge, shown in plan.asks
    ]


__all__ = [
    "Projection",
    "assumed_text",
    "judging_inputs",
    "project",
    "projected_rationales",
]
