"""The shipped codebook: its themes, axes and patterns, and the check that keeps every pattern
linear in the rationale."""

from __future__ import annotations

import time

import pytest

from heart.errors import ConfigError
from heart.rationales import UnsafePattern, code_rationale, compile_pattern, load_codebook
from heart.types import Axis

CODEBOOK = load_codebook()


def test_the_codebook_ties_12_to_20_themes_to_every_axis() -> None:
    themes = CODEBOOK.themes
    assert 12 <= len(themes) <= 20
    assert len(set(CODEBOOK.ids)) == len(themes)
    assert {t.axis for t in themes} == set(Axis)
    skills = {t.name for t in themes if t.skill}
    assert {
        "names the feeling",
        "asks one concrete question",
        "offers a doable next step",
        "sounds natural",
        "generic or scripted",
        "stays in role and safe",
    } <= skills
    assert all(t.description and t.patterns for t in themes)
    assert len(CODEBOOK.hash) == 64
    assert load_codebook() is CODEBOOK  # read once


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(\w{1,5}) \1", "backreferences"),
        (r"\bask\w+", "bound of at most"),
        (r"(?:very ){0,3}warm", "single character or class"),
        (r"(?:a|ab){1,5}c", "single character or class"),
        (r"x{0,99}", "bound of at most"),
    ],
)
def test_patterns_that_could_run_in_more_than_linear_time_are_refused(
    pattern: str, why: str
) -> None:
    with pytest.raises(UnsafePattern, match=why):
        compile_pattern(pattern)


def test_plain_patterns_pass_and_match_whatever_the_case() -> None:
    pattern = compile_pattern(r"\b(?:names?|naming)(?: the| her)? feelings?\b(?! of)")
    assert pattern.search("Reply B NAMES HER FEELING.")
    with pytest.raises(ValueError, match="not a regular expression"):
        compile_pattern("(unclosed")


def test_a_codebook_with_a_bad_theme_names_it() -> None:
    from heart.rationales import parse_codebook

    text = "themes:\n  - {id: x, name: x, axis: Q, skill: false, polarity: strength, "
    text += "description: d, patterns: ['x']}\n"
    with pytest.raises(ConfigError, match=r"theme 1 \(x\): 'Q' is not a valid Axis"):
        parse_codebook(text, "v9", "codebook.v9.yaml")
    with pytest.raises(ConfigError, match="no rationale codebook 'v9'"):
        load_codebook("v9")


def test_coding_a_long_hostile_text_takes_time_linear_in_its_length() -> None:
    """Text built to make backtracking patterns explode: runs of letters, spaces and the words
    the patterns start with, with no end to match."""
    unit = "asks names the the the " + "a" * 50 + " " * 30 + "validates feelings " * 3
    short, long = unit * 40, unit * 400
    timings = []
    for text in (short, long):
        start = time.perf_counter()
        code_rationale(text, CODEBOOK)
        timings.append(time.perf_counter() - start)
    assert timings[1] < 2.0
    assert timings[1] < 25 * timings[0] + 0.05  # ten times the text, not a hundred times the time
