"""The rule-based coder on rationales written for the test: each theme it finds, the words that
triggered it, the reply it is about (as the judge saw them) and the words that said so."""

from __future__ import annotations

import pytest

from heart.rationales import code_rationale, load_codebook, read_clauses
from heart.rationales._sides import MAX_QUOTE_LOOKUPS
from heart.types import Shown

CODEBOOK = load_codebook()
FIRST = "That sounds exhausting. What would help you rest tonight?"
SECOND = "I'm sorry. Everything happens for a reason."
A, B, NONE = Shown.FIRST, Shown.SECOND, Shown.NONE


def _codes(text: str) -> list[tuple[str, Shown, bool, str, str]]:
    return [
        (c.theme, c.shown, c.negated, c.evidence, c.cue)
        for c in code_rationale(text, CODEBOOK, FIRST, SECOND)
    ]


@pytest.mark.parametrize(
    ("rationale", "expected"),
    [
        (  # the judges' own style: the side carries over the clauses of a sentence
            "B names the hurt and asks what the seeker wants to say to her sister.",
            [("names-feeling", B, False, "names the hurt", "B"),
             ("asks-question", B, False, "asks what", "B"),
             ("specific", B, False, "her sister", "B")],
        ),
        (
            "Response A acknowledges her frustration while B jumps straight to advice.",
            [("names-feeling", A, False, "acknowledges her frustration", "Response A"),
             ("misreads", B, False, "jumps straight to", "B"),
             ("next-step", B, False, "advice", "B")],
        ),
        (  # "the other" is the reply not named last; a denial is kept
            "Reply B is generic and does not name the feeling; the other one sounds natural.",
            [("generic-scripted", B, False, "generic", "Reply B"),
             ("names-feeling", B, True, "name the feeling", "Reply B"),
             ("sounds-natural", A, False, "natural", "the other one")],
        ),
        (  # "both" speaks of no one reply
            "Both replies are kind, but A is more specific.",
            [("warmth", NONE, False, "kind", ""), ("specific", A, False, "specific", "A")],
        ),
        (  # a sentence opening with "It" speaks of the reply named last
            "B is better. It feels more natural. A sounds scripted.",
            [("sounds-natural", B, False, "natural", "It"),
             ("generic-scripted", A, False, "scripted", "A")],
        ),
        (
            "I liked the second one because it asked a question. The first was too long.",
            [("asks-question", B, False, "asked a", "the second one"),
             ("wrong-length", A, False, "too long", "The first")],
        ),
        (  # "than" separates the two replies; "less" denies
            "A is more natural than B, which sounds less robotic... no, B is robotic.",
            [("sounds-natural", A, False, "natural", "A"),
             ("generic-scripted", B, True, "robotic", "B"),
             ("generic-scripted", B, False, "robotic", "B")],
        ),
        (  # the article "A" is no reply; a sentence without a reply leaves the side unknown
            "A good reply would validate. The first step matters.",
            [("validates", NONE, False, "validate", "")],
        ),
        (  # quoted words place the side when only one reply holds them
            'Saying "What would help you rest tonight" is a concrete question.',
            [("asks-question", A, False, "concrete question", f'"{FIRST[24:].rstrip("?")}"')],
        ),
        (  # curly quotes too; stops, marks and closing quotes end a sentence however many
            "Wow!!!) It asks “what would help you rest tonight” as a concrete question?! B is "
            "kind...",
            [("asks-question", A, False, "concrete question", '"what would help you rest tonight"'),
             ("warmth", B, False, "kind", "B")],
        ),
        (
            "reply b felt less generic, and a lot warmer",
            [("generic-scripted", B, True, "generic", "reply b"),
             ("warmth", B, False, "warmer", "reply b")],
        ),
        (  # a negation counts from the clause's first word, even with no space after a comma
            "B sounds cold,never names the feeling",
            [("dismissive", B, False, "cold", "B"), ("names-feeling", B, True, "names the feeling",
                                                       "B")],
        ),
        (  # and within 80 characters before the match: a longer "word" is no negation's
            "B never " + "x" * 90 + " names the feeling",
            [("names-feeling", B, False, "names the feeling", "B")],
        ),
        ("I prefer B.", []),
    ],
)  # fmt: skip
def test_codes_keep_their_phrase_reply_and_cue(
    rationale: str, expected: list[tuple[str, Shown, bool, str, str]]
) -> None:
    assert _codes(rationale) == expected


def test_every_code_points_at_its_words() -> None:
    text = "Reply A validates her fear; B gives practical advice and asks a gentle question."
    for code in code_rationale(text, CODEBOOK):
        assert text[code.start : code.end] == code.evidence


def test_a_quote_found_in_both_replies_or_neither_places_nothing() -> None:
    clauses = read_clauses('It says "happens for a reason" there.', "happens for a reason", SECOND)
    assert [c.shown for c in clauses] == [NONE]
    clauses = read_clauses('It says "something else entirely" there.', FIRST, SECOND)
    assert [c.shown for c in clauses] == [NONE]


def test_a_rationale_past_its_quote_lookups_places_no_more_quotes() -> None:
    """Each quote looked up reads both replies; past MAX_QUOTE_LOOKUPS a rationale's quotes
    place nothing, so one made of quotes cannot take time in the product of the lengths."""
    quote = '"What would help you rest tonight"'
    filler = ", ".join(f'"word {n} here"' for n in range(MAX_QUOTE_LOOKUPS - 1))
    placed = read_clauses(f"{filler}, {quote}.", FIRST, SECOND)
    assert placed[-1].shown is A and [c.shown for c in placed[:-1]] == [NONE] * (len(placed) - 1)
    unplaced = read_clauses(f'{filler}, "one more", {quote}.', FIRST, SECOND)
    assert [c.shown for c in unplaced] == [NONE] * len(unplaced)
