"""Regular item selection: the screen's rules, the per-dialogue cap, stratification, stability."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from heart.items import proportional_quotas, safety_rule, screen_seeker_turn, select_regular_items
from heart.types import Conversation, Role, Turn, canonical_json, stable_id

DISTRESSED = "I lost my job last month and I feel like a complete failure, I don't know what to do."
WORRIED = "My girlfriend and I keep fighting every night and I'm so stressed I can't sleep."
SAD = "Honestly I feel so alone since my friends stopped inviting me anywhere, it really hurts."
CALM = "We went to the park on Sunday and had some lunch there with my cousin."


def turn(role: Role, text: str) -> Turn:
    strategies: tuple[str | None, ...] = ("Question",) if role is Role.SUPPORTER else ()
    return Turn(role=role, text=text, parts=(text,), strategies=strategies)


def conversation(problem: str, seeker_texts: list[str], tag: str = "") -> Conversation:
    turns = [turn(Role.SUPPORTER, f"Hi, how are you doing today? {tag}")]
    for i, text in enumerate(seeker_texts):
        turns.append(turn(Role.SEEKER, text))
        turns.append(turn(Role.SUPPORTER, f"That sounds really difficult ({i})."))
    cid = stable_id("c", canonical_json([problem, tag, [t.text for t in turns]]))
    return Conversation(id=cid, problem_type=problem, emotion_type="sadness", turns=tuple(turns))


def test_screen_names_the_rule() -> None:
    assert screen_seeker_turn(CALM).rule == "no_response_potential"
    assert screen_seeker_turn("I feel sad.").rule == "weak_emotional_signal"
    assert screen_seeker_turn("Thank you so much, I feel a bit less sad now, bye!").rule == (
        "closing_turn"
    )
    clinical = "My psychiatrist changed my medication and I am so anxious about the dose now."
    assert screen_seeker_turn(clinical).rule == "needs_clinical_expertise"
    verdict = screen_seeker_turn(DISTRESSED)
    assert verdict.eligible and verdict.rule == "potential:request"
    assert "don't know what to do" in verdict.detail and "failure" in verdict.detail


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            "I have been saving up pills and I will take all the pills on Friday.",
            "unsafe:self_harm_plan",
        ),
        ("I have decided to end my life this weekend.", "unsafe:self_harm_plan"),
        ("Call me at 555-123-4567 tonight please.", "unsafe:identifying_info"),
        ("My number is (555) 201-3344.", "unsafe:identifying_info"),
        ("Email me at sam.jones@example.com", "unsafe:identifying_info"),
        ("I live at 42 Elm Street, Springfield.", "unsafe:identifying_info"),
        ("All immigrants are vermin and should go back.", "unsafe:hate_speech"),
    ],
)
def test_safety_filter_catches(text: str, rule: str) -> None:
    verdict = safety_rule(["An ordinary turn.", text])
    assert verdict is not None and verdict.rule == rule


def test_safety_filter_passes_ordinary_text() -> None:
    assert safety_rule([DISTRESSED, WORRIED, SAD, "I paid $2000 for rent in 2019."]) is None


def test_unsafe_conversation_yields_no_items_and_records_why() -> None:
    unsafe = conversation("ongoing depression", [SAD, DISTRESSED, "Call me on 555-123-4567."])
    safe = conversation("ongoing depression", [SAD, DISTRESSED, WORRIED], tag="safe")
    selection = select_regular_items([unsafe, safe], n_items=10, seed=1)
    assert {i.conversation_id for i in selection.items} == {safe.id}
    rules = {d.rule for d in selection.decisions if d.conversation_id == unsafe.id}
    assert rules == {"unsafe:identifying_info"}


def test_at_most_k_per_dialogue_and_every_couplet_recorded() -> None:
    conv = conversation("job crisis", [CALM, DISTRESSED, WORRIED, SAD, CALM])
    selection = select_regular_items([conv], n_items=10, seed=3, max_per_dialogue=2)
    assert len(selection.items) == 2
    decided = sorted(d.turn_index for d in selection.decisions)
    assert decided == [2, 4, 6, 8, 10]  # every seeker->supporter couplet, once
    rules = Counter(d.rule for d in selection.decisions)
    assert rules == Counter(
        {"context_too_short": 1, "selected": 2, "over_dialogue_cap": 1, "no_response_potential": 1}
    )
    for item in selection.items:
        assert item.context[-1].role is Role.SEEKER
        assert item.reference == conv.turns[item.turn_index].text
        assert len(item.context) == item.turn_index


def _corpus(seed: int) -> list[Conversation]:
    rng = random.Random(seed)
    sizes = {
        "ongoing depression": 35,
        "job crisis": 28,
        "breakup with partner": 24,
        "academic pressure": 9,
        "Sleep Problems": 3,
        "School Bullying": 1,
    }
    out = []
    for problem, n in sizes.items():
        for k in range(n):
            texts = rng.sample([DISTRESSED, WORRIED, SAD, CALM], 4)
            out.append(conversation(problem, texts, tag=f"{problem}-{k}"))
    return out


def test_stratified_within_two_of_proportional_share() -> None:
    conversations = _corpus(0)
    selection = select_regular_items(conversations, n_items=40, seed=7)
    assert len(selection.items) == 40
    by_problem = Counter(i.problem_type for i in selection.items)
    shares = Counter(c.problem_type for c in conversations)
    for problem, n in shares.items():
        assert abs(by_problem[problem] - 40 * n / len(conversations)) <= 2, problem


def test_deterministic_and_order_independent() -> None:
    conversations = _corpus(1)
    first = select_regular_items(conversations, n_items=30, seed=5)
    shuffled = list(conversations)
    random.Random(9).shuffle(shuffled)
    second = select_regular_items(shuffled, n_items=30, seed=5)
    assert [(i.id, i.content_hash) for i in first.items] == [
        (i.id, i.content_hash) for i in second.items
    ]
    other_seed = select_regular_items(conversations, n_items=30, seed=6)
    assert {i.id for i in other_seed.items} != {i.id for i in first.items}


def test_proportional_quotas_redistribute_capped_groups() -> None:
    quotas = proportional_quotas({"a": 50, "b": 30, "c": 20}, 10, {"a": 100, "b": 100, "c": 1})
    assert quotas == {"a": 6, "b": 3, "c": 1} or quotas == {"a": 5, "b": 4, "c": 1}
    assert sum(quotas.values()) == 10
    assert proportional_quotas({"a": 1, "b": 1}, 10, {"a": 2, "b": 3}) == {"a": 2, "b": 3}
    assert proportional_quotas({"a": 3, "b": 1}, 4, {"a": 10, "b": 10}) == {"a": 3, "b": 1}
