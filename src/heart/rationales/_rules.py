"""The rule-based coder: transparent and literal. A theme is coded wherever one of its patterns
matches the rationale; the code keeps the words that matched, where they are, the reply the clause
speaks of and the words that said so, and whether a negation comes just before ("doesn't name the
feeling", "less natural")."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from heart.rationales._codebook import Codebook
from heart.rationales._sides import Clause, read_clauses
from heart.types import Shown

_NEGATION = re.compile(
    r"(?:\bnot|n't|n’t|\bnever|\bno|\bwithout|\black(?:s|ing|ed)?|\bfail(?:s|ed|ing)? to|"
    r"\brather than|\binstead of|\bless|\bneither|\bnor|\bhardly|\bbarely)\b",
    re.IGNORECASE,
)
NEGATION_WORDS = 4  # how many words before a match a negation may stand
NEGATION_REACH = 80  # and within how many characters (a word longer than that is no negation)


@dataclass(frozen=True)
class Code:
    """One theme found in a rationale: ``evidence`` is ``rationale[start:end]``; ``shown`` the
    reply it is about in the terms the judge saw (A first, B second, none when the rationale does
    not say), ``cue`` the words that placed it; ``negated`` when the rationale denies the theme of
    that reply."""

    theme: str
    shown: Shown
    negated: bool
    evidence: str
    start: int
    end: int
    cue: str = ""


def _clause_at(clauses: list[Clause], starts: list[int], at: int) -> Clause | None:
    """The clause holding ``at`` (``starts``: the clauses' starts, in order)."""
    index = bisect_right(starts, at) - 1
    if index >= 0 and at < clauses[index].end:
        return clauses[index]
    return None


def _negated(rationale: str, clause: Clause | None, at: int) -> bool:
    """A negation among the few words before ``at``, within its clause."""
    begin = clause.start if clause is not None else 0
    start = max(begin, at - NEGATION_REACH)
    words = rationale[start:at].split()
    if start > begin and not rationale[start - 1].isspace() and not rationale[start].isspace():
        words = words[1:]  # the reach cut a word: its end alone could read as a negation
    return _NEGATION.search(" ".join(words[-NEGATION_WORDS:])) is not None


def code_rationale(
    rationale: str, codebook: Codebook, first: str = "", second: str = ""
) -> list[Code]:
    """Every match of every theme's patterns in ``rationale``, in text order (a stretch of text
    matched by two patterns of one theme counts once). ``first`` and ``second`` are the replies
    as the judge saw them, used to place quoted words."""
    clauses = read_clauses(rationale, first, second)
    starts = [c.start for c in clauses]
    codes: list[Code] = []
    for theme in codebook.themes:
        taken = bytearray(len(rationale))  # 1 where a pattern of the theme matched already
        for pattern in theme.patterns:
            for match in pattern.finditer(rationale):
                start, end = match.span()
                if end == start or taken.find(1, start, end) >= 0:
                    continue
                taken[start:end] = b"\x01" * (end - start)
                clause = _clause_at(clauses, starts, start)
                shown = clause.shown if clause is not None else Shown.NONE
                codes.append(
                    Code(theme.id, shown, _negated(rationale, clause, start), match.group(0),
                         start, end, clause.cue if clause and shown is not Shown.NONE else "")
                )  # fmt: skip
    return sorted(codes, key=lambda c: (c.start, c.theme))
