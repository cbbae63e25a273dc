"""Text people send through heart.people: control characters and bidirectional controls are
refused with the character and where it is, and nothing is stored; tabs and line breaks pass."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from heart.config import PairsSpec, PeopleSpec
from heart.judging import build_pairs
from heart.people import (
    JUDGE,
    LABEL,
    WRITE,
    TaskRefused,
    claim,
    invite,
    plain_text,
    prolific_rater,
    submit_judgment,
    submit_labels,
    submit_write,
    sync_tasks,
)
from heart.store import (
    CompletionRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    RaterRow,
    Store,
    SystemRow,
    TaskRow,
)

from ..rows import seed_study

SPEC = PeopleSpec(check_every=0, label_completions=1)
REFUSED = {
    "\x00": "U+0000",
    "\x07": "U+0007",
    "\x1b": "U+001B",
    "\x7f": "U+007F",
    "\x85": "U+0085",
    "\x9b": "U+009B",
    "\u200e": "U+200E LEFT-TO-RIGHT MARK",
    "\u200f": "U+200F RIGHT-TO-LEFT MARK",
    "\u061c": "U+061C ARABIC LETTER MARK",
    "\u202a": "U+202A LEFT-TO-RIGHT EMBEDDING",
    "\u202e": "U+202E RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "U+2066 LEFT-TO-RIGHT ISOLATE",
    "\u2069": "U+2069 POP DIRECTIONAL ISOLATE",
}


@pytest.mark.parametrize(("char", "code"), REFUSED.items())
def test_plain_text_names_the_control_character_and_where_it_is(char: str, code: str) -> None:
    with pytest.raises(TaskRefused) as refused:
        plain_text(f"I hear{char} you", "reason")
    assert str(refused.value) == (
        f"the reason holds an invisible control character ({code}) at character 7; delete it "
        "(pasted text can bring one in) and send it again"
    )


def test_plain_text_names_a_lone_surrogate_as_not_unicode() -> None:
    with pytest.raises(TaskRefused) as refused:
        plain_text("I hear\ud800 you", "reason")
    assert str(refused.value) == (
        "the reason holds a lone surrogate (U+D800) at character 7, which is not Unicode text; "
        "delete it (pasted text can bring one in) and send it again"
    )


@pytest.mark.parametrize(
    "text", ["Tabs\tand\nline feeds\r\nand returns\r.", "No control: é ✓ مرحبا"]
)
def test_plain_text_lets_tabs_line_breaks_and_any_letters_through(text: str) -> None:
    assert plain_text(text, "reply") == text


def _seat(store: Store, kind: str) -> tuple[str, str]:
    """A rater and a seat of ``kind`` they hold, in a study of one item and three systems."""
    seed_study(store, ["m1", "m2", "m3"], items=1, completions=True)
    with store.session() as s:
        s.merge(SystemRow(name="human", kind="human", family="human", spec={}))
    build_pairs(store, PairsSpec(), seed=0)
    sync_tasks(store, SPEC, seed=0)
    ((rater, _),) = invite(store, 1)
    task = claim(store, rater, kind, now=0, seconds=3600)
    assert task is not None
    return rater, task


def _stored(store: Store) -> tuple[int, ...]:
    """Human completions, judges, judgments, labels and submitted seats in the store."""
    with store.session() as s:
        return tuple(
            s.scalar(query) or 0
            for query in (
                select(func.count()).where(CompletionRow.system == "human"),
                select(func.count()).select_from(JudgeRow),
                select(func.count()).select_from(JudgmentRow),
                select(func.count()).select_from(LabelRow),
                select(func.count()).select_from(TaskRow).where(TaskRow.done),
            )
        )


ANSWERS = {
    "reply": (
        WRITE,
        lambda s, r, t, x: submit_write(s, SPEC, r, t, f"I hear {x}you, truly.", now=1),
    ),
    "reason": (JUDGE, lambda s, r, t, x: submit_judgment(s, r, t, "A+", f"Kind{x}er.", now=1)),
    "checklist": (
        JUDGE,
        lambda s, r, t, x: submit_judgment(
            s, r, t, "A+", "Kinder.", now=1, checklist=[f"length{x}"]
        ),
    ),
    "strategy": (LABEL, lambda s, r, t, x: submit_labels(s, r, t, [f"Affirmation{x}"], now=1)),
}


@pytest.mark.parametrize("what", ANSWERS)
@pytest.mark.parametrize("char", ["\x00", "\u202e"])
def test_every_answer_with_a_control_character_is_refused_and_stores_nothing(
    store: Store, what: str, char: str
) -> None:
    kind, send = ANSWERS[what]
    rater, task = _seat(store, kind)
    with pytest.raises(TaskRefused, match=rf"^the {what} holds an invisible control character"):
        send(store, rater, task, char)
    assert _stored(store) == (0, 0, 0, 0, 0)
    send(store, rater, task, "")  # the same answer without it is stored
    assert sum(_stored(store)) > 0


def test_entry_ids_and_invite_notes_with_control_characters_are_refused(store: Store) -> None:
    for participant, study, session in (("P\u202e1", "S", "X"), ("P1", "S\x00", "X"),
                                        ("P1", "S", "X\x1b[2J")):  # fmt: skip
        with pytest.raises(TaskRefused, match="invisible control character"):
            prolific_rater(store, participant, study, session)
    with pytest.raises(TaskRefused, match=r"^the note holds .* \(U\+202E"):
        invite(store, 2, note="pilot \u202ebatch")
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(RaterRow)) == 0
