"""The screening rules take time linear in the text: no shape of turn can stall a build."""

from __future__ import annotations

import re
import time

import pytest

from heart.items import safety_rule, screen_seeker_turn
from heart.items._rules import (
    CLINICAL,
    CLOSING,
    CONFLICT,
    DISTRESS,
    HATE,
    IDENTIFYING,
    REQUEST,
    SELF_HARM,
)

MB = 1 << 20
PATTERNS = {
    "distress": DISTRESS,
    "conflict": CONFLICT,
    "request": REQUEST,
    "closing": CLOSING,
    "clinical": CLINICAL,
    "self_harm": SELF_HARM,
    "hate": HATE,
    "identifying": IDENTIFYING,
}
# A linear scan of a megabyte takes about 2 s here, and a quadratic one (backtracking) hours: the
# bound sits ten times above the first, so a busy machine passes and backtracking still fails.
LIMIT_S = 20.0


def _repeat(unit: str, size: int = MB) -> str:
    return unit * (size // len(unit))


SHAPES = {
    "one word token": _repeat("a"),
    "digits": _repeat("7"),
    "dots": _repeat("."),
    "at signs": _repeat("@"),
    "spaces": _repeat(" "),
    "hyphens and plus signs": _repeat("-+"),
    "letters and dots": _repeat("a."),
    "digits and hyphens": _repeat("1-"),
    "an email's start then one token": "x@" + _repeat("y"),
    "a local part then at signs": _repeat("a.b@"),
    "an address's number then spaces": "12" + _repeat(" ") + "Elm",
    "a hateful opening repeated": _repeat("the women are "),
    "distressed words": _repeat("I am so sad and lonely, what should I do? "),
}


def _seconds(pattern: re.Pattern[str], text: str) -> float:
    start = time.perf_counter()
    for _ in pattern.finditer(text):
        pass
    return time.perf_counter() - start


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_rule_finishes_a_megabyte_turn_in_seconds(shape: str) -> None:
    text = SHAPES[shape]
    slow = {name: t for name, p in PATTERNS.items() if (t := _seconds(p, text)) > LIMIT_S}
    assert not slow, f"{shape}: {slow}"


def test_the_screen_decides_a_megabyte_distressed_turn_in_seconds() -> None:
    text = SHAPES["distressed words"]
    start = time.perf_counter()
    verdict = screen_seeker_turn(text)
    assert safety_rule([text]) is None
    assert time.perf_counter() - start < LIMIT_S
    assert verdict.rule == "potential:request"


@pytest.mark.parametrize(
    "text",
    [
        "Email me at sam.jones@example.com",
        "mail:sam+notes@example.co.uk today",
        "it is x..y-z@mail-host.org, write",
        "(a@b.cd)",
    ],
)
def test_emails_are_still_found_anywhere_in_a_turn(text: str) -> None:
    verdict = safety_rule([text])
    assert verdict is not None and verdict.rule == "unsafe:identifying_info"
    found = IDENTIFYING.search(text)
    assert found is not None and "@" in found.group(0)


@pytest.mark.parametrize("text", ["a@b", "@example.com", "me @ home. you", "a" * 5000 + "@"])
def test_at_signs_without_an_address_are_not_identifying(text: str) -> None:
    assert safety_rule([text]) is None
