"""The verdict schema: valid answers parse, anything else is refused with the reason."""

from __future__ import annotations

import json

import pytest

from heart.judging import VERDICT_SCHEMA, InvalidVerdict, parse_verdict
from heart.types import Axis

GOOD = {
    "winner": "B",
    "strength": 4,
    "axes": {a.value: "B2" for a in Axis} | {"T": "none"},
    "rationale": "B names the feeling and asks one concrete question.",
}


def test_valid_verdict_parses() -> None:
    verdict = parse_verdict(json.dumps(GOOD))
    assert verdict.winner == "B" and verdict.strength == 4
    assert verdict.axes[Axis.T].winner == "none"
    assert verdict.axes[Axis.E].strength == 2


def test_raw_control_characters_in_strings_are_tolerated() -> None:
    text = json.dumps(GOOD).replace("concrete question.", "concrete\tquestion.\n")
    text = text.replace("\\t", "\t").replace("\\n", "\n")
    assert "\t" in text
    assert parse_verdict(text).rationale.endswith("question.\n")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("A is better because it is warmer.", "not JSON"),
        ('{"winner": "A", "strength": 3', "not JSON"),
        (json.dumps(GOOD | {"winner": "C"}), "winner"),
        (json.dumps(GOOD | {"strength": 9}), "strength"),
        (json.dumps(GOOD | {"strength": 0}), "strength"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "axes"}), "axes"),
        (json.dumps(GOOD | {"axes": {"H": "A1"}}), "missing"),
        (json.dumps(GOOD | {"axes": GOOD["axes"] | {"E": "B6"}}), "expected one of none, A1"),
        (json.dumps(GOOD | {"axes": GOOD["axes"] | {"E": "none3"}}), "expected one of"),
        (
            json.dumps(GOOD | {"axes": GOOD["axes"] | {"E": {"winner": "A", "strength": 1}}}),
            "expected one of",
        ),
        (json.dumps(GOOD | {"axes": GOOD["axes"] | {"X": "A1"}}), "axes.X"),
        (json.dumps(GOOD | {"tie": True}), "tie"),
    ],
)
def test_invalid_answers_are_refused(answer: str, reason: str) -> None:
    with pytest.raises(InvalidVerdict, match=reason):
        parse_verdict(answer)


def test_schema_uses_enums_for_numbers() -> None:
    props = VERDICT_SCHEMA["properties"]
    assert props["strength"]["enum"] == [1, 2, 3, 4, 5]
    assert props["winner"]["enum"] == ["A", "B"]
    assert "minimum" not in json.dumps(VERDICT_SCHEMA)
    codes = props["axes"]["properties"]["E"]["enum"]
    assert codes == ["none", "A1", "A2", "A3", "A4", "A5", "B1", "B2", "B3", "B4", "B5"]
