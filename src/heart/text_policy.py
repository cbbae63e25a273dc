"""The one text policy for everything people and files send in: web forms, completions,
judgments and labels files (CSV or JSON Lines) and bundle rows all refuse the same characters,
and name the one found the same way.

Refused: C0 and C1 control characters other than tab, line feed and carriage return (NUL, BEL,
ESC, DEL, NEL, CSI, ...); the bidirectional marks (U+200E, U+200F, U+061C), embeddings and
overrides (U+202A-U+202E) and isolates (U+2066-U+2069); and lone surrogates, which are not
Unicode text. All are invisible. A control character can drive the terminal that prints it; an
override or isolate changes how the rest of the line reads; a mark moves the punctuation and
digits around it, and makes two names that read the same differ (a rater ``r1`` and another
``r1`` with a mark). The marks are refused with the rest: the benchmark's conversations (ESConv)
are English, and a right-to-left reply displays in its own direction without them (a mark only
settles the punctuation between two scripts). Refused rather than stripped: storing something
other than what was sent would be worse than saying what to delete."""

from __future__ import annotations

import re
import unicodedata

REFUSED = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""The characters no text from outside may hold (tab, line feed and carriage return may)."""

_SURROGATES = range(0xD800, 0xE000)


def refused_character(text: str) -> str | None:
    """The first character of ``text`` the policy refuses and where it is ("an invisible control
    character (U+202E RIGHT-TO-LEFT OVERRIDE) at character 7"), or None when there is none."""
    found = REFUSED.search(text)
    if found is None:
        return None
    char = found.group()
    name = unicodedata.name(char, "")
    code = f"U+{ord(char):04X}" + (f" {name}" if name else "")
    what = "a lone surrogate" if ord(char) in _SURROGATES else "an invisible control character"
    suffix = ", which is not Unicode text" if ord(char) in _SURROGATES else ""
    return f"{what} ({code}) at character {found.start() + 1}{suffix}"
