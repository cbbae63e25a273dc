"""Text people send (a reply, a reason, checklist and strategy answers, entry ids, notes) is
refused when it holds a control character: C0 and C1 controls other than tab and line breaks,
the bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), and lone
surrogates. Refused rather than stripped: they are invisible, and a bidi override changes how
the rest of the text reads, so quietly storing something other than what was sent would be
worse than saying what to remove."""

from __future__ import annotations

import re
import unicodedata

from heart.errors import TaskRefused

CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What no text a person sends may hold (tab, line feed and carriage return may)."""


def plain_text(text: str, what: str) -> str:
    """``text`` unchanged, or TaskRefused saying which control character ``what`` (the reply,
    the reason, ...) holds, and where."""
    found = CONTROL.search(text)
    if found is None:
        return text
    char = found.group()
    name = unicodedata.name(char, "")
    code = f"U+{ord(char):04X}" + (f" {name}" if name else "")
    raise TaskRefused(
        f"the {what} holds an invisible control character ({code}) at character "
        f"{found.start() + 1}; delete it (pasted text can bring one in) and send it again"
    )
