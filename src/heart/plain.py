"""Text compared the way people read it: case and spacing aside."""

from __future__ import annotations


def plain(text: str) -> str:
    """``text`` casefolded, with every run of whitespace made one space and none at the ends."""
    return " ".join(text.split()).casefold()


def quotes(text: str, evidence: str) -> bool:
    """Whether ``evidence`` is words of ``text``, case and spacing aside."""
    return plain(evidence) in plain(text)
