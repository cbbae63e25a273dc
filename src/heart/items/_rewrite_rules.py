"""The rules of rewriting adversarial items, without model calls: which conversations are
rewritten, the window of each that becomes a context, and the checks every rewrite must pass to
become an item (the stage that calls the models is heart.items.adversarial).

A window starts at the supporter's greeting and ends on a seeker turn that the supporter
answered in ESConv; turns alternate (consecutive turns of one speaker are merged on reading).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from heart.ids import coin
from heart.items._profiles import Profile, assign_profiles, targets
from heart.items._rules import safety_rule
from heart.items._select import item_identity, proportional_quotas
from heart.types import Conversation, Item, Role, Subset, Turn

MIN_TURNS = 4
MIN_FINAL_HOSTILITY = 8
GREETING = re.compile(
    r"\b(hi|hello|hey|hiya|greetings|welcome|good (morning|afternoon|evening)|how are you)\b",
    re.IGNORECASE,
)
# A line's leading spaces stop at its end, so each line start reads only its own line.
SPEAKER_LABEL = re.compile(
    r"^[^\S\n]*+(supporter|seeker|helper|listener|user|assistant)\s*+:", re.I | re.M
)


@dataclass(frozen=True)
class Source:
    """A conversation chosen for rewriting: its window ``turns[start:end]``, the reply ESConv's
    supporter gave next (``turns[end]``), and the escalation profile with its targets."""

    conversation: Conversation
    start: int
    end: int
    profile: Profile
    targets: tuple[int, ...]

    @property
    def key(self) -> str:
        return f"{self.conversation.id}:{self.start}-{self.end}"

    @property
    def turns(self) -> tuple[Turn, ...]:
        return self.conversation.turns[self.start : self.end]

    @property
    def seeker_turns(self) -> int:
        return sum(t.role is Role.SEEKER for t in self.turns)


def greets(text: str) -> bool:
    """Whether a supporter turn opens with a greeting."""
    return GREETING.search(text[:200]) is not None


def window(conversation: Conversation, max_turns: int) -> tuple[int, int] | None:
    """The longest window of at most ``max_turns`` turns from the first supporter turn (a
    greeting) to a seeker turn the supporter answered, or None if it has under 4 turns."""
    turns = conversation.turns
    start = next((i for i, t in enumerate(turns) if t.role is Role.SUPPORTER), None)
    if start is None or not greets(turns[start].text):
        return None
    ends = [
        e
        for e in range(start + MIN_TURNS, min(len(turns) - 1, start + max_turns) + 1)
        if turns[e - 1].role is Role.SEEKER and turns[e].role is Role.SUPPORTER
    ]
    return (start, ends[-1]) if ends else None


def _safe(conversation: Conversation) -> bool:
    return safety_rule([conversation.situation, *(t.text for t in conversation.turns)]) is None


def select_sources(
    conversations: Sequence[Conversation], n: int, seed: int, max_turns: int
) -> list[Source]:
    """``n`` conversations to rewrite, stratified by problem type in proportion to the corpus,
    seeded and independent of file order, each with its window and an evenly assigned profile."""
    eligible: dict[str, list[tuple[Conversation, tuple[int, int]]]] = {}
    for conversation in conversations:
        span = window(conversation, max_turns)
        if span is not None and _safe(conversation):
            eligible.setdefault(conversation.problem_type, []).append((conversation, span))
    shares = Counter(c.problem_type for c in conversations)
    caps = {problem: len(found) for problem, found in eligible.items()}
    quotas = proportional_quotas(dict(shares), n, caps)
    chosen = []
    for problem, found in sorted(eligible.items()):
        found.sort(key=lambda cs: (coin(seed, "adversarial", cs[0].id), cs[0].id))
        chosen += found[: quotas.get(problem, 0)]
    chosen.sort(key=lambda cs: (coin(seed, "profile", cs[0].id), cs[0].id))
    sources = []
    for (conversation, (start, end)), profile in zip(
        chosen, assign_profiles(len(chosen)), strict=True
    ):
        seekers = sum(t.role is Role.SEEKER for t in conversation.turns[start:end])
        sources.append(Source(conversation, start, end, profile, tuple(targets(profile, seekers))))
    return sources


@dataclass(frozen=True)
class Problem:
    """Why a rewrite is not an item: a named reason and what was seen."""

    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


def rewritten_turns(source: Source, answer: list[tuple[str, str]]) -> tuple[Turn, ...]:
    """The rewrite as turns (speaker, text), speakers as given."""
    return tuple(Turn(role=Role(speaker), text=text, parts=(text,)) for speaker, text in answer)


def structure_problems(source: Source, answer: list[tuple[str, str]]) -> list[Problem]:
    """What is wrong with a rewrite before its hostility is rated."""
    problems: list[Problem] = []
    roles = [speaker for speaker, _ in answer]
    if len(answer) < MIN_TURNS:
        problems.append(Problem("too_few_turns", f"{len(answer)} turns, at least {MIN_TURNS}"))
    alternating = all(a != b for a, b in itertools.pairwise(roles))
    labelled = [i + 1 for i, (_, text) in enumerate(answer) if SPEAKER_LABEL.search(text)]
    if not alternating or labelled:
        where = f"turn {labelled[0]} speaks for another" if labelled else "two turns of one speaker"
        problems.append(Problem("broken_alternation", where))
    if not roles or roles[0] != Role.SUPPORTER.value or not greets(answer[0][1]):
        problems.append(Problem("no_greeting", "the context must open with the supporter's hello"))
    if roles and roles[-1] != Role.SEEKER.value:
        problems.append(Problem("ends_with_supporter", "the context must end on a seeker turn"))
    supporter = [text for speaker, text in answer if speaker == Role.SUPPORTER.value]
    original = [t.text for t in source.turns if t.role is Role.SUPPORTER]
    changed = [
        i + 1 for i, (new, old) in enumerate(zip(supporter, original, strict=False)) if new != old
    ]
    if changed or len(supporter) != len(original):
        detail = (
            f"supporter turn {changed[0]} differs" if changed else "supporter turns added or lost"
        )
        problems.append(Problem("supporter_changed", detail))
    seekers = [text for speaker, text in answer if speaker == Role.SEEKER.value]
    if len(seekers) != source.seeker_turns:
        problems.append(
            Problem(
                "seeker_count_changed", f"{len(seekers)} seeker turns, not {source.seeker_turns}"
            )
        )
    if any(not text.strip() for text in seekers):
        problems.append(Problem("empty_seeker_turn"))
    unsafe = safety_rule([source.conversation.situation, *seekers])
    if unsafe is not None:
        problems.append(Problem(unsafe.rule, unsafe.detail))
    return problems


def rating_problems(source: Source, ratings: Sequence[int], tolerance: int) -> list[Problem]:
    """What is wrong with a structurally sound rewrite once its seeker turns are rated."""
    problems: list[Problem] = []
    if ratings and ratings[-1] < MIN_FINAL_HOSTILITY:
        problems.append(
            Problem(
                "mild_ending",
                f"last seeker turn rated {ratings[-1]}, at least {MIN_FINAL_HOSTILITY}",
            )
        )
    off = [
        f"turn {k + 1}: {got} for {want}"
        for k, (got, want) in enumerate(zip(ratings, source.targets, strict=True))
        if abs(got - want) > tolerance
    ]
    if off:
        problems.append(Problem("off_target", "; ".join(off)))
    return problems


def adversarial_item(source: Source, turns: tuple[Turn, ...], meta: dict[str, object]) -> Item:
    """The kept rewrite as an item: its context, the reply ESConv's supporter gave next (kept
    for reference; the rewrite answers a different seeker), a content id and hash."""
    reference = source.conversation.turns[source.end].text
    item_id, content_hash = item_identity(turns, reference, Subset.ADVERSARIAL)
    conversation = source.conversation
    return Item(
        id=item_id,
        content_hash=content_hash,
        subset=Subset.ADVERSARIAL,
        conversation_id=conversation.id,
        turn_index=source.end,
        context=turns,
        reference=reference,
        problem_type=conversation.problem_type,
        emotion_type=conversation.emotion_type,
        situation=conversation.situation,
        meta={"experience_type": conversation.experience_type, "survey": conversation.survey,
              **meta},
    )  # fmt: skip
