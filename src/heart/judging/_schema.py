"""The judge's strict output: a JSON schema (enums only, as grammars honour) and its validator.

Each axis is answered with one short code, ``A1``…``A5``, ``B1``…``B5`` or ``none``: the better
reply and its edge in a single token or two, which keeps constrained decoding fast.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from heart.types import Axis

STRENGTHS = [1, 2, 3, 4, 5]
AXIS_CODES = ["none", *(f"{side}{n}" for side in "AB" for n in STRENGTHS)]
RATIONALE_CHARS = 160  # short enough that a grammar closes the string within the token cap


VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "winner": {"type": "string", "enum": ["A", "B"]},
        "strength": {"type": "integer", "enum": STRENGTHS},
        "axes": {
            "type": "object",
            "properties": {axis.value: {"type": "string", "enum": AXIS_CODES} for axis in Axis},
            "required": [axis.value for axis in Axis],
            "additionalProperties": False,
        },
        "rationale": {"type": "string", "maxLength": RATIONALE_CHARS},
    },
    "required": ["winner", "strength", "axes", "rationale"],
    "additionalProperties": False,
}


class AxisVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    winner: Literal["A", "B", "none"]
    strength: int = Field(ge=0, le=5)

    @model_validator(mode="after")
    def _none_means_zero(self) -> AxisVerdict:
        if (self.winner == "none") != (self.strength == 0):
            raise ValueError("strength must be 0 exactly when winner is 'none'")
        return self


def _axis_from_code(code: Any) -> Any:
    """``"A3"`` → winner A, strength 3; ``"none"`` → no winner, strength 0."""
    if not isinstance(code, str) or code not in AXIS_CODES:
        raise ValueError(f"expected one of {', '.join(AXIS_CODES)}, got {code!r}")
    if code == "none":
        return {"winner": "none", "strength": 0}
    return {"winner": code[0], "strength": int(code[1])}


class Verdict(BaseModel):
    """A judge's validated answer, in the terms of the order it was shown (A = shown first)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    winner: Literal["A", "B"]
    strength: int = Field(ge=1, le=5)
    axes: dict[Axis, AxisVerdict]
    rationale: str = Field(max_length=2000)

    @field_validator("axes", mode="before")
    @classmethod
    def _codes(cls, axes: Any) -> Any:
        if not isinstance(axes, dict):
            return axes
        return {key: _axis_from_code(code) for key, code in axes.items()}

    @model_validator(mode="after")
    def _all_axes(self) -> Verdict:
        missing = [a.value for a in Axis if a not in self.axes]
        if missing:
            raise ValueError(f"axes {missing} are missing")
        return self


class InvalidVerdict(ValueError):
    """An answer that is not a valid verdict; the message says what is wrong."""


def parse_verdict(text: str) -> Verdict:
    """Parse and validate a judge's raw answer (raw control characters in strings tolerated)."""
    try:
        data = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise InvalidVerdict(f"not JSON: {exc.msg} at character {exc.pos}") from None
    try:
        return Verdict.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidVerdict(problems) from None
