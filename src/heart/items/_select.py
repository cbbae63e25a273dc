"""Regular item selection: every couplet screened, at most k per dialogue, stratified by problem."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from heart.config import ItemsSpec
from heart.items._rules import Screened, safety_rule, screen_seeker_turn
from heart.types import (
    Conversation,
    Item,
    Role,
    Subset,
    Turn,
    canonical_json,
    sha256_hex,
    stable_id,
)


@dataclass(frozen=True)
class Decision:
    """Why one candidate couplet was kept or dropped."""

    conversation_id: str
    turn_index: int
    kept: bool
    rule: str
    detail: str = ""
    item_id: str | None = None


@dataclass
class Selection:
    """The items chosen and a decision for every couplet of the corpus."""

    items: list[Item]
    decisions: list[Decision]
    quotas: dict[str, int] = field(default_factory=dict)
    conversations_by_problem: dict[str, int] = field(default_factory=dict)

    def counts_by_rule(self) -> Counter[str]:
        return Counter(d.rule for d in self.decisions)

    def counts_by_problem(self) -> Counter[str]:
        return Counter(item.problem_type for item in self.items)


@dataclass(frozen=True)
class Candidate:
    """A couplet the rule-based screen found eligible."""

    conversation: Conversation
    turn_index: int
    screened: Screened

    @property
    def key(self) -> tuple[str, int]:
        return (self.conversation.id, self.turn_index)


# A second pass over eligible couplets (e.g. an LLM screener): each key -> (keep, reason).
SecondPass = Callable[[list[Candidate]], dict[tuple[str, int], tuple[bool, str]]]


def item_identity(context: Sequence[Turn], reference: str, subset: Subset) -> tuple[str, str]:
    """An item's id and content hash, derived from what it shows and its subset, so every study
    built from the same source gives the same ones."""
    content = canonical_json(
        {
            "context": [[t.role.value, t.text] for t in context],
            "reference": reference,
            "subset": subset.value,
        }
    )
    content_hash = sha256_hex(content)
    return stable_id("i-", content_hash, length=12), content_hash


def make_item(conversation: Conversation, turn_index: int, subset: Subset, cues: str) -> Item:
    """The item whose context is ``turns[:turn_index]`` and whose reference is that turn."""
    context = conversation.turns[:turn_index]
    reference = conversation.turns[turn_index].text
    item_id, content_hash = item_identity(context, reference, subset)
    return Item(
        id=item_id,
        content_hash=content_hash,
        subset=subset,
        conversation_id=conversation.id,
        turn_index=turn_index,
        context=context,
        reference=reference,
        problem_type=conversation.problem_type,
        emotion_type=conversation.emotion_type,
        situation=conversation.situation,
        meta={
            "experience_type": conversation.experience_type,
            "survey": conversation.survey,
            "screen_cues": cues,
            "reference_strategies": [s for s in conversation.turns[turn_index].strategies if s],
        },
    )


def _screen_conversation(
    conversation: Conversation, min_context_turns: int
) -> tuple[list[Candidate], list[Decision]]:
    turns = conversation.turns
    couplets = [
        i + 1
        for i in range(len(turns) - 1)
        if turns[i].role is Role.SEEKER and turns[i + 1].role is Role.SUPPORTER
    ]
    unsafe = safety_rule([conversation.situation, *(t.text for t in turns)])
    candidates: list[Candidate] = []
    decisions: list[Decision] = []
    for index in couplets:
        if unsafe is not None:
            verdict = unsafe
        elif index < min_context_turns:
            verdict = Screened(False, "context_too_short", f"{index} turns")
        else:
            verdict = screen_seeker_turn(turns[index - 1].text)
        if verdict.eligible:
            candidates.append(Candidate(conversation, index, verdict))
        else:
            decisions.append(Decision(conversation.id, index, False, verdict.rule, verdict.detail))
    return candidates, decisions


def proportional_quotas(shares: dict[str, int], total: int, caps: dict[str, int]) -> dict[str, int]:
    """Split ``total`` over groups in proportion to ``shares`` by largest remainder, within caps.

    A group that cannot fill its share (its cap is lower) gives the rest to the others, again in
    proportion. Ties in remainders go to the larger group, then to the name.
    """
    quotas = dict.fromkeys(shares, 0)
    open_groups = {g for g in shares if caps.get(g, 0) > 0}
    remaining = min(total, sum(caps.get(g, 0) for g in shares))
    while remaining > 0 and open_groups:
        weight = sum(shares[g] for g in open_groups)
        exact = {g: remaining * shares[g] / weight for g in open_groups}
        grant = {g: int(exact[g]) for g in open_groups}
        leftover = remaining - sum(grant.values())
        order = sorted(open_groups, key=lambda g: (-(exact[g] - grant[g]), -shares[g], g))
        for g in order[:leftover]:
            grant[g] += 1
        for g in open_groups:
            room = caps[g] - quotas[g]
            quotas[g] += min(grant[g], room)
        remaining = min(total, sum(caps.get(g, 0) for g in shares)) - sum(quotas.values())
        open_groups = {g for g in open_groups if quotas[g] < caps[g]}
    return quotas


def select_regular_items(
    conversations: Sequence[Conversation],
    *,
    n_items: int,
    seed: int,
    max_per_dialogue: int = 2,
    min_context_turns: int = 3,
    second_pass: SecondPass | None = None,
) -> Selection:
    """Screen every couplet, let ``second_pass`` (if any) veto eligible ones, keep the best
    ``max_per_dialogue`` per dialogue, then sample ``n_items`` stratified by problem type in
    proportion to the corpus's conversations.

    Deterministic for a seed and a set of conversations, whatever their order.
    """
    decisions: list[Decision] = []
    by_problem: dict[str, list[list[Candidate]]] = defaultdict(list)
    conversations_by_problem: Counter[str] = Counter()
    eligible: dict[str, list[Candidate]] = {}
    ordered = sorted(conversations, key=lambda c: c.id)
    for conversation in ordered:
        conversations_by_problem[conversation.problem_type] += 1
        candidates, dropped = _screen_conversation(conversation, min_context_turns)
        decisions.extend(dropped)
        eligible[conversation.id] = candidates
    if second_pass is not None:
        verdicts = second_pass([c for group in eligible.values() for c in group])
        for conversation_id, group in eligible.items():
            kept = []
            for cand in group:
                keep, reason = verdicts[cand.key]
                if keep:
                    kept.append(cand)
                else:
                    decisions.append(
                        Decision(conversation_id, cand.turn_index, False, "llm_screen", reason)
                    )
            eligible[conversation_id] = kept
    for conversation in ordered:
        candidates = eligible[conversation.id]
        ranked = sorted(candidates, key=lambda c: (-c.screened.score, c.turn_index))
        for extra in ranked[max_per_dialogue:]:
            decisions.append(
                Decision(conversation.id, extra.turn_index, False, "over_dialogue_cap")
            )
        if ranked[:max_per_dialogue]:
            by_problem[conversation.problem_type].append(ranked[:max_per_dialogue])

    caps = {p: sum(len(c) for c in groups) for p, groups in by_problem.items()}
    quotas = proportional_quotas(dict(conversations_by_problem), n_items, caps)

    items: list[Item] = []
    for problem in sorted(by_problem):
        groups = sorted(
            by_problem[problem],
            key=lambda g: sha256_hex(f"{seed}\x1f{g[0].conversation.id}"),
        )
        # round robin: each dialogue's best couplet first, then second-best ones
        queue = [g[rank] for rank in range(max_per_dialogue) for g in groups if rank < len(g)]
        chosen, passed = queue[: quotas[problem]], queue[quotas[problem] :]
        for cand in chosen:
            item = make_item(
                cand.conversation, cand.turn_index, Subset.REGULAR, cand.screened.detail
            )
            items.append(item)
            decisions.append(
                Decision(
                    cand.conversation.id,
                    cand.turn_index,
                    True,
                    "selected",
                    f"{cand.screened.rule}: {cand.screened.detail}",
                    item.id,
                )
            )
        for cand in passed:
            decisions.append(
                Decision(
                    cand.conversation.id,
                    cand.turn_index,
                    False,
                    "not_sampled",
                    f"{cand.screened.rule}: {cand.screened.detail}",
                )
            )
    items.sort(key=lambda i: i.id)
    decisions.sort(key=lambda d: (d.conversation_id, d.turn_index))
    return Selection(items, decisions, quotas, dict(conversations_by_problem))


def select_study_items(
    conversations: Sequence[Conversation],
    spec: ItemsSpec,
    seed: int,
    second_pass: SecondPass | None = None,
) -> Selection:
    """The regular items a study's ``items`` settings choose from ``conversations``."""
    return select_regular_items(
        conversations,
        n_items=spec.regular,
        seed=seed,
        max_per_dialogue=spec.max_per_dialogue,
        min_context_turns=spec.min_context_turns,
        second_pass=second_pass,
    )
