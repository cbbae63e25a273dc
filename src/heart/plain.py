"""Text compared the way people read it: case and spacing aside."""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")


def plain(text: str) -> str:
    """``text`` casefolded, with every run of whitespace made one space and none at the ends."""
    return " ".join(text.split()).casefold()


def quotes(text: str, evidence: str) -> bool:
    """Whether ``evidence`` is words of ``text``, case and spacing aside."""
    return plain(evidence) in plain(text)


class PlainText:
    """``text`` in its plain form, knowing where each plain character stands in ``text``: words
    quoted from it are found in one pass over it, whatever their spacing and case."""

    def __init__(self, text: str) -> None:
        parts: list[str] = []
        places: list[int] = []  # the place in ``text`` of each character of ``plain``
        for word in _WORD.finditer(text):
            if parts:
                parts.append(" ")
                places.append(word.start())
            folded = word.group().casefold()
            parts.append(folded)
            if len(folded) == len(word.group()):
                places.extend(range(word.start(), word.end()))
            else:  # a letter that folds to several ("ß" to "ss") stands for each of them
                for at, char in enumerate(word.group(), word.start()):
                    places.extend([at] * len(char.casefold()))
        self.plain = "".join(parts)
        self._places = places

    def span(self, evidence: str) -> tuple[int, int] | None:
        """Where the first occurrence of ``evidence`` stands in the text (from its first to its
        last character), or None when it is not words of the text."""
        words = plain(evidence)
        at = self.plain.find(words) if words else -1
        if at < 0:
            return None
        return self._places[at], self._places[at + len(words) - 1] + 1
