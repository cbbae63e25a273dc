"""Domain objects of the benchmark: conversations, items, systems, completions, pairs, judgments."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    """Who speaks a turn: the person seeking help or the person supporting them."""

    SEEKER = "seeker"
    SUPPORTER = "supporter"


class Axis(StrEnum):
    """The five HEART axes."""

    H = "H"  # human alignment
    E = "E"  # empathic responsiveness
    A = "A"  # attunement
    R = "R"  # resonance
    T = "T"  # task-following


class SystemKind(StrEnum):
    """What produces a system's completions."""

    MODEL = "model"
    HUMAN = "human"
    DATASET = "dataset"  # the ESConv original supporter reply
    CONTROL = "control"  # a fixed reply, e.g. generic warmth


class Subset(StrEnum):
    REGULAR = "regular"
    ADVERSARIAL = "adversarial"


class Status(StrEnum):
    """Whether a completion or judgment holds a usable result."""

    OK = "ok"
    FAILED = "failed"  # stored with its reason, never counted, tried again on the next run


class Order(StrEnum):
    """Which of a pair's two replies a judge saw first: ``ab`` the pair's a, ``ba`` its b."""

    AB = "ab"
    BA = "ba"


class Shown(StrEnum):
    """A verdict in the terms the judge saw: the first reply (A), the second (B), or neither."""

    FIRST = "A"
    SECOND = "B"
    TIE = "tie"  # a person's "about the same"
    NONE = "none"  # an LLM judge's "no clear edge" on an axis


class Side(StrEnum):
    """A verdict in the pair's own terms, whatever the order it was shown in."""

    A = "a"
    B = "b"
    TIE = "tie"
    NONE = "none"


class JudgeSource(StrEnum):
    """Who gives a judge's verdicts."""

    LLM = "llm"
    HUMAN = "human"


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Turn(Frozen):
    """One speaker turn after merging consecutive utterances by the same speaker.

    ``parts`` keeps the original utterances (their boundaries), ``strategies`` the supporter
    strategy of each part (``None`` for seeker parts), ``feedback`` the seeker's ratings where the
    layout has them.
    """

    role: Role
    text: str
    parts: tuple[str, ...]
    strategies: tuple[str | None, ...] = ()
    feedback: tuple[int | None, ...] = ()


class Conversation(Frozen):
    """A normalised ESConv dialogue. ``id`` is derived from its content, so any layout agrees."""

    id: str
    problem_type: str
    emotion_type: str
    experience_type: str = ""
    situation: str = ""
    survey: dict[str, dict[str, int]] = Field(default_factory=dict)
    turns: tuple[Turn, ...]


class Item(Frozen):
    """A context ending in a seeker turn, with the original supporter reply.

    ``turn_index`` is the index of the original reply in the merged conversation; the context is
    ``turns[:turn_index]``.
    """

    id: str
    content_hash: str
    subset: Subset = Subset.REGULAR
    conversation_id: str
    turn_index: int
    context: tuple[Turn, ...]
    reference: str
    problem_type: str
    emotion_type: str
    situation: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the byte form every hash is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable_id(prefix: str, *parts: str, length: int = 16) -> str:
    """A short deterministic id: ``prefix`` plus a sha256 prefix of the parts."""
    return prefix + sha256_hex("\x1f".join(parts))[:length]
