"""Words quoted from a text are found case and spacing aside, and placed in the text as written."""

from __future__ import annotations

import pytest

from heart.plain import PlainText, plain, quotes


@pytest.mark.parametrize(
    ("text", "evidence", "span"),
    [
        ("Reply B asks  what\nHAPPENED.", "asks what happened", (8, 27)),
        ("It NAMES the   feeling", "  names THE feeling ", (3, 22)),
        ("Die STRASSE ist lang", "straße ist", (4, 15)),  # "ß" folds to "ss"
        ("Die Straße ist lang", "STRASSE", (4, 10)),
        ("Die Straße ist lang", "stras", (4, 9)),  # ends inside the folded letter
        ("a a a a b", "a a b", (4, 9)),
        ("ab", "b", (1, 2)),  # not only whole words, as quotes() reads them
    ],
)
def test_quoted_words_are_placed_in_the_text_as_written(
    text: str, evidence: str, span: tuple[int, int]
) -> None:
    assert quotes(text, evidence)
    assert PlainText(text).span(evidence) == span
    assert PlainText(text).plain == plain(text)


@pytest.mark.parametrize("evidence", ["asks why", "", "   ", "happened asks"])
def test_words_not_in_the_text_have_no_place(evidence: str) -> None:
    assert PlainText("Reply B asks what happened.").span(evidence) is None
