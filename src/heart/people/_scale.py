"""The five-option scale a person judges a pair on, and what check seats show: the reply a
gold pair sets against the original, and an attention check's plain reply and instruction."""

from __future__ import annotations

from heart.types import Shown

CHOICES = {
    "A++": (Shown.FIRST, 2, "A is much better"),
    "A+": (Shown.FIRST, 1, "A is slightly better"),
    "=": (Shown.TIE, 1, "About the same"),
    "B+": (Shown.SECOND, 1, "B is slightly better"),
    "B++": (Shown.SECOND, 2, "B is much better"),
}
"""The five-option scale: key → (side, strength, label). Much better counts twice."""


GOLD_REPLY = "Okay. Anyway, that's not really my problem, so let's talk about something else."
ATTENTION_REPLY = "Thank you for telling me. Take your time; I'm here and I'm listening."
"""The second reply of an attention check, beside the original one: the check is the
instruction in the question (``Task.instruction``), not anything a reply says."""


def attention_instruction(choice: str) -> str:
    """The instructed response of an attention check: which of the five options to choose."""
    return (
        f"To show you are reading, choose “{CHOICES[choice][2]}” for this comparison, "
        "whatever you think of the two replies."
    )
