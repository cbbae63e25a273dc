"""Which reply a part of a rationale speaks about, read literally.

A rationale is cut into sentences and each sentence into clauses (at commas, semicolons and words
such as "but", "while", "and", "than"). A clause names a reply when it says A or B ("Response A",
"B's question", "reply 2"), "the first" or "the second" (one, reply, ...), quotes words found in
only one of the two replies, or says "the other" (the reply not named last). A clause that names
both, or says "both" or "neither", speaks of no one reply. A clause that names none takes the reply
of the clause before it in the same sentence; the first clause of a sentence does so only when it
opens with "it", "its", "this one" and the like. Everything is in the terms the judge saw: A is
the reply shown first.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from heart.types import Shown

_NOUNS = r"(?:response|reply|answer|option|candidate|completion|message|version|text)"
_VERBS = frozenset({
    "is", "was", "does", "did", "has", "had", "feels", "felt", "sounds", "seems", "reads",
    "names", "asks", "offers", "gives", "shows", "uses", "acknowledges", "validates",
    "provides", "makes", "stays", "keeps", "tries", "focuses", "jumps", "ignores", "misses",
    "mentions", "references", "reflects", "addresses", "captures", "comes", "goes", "wins",
    "won", "better", "also", "clearly", "directly", "instead", "only", "actually", "really",
    "more", "less", "simply", "just", "still", "immediately", "can", "could", "would", "might",
    "should", "will", "and", "or", "vs", "versus", "over", "than", "both",
})  # fmt: skip
_NOUN_LETTER = re.compile(rf"\b{_NOUNS}\s?#?\s?([AB12])\b", re.IGNORECASE)
_BARE_LETTER = re.compile(r"(?<![\w'’-])([AB])(?![\w-])")
_ORDINAL = re.compile(
    r"\bthe (first|second)(?: (one|reply|response|answer|option|message|candidate|completion))?\b",
    re.IGNORECASE,
)
_OTHER = re.compile(
    r"\bthe other(?: (one|reply|response|answer|option|message|candidate|completion))?\b",
    re.IGNORECASE,
)
_BOTH = re.compile(r"\b(?:both|neither|either)\b", re.IGNORECASE)
_PRONOUN = re.compile(
    r"^\W{0,3}(?:it|its|it's|it’s|this one|that one|this (?:reply|response|answer)|"
    r"that (?:reply|response|answer)|also)\b",
    re.IGNORECASE,
)
# A run of stops is tried from its first stop only, and never given back: one try per run.
_SENTENCE_END = re.compile(r"(?<![.!?])[.!?]++[\"'”’)\]]{0,3}+(?:\s{1,40}|$)|\n")
_CLAUSE_BREAK = re.compile(
    r"[;:,]\s{0,20}|\s(?:but|while|whilst|whereas|however|although|though|yet|and|than|unlike|"
    r"compared (?:to|with)|versus|vs\.?|over)\s",
    re.IGNORECASE,
)
# A quote is tried from each opening mark up to the next mark of its kind (an opening mark ends
# the try too), so no stretch of text is read more than once per kind of quote.
_QUOTE = re.compile(r"\"([^\"]{3,400}+)\"|“([^“”]{3,400}+)”|(?<![\w])'([^']{4,400}+)'(?![\w])")
_NEXT_WORD = re.compile(r"\s{1,5}([A-Za-z’']{1,30})")
_NEXT_CHAR = re.compile(r"\s*+(\S)")
_NOT_WORD = re.compile(r"[^\w\s']")
_OPENERS = " \"'“‘("  # what may stand between a sentence's end and its first word
MAX_QUOTE_LOOKUPS = 40
"""Quotes of one rationale looked up in the replies: each lookup reads both replies, so the bound
keeps a rationale made of quotes linear (a judge's reason quotes a few times at most)."""


@dataclass(frozen=True)
class Clause:
    """A span of the rationale and the reply it speaks of (``cue``: the words that said so)."""

    start: int
    end: int
    shown: Shown
    cue: str


def _plain(text: str) -> str:
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def _masked(text: str) -> tuple[str, list[tuple[int, str]]]:
    """The text with quoted words blanked out (so their letters and commas do not count), and
    every quote's start and words."""
    quotes = []
    chars = list(text)
    for match in _QUOTE.finditer(text):
        words = next(g for g in match.groups() if g is not None)
        quotes.append((match.start(), words))
        for i in range(match.start() + 1, match.end() - 1):
            chars[i] = "x" if not chars[i].isspace() else chars[i]
    return "".join(chars), quotes


def _is_side_word(text: str, end: int) -> bool:
    """Whether the word after ``end`` lets the letter before it be a reply, not the article
    "a": a verb, an adverb, a conjunction, punctuation or nothing."""
    after = _NEXT_CHAR.match(text, end)
    if after is None or after.group(1) in ",.;:!?)'’\"":
        return True
    found = _NEXT_WORD.match(text, end)
    if found is None:
        return False
    word = found.group(1).casefold()
    if word in _VERBS or word.endswith(("ly", "n't", "n’t")):
        return True
    return word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _references(text: str, start: int, end: int) -> tuple[set[Shown], str, bool, bool]:
    """The replies the clause ``text[start:end]`` names, the words naming them, and whether it
    says "both"/"neither" or "the other"."""
    clause = text[start:end]
    sides: set[Shown] = set()
    cues: list[str] = []
    taken: set[int] = set()  # the places of letters already read with their noun
    for match in _NOUN_LETTER.finditer(clause):
        letter = match.group(1)
        if letter == "a" and not _is_side_word(clause, match.end()):
            continue
        sides.add(Shown.FIRST if letter in "Aa1" else Shown.SECOND)
        cues.append(match.group(0))
        taken.update(range(*match.span()))
    for match in _BARE_LETTER.finditer(clause):
        if match.start() in taken:
            continue
        at_start = _opens_sentence(text, start + match.start())
        if match.group(1) == "A" and at_start and not _is_side_word(clause, match.end()):
            continue  # "A good reply would ..."
        sides.add(Shown.FIRST if match.group(1) == "A" else Shown.SECOND)
        cues.append(match.group(1))
    for match in _ORDINAL.finditer(clause):
        if match.group(2) is None and not _is_side_word(clause, match.end()):
            continue  # "the first step"
        sides.add(Shown.FIRST if match.group(1).casefold() == "first" else Shown.SECOND)
        cues.append(match.group(0))
    other = False
    for match in _OTHER.finditer(clause):
        if match.group(1) is not None or _is_side_word(clause, match.end()):
            other = True
            cues.append(match.group(0))
    both = _BOTH.search(clause) is not None
    if both:
        cues.append(_BOTH.findall(clause)[0])
    return sides, " / ".join(cues), both, other


def _opens_sentence(text: str, at: int) -> bool:
    while at > 0 and text[at - 1] in _OPENERS:
        at -= 1
    return at == 0 or text[at - 1] in ".!?\n"


def _spans(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` cut at ``pattern``'s matches."""
    out, at = [], start
    for match in pattern.finditer(text, start, end):
        if match.start() > at:
            out.append((at, match.start()))
        at = match.end()
    if at < end:
        out.append((at, end))
    return out


def _quoted_side(quote: str, first: str, second: str) -> Shown | None:
    """The reply whose words the quote copies, when only one of them holds them (``first`` and
    ``second`` in their plain form)."""
    words = _plain(quote)
    if len(words) < 3:
        return None
    in_first, in_second = words in first, words in second
    if in_first == in_second:
        return None
    return Shown.FIRST if in_first else Shown.SECOND


def read_clauses(rationale: str, first: str = "", second: str = "") -> list[Clause]:
    """Every clause of ``rationale`` with the reply it speaks of; ``first`` and ``second`` are
    the replies as shown (to place quotes)."""
    masked, quotes = _masked(rationale)
    quote_starts = [q_start for q_start, _ in quotes]
    replies = (_plain(first), _plain(second))
    lookups = 0
    out: list[Clause] = []
    last: Shown | None = None  # the reply named last, for "the other" and pronouns
    for s_start, s_end in _spans(_SENTENCE_END, masked, 0, len(masked)):
        previous: Clause | None = None
        for index, (c_start, c_end) in enumerate(_spans(_CLAUSE_BREAK, masked, s_start, s_end)):
            sides, cue, both, other = _references(masked, c_start, c_end)
            at = bisect_left(quote_starts, c_start)
            while at < len(quotes) and quotes[at][0] < c_end and not sides:
                if lookups == MAX_QUOTE_LOOKUPS:
                    break
                words, at, lookups = quotes[at][1], at + 1, lookups + 1
                side = _quoted_side(words, *replies)
                if side is not None:
                    sides.add(side)
                    cue = f'"{words}"'
            shown, said = Shown.NONE, cue
            if both or len(sides) > 1:
                shown = Shown.NONE
            elif len(sides) == 1:
                shown = next(iter(sides))
            elif other and last is not None:
                shown = Shown.SECOND if last is Shown.FIRST else Shown.FIRST
            elif index > 0 and previous is not None:
                shown, said = previous.shown, previous.cue
            elif index == 0 and last is not None and _PRONOUN.match(masked[c_start:c_end]):
                shown, said = last, rationale[c_start:c_end].split()[0]
            if shown is not Shown.NONE and (sides or other):
                last = shown
            clause = Clause(c_start, c_end, shown, said if shown is not Shown.NONE else cue)
            out.append(clause)
            previous = clause
    return out
