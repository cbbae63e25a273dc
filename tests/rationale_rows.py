"""Store rows for the rationale tests: judgments with rationales by LLM judges and people, and one
crafted study whose co-mention figures are worked out by hand in the tests.

The crafted study: four pairs, m1's reply (a) against m2's (b), each in its own conversation;
LLM judges j1 and j2, human raters h1, h2 and h3.

- pair 0 (c0): people a, a, b; judges a, a: agreed on a. h3 voted b, so their rationale (a next
  step) is left out. Humans: names the feeling, asks a question. Judges: names the feeling, asks
  a question, generic (j2 saw b first, as A, and calls A generic: b).
- pair 1 (c1): everyone b: agreed on b. Humans: sounds natural. Judges: a next step.
- pair 2 (c2): people a, judges b: no agreement, left out of co-mention.
- pair 3 (c3): people a, j1 a (j2 did not judge it): agreed on a. Both: asks a question.

So over the 3 agreed pairs and 18 themes, humans and judges both mention or both omit 51 of 54
pair-themes: all but generic (pair 0), sounds natural and a next step (pair 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from heart.store import (
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    RaterRow,
    Store,
    SystemRow,
    add_if_missing,
)

REPLY_A = "That sounds so painful. What do you need most right now?"
REPLY_B = "I'm sorry to hear that. Everything happens for a reason."


@dataclass(frozen=True)
class Said:
    """One verdict with its rationale: ``winner`` in the pair's terms, ``order`` as shown."""

    pair: int
    judge: str
    winner: str
    rationale: str
    order: str = "ab"
    status: str = "ok"


def add_pair(store: Store, pair: int, a_text: str = REPLY_A, b_text: str = REPLY_B) -> None:
    """Item i{pair} in conversation c{pair}, and the pair p{pair} of m1's reply (a) and m2's (b)."""
    with store.session() as s:
        for name in ("m1", "m2"):
            add_if_missing(s, SystemRow, name=name, kind="model", family=name, spec={})
        s.merge(
            ConversationRow(
                id=f"c{pair}", problem_type="p", emotion_type="e", experience_type="",
                situation="", survey={}, turns=[], origin={},
            )
        )  # fmt: skip
        s.flush()
        s.merge(
            ItemRow(
                id=f"i{pair}", content_hash=f"h{pair}", subset="regular",
                conversation_id=f"c{pair}", turn_index=3, context=[], reference="r",
                problem_type="p", emotion_type="e", situation="", meta={},
            )
        )  # fmt: skip
        s.flush()
        for system, text in (("m1", a_text), ("m2", b_text)):
            s.merge(
                CompletionRow(
                    id=f"cp-{pair}-{system}", item_id=f"i{pair}", system=system, contributor="",
                    status="ok", text=text, created_at="x",
                )
            )  # fmt: skip
        s.flush()
        s.merge(
            PairRow(id=f"p{pair}", item_id=f"i{pair}", a_id=f"cp-{pair}-m1",
                    b_id=f"cp-{pair}-m2", design="all")
        )  # fmt: skip


def add_said(store: Store, said: Said) -> str:
    """The judgment (its judge an LLM when named j…, else a human rater); returns its id."""
    human = not said.judge.startswith("j")
    jid = f"jd-{said.pair}-{said.judge}-{said.order}"
    with store.session() as s:
        add_if_missing(s, JudgeRow, name=said.judge, source="human" if human else "llm",
                       family="human" if human else said.judge, spec={})  # fmt: skip
        if human:
            add_if_missing(s, RaterRow, id=said.judge, meta={}, created_at="x")
        s.flush()
        s.add(
            JudgmentRow(
                id=jid, pair_id=f"p{said.pair}", judge=said.judge, order=said.order,
                status=said.status, winner=said.winner if said.status == "ok" else None,
                strength=1, axes={}, rationale=said.rationale, created_at="x",
            )
        )  # fmt: skip
    return jid


CRAFTED = [
    Said(0, "h1", "a", "A names the feeling."),
    Said(0, "h2", "a", "Reply A asks a good question."),
    Said(0, "h3", "b", "B offers a next step."),
    Said(0, "j1", "a", "A names the hurt and asks what she needs."),
    Said(0, "j2", "a", "A is generic.", order="ba"),  # it saw b first
    Said(1, "h1", "b", "B feels more natural."),
    Said(1, "h2", "b", "I prefer B."),
    Said(1, "h3", "b", "The second one is better."),
    Said(1, "j1", "b", "B offers a doable next step."),
    Said(1, "j2", "b", "B gives practical advice."),
    Said(2, "h1", "a", "A sounds natural."),
    Said(2, "h2", "a", "A names the feeling."),
    Said(2, "j1", "b", "B asks a question."),
    Said(3, "h1", "a", "A asks a question."),
    Said(3, "h2", "a", ""),
    Said(3, "j1", "a", "A asks her what happened."),
]


def crafted_study(store: Store) -> dict[tuple[int, str], str]:
    """The crafted study; returns the judgment id of each (pair, judge)."""
    for pair in range(4):
        add_pair(store, pair)
    return {(said.pair, said.judge): add_said(store, said) for said in CRAFTED}
