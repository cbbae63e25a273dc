"""Text people send in the web app (a reply, a reason, checklist and strategy answers, entry ids,
notes), held to the one text policy (heart.text_policy) that imports and bundles follow too."""

from __future__ import annotations

from heart.errors import TaskRefused
from heart.text_policy import REFUSED, refused_character

CONTROL = REFUSED
"""What no text a person sends may hold: the text policy's refused characters."""


def plain_text(text: str, what: str) -> str:
    """``text`` unchanged, or TaskRefused saying which refused character ``what`` (the reply,
    the reason, ...) holds, and where."""
    found = refused_character(text)
    if found is None:
        return text
    raise TaskRefused(
        f"the {what} holds {found}; delete it (pasted text can bring one in) and send it again"
    )
