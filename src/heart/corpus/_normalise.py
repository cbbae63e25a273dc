"""Normalising ESConv values: whitespace, strategy labels, ratings, and merging into turns.

Everything here is a pure function of values already taken out of a file; bad values raise
``ValueError`` with a short problem statement, which the readers turn into a ``CorpusError``
that names the file, the line or conversation, and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from heart.plain import plain
from heart.types import Role, Turn, canonical_json, stable_id

STRATEGIES: tuple[str, ...] = (
    "Question",
    "Others",
    "Providing Suggestions",
    "Affirmation and Reassurance",
    "Self-disclosure",
    "Reflection of feelings",
    "Information",
    "Restatement or Paraphrasing",
)
"""The final ESConv strategy set (8 labels), in the order of the upstream README."""

_ALIASES: dict[str, str] = {
    "Questions": "Question",
    "Other": "Others",
    "Restatement": "Restatement or Paraphrasing",
    "Approval and Reassurance": "Affirmation and Reassurance",
    "Direct Guidance": "Providing Suggestions",
}
"""Labels of the older cut of the data (FailedESConv, the old TSVs) and their final names."""


_STRATEGY_BY_KEY: dict[str, str] = {
    **{plain(old): new for old, new in _ALIASES.items()},
    **{plain(label): label for label in STRATEGIES},
}

_INTEGER = re.compile(r"-?[0-9]{1,9}")


def collapse_whitespace(text: str) -> str:
    """``text`` stripped, with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def normalise_strategy(label: str) -> str:
    """The final ESConv name of a strategy label, ignoring case, spacing and the older aliases.

    Raises ``ValueError`` for a label outside the final set and its aliases.
    """
    found = _STRATEGY_BY_KEY.get(plain(label))
    if found is None:
        raise ValueError(f"unknown strategy label {label!r}")
    return found


def accepted_strategies() -> str:
    """The accepted labels, for error messages."""
    aliases = ", ".join(f"{old} (= {new})" for old, new in _ALIASES.items())
    return f"use one of: {', '.join(STRATEGIES)}; older aliases: {aliases}"


def parse_score(value: object) -> int:
    """A survey score or a feedback rating: an integer or a string of digits (as ESConv writes)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    raise ValueError(f"expected an integer (or a string of digits), got {value!r}")


def parse_feedback(value: object) -> int:
    """A seeker's per-turn rating, 1 to 5."""
    score = parse_score(value)
    if not 1 <= score <= 5:
        raise ValueError(f"feedback must be 1 to 5, got {value!r}")
    return score


@dataclass(frozen=True)
class Utterance:
    """One utterance as read from a file, already validated and whitespace-normalised."""

    role: Role
    text: str
    strategy: str | None = None
    feedback: int | None = None


def merge_utterances(utterances: Iterable[Utterance]) -> tuple[Turn, ...]:
    """Consecutive utterances by the same speaker as one turn each; empty utterances are dropped.

    Seeker turns carry no strategies (``()``); a turn carries ``feedback`` only when one of its
    parts has a rating, so layouts with and without ratings agree on the same conversation.
    """
    runs: list[list[Utterance]] = []
    for utterance in utterances:
        if not utterance.text:
            continue
        if runs and runs[-1][0].role is utterance.role:
            runs[-1].append(utterance)
        else:
            runs.append([utterance])
    return tuple(_turn(run) for run in runs)


def _turn(run: list[Utterance]) -> Turn:
    role = run[0].role
    parts = tuple(u.text for u in run)
    feedback = tuple(u.feedback for u in run)
    return Turn(
        role=role,
        text=" ".join(parts),
        parts=parts,
        strategies=tuple(u.strategy for u in run) if role is Role.SUPPORTER else (),
        feedback=feedback if any(f is not None for f in feedback) else (),
    )


def conversation_id(
    problem_type: str, emotion_type: str, situation: str, turns: Iterable[Turn]
) -> str:
    """A content-derived id: the same dialogue in any layout, file or order gets the same id."""
    spoken = [[turn.role.value, part] for turn in turns for part in turn.parts]
    return stable_id("c", canonical_json([problem_type, emotion_type, situation, spoken]))
