"""Markdown that shows text as written: a study's, a system's or a judge's name, a label or a
quoted rationale renders as those characters, never as HTML, a link, emphasis or a heading.

The report's own sentences mark commands and hashes between backticks; those stay code spans
(as in the HTML report's lists). Everything else that Markdown could read as syntax is
backslash-escaped, and only where it could: ``p < 0.001``, ``mild_ending`` and ``[0.78–0.93]``
stay as they are, so report.md reads well as plain text too."""

from __future__ import annotations

import re

_ALWAYS = re.compile(r"[\\*~]")
"""Escapes, emphasis and strikethrough: read as syntax wherever they are."""
_OPENS = re.compile(r"<(?! |$)|&(?=[A-Za-z#])|\](?=[(\[:])")
"""An HTML tag, comment or autolink; an entity; a link's or image's label closing before its
target. A '<' before a space, a lone '&' and a ']' ending an interval are plain text."""
_UNDERSCORES = re.compile(r"_+")
_BACKTICKS = re.compile(r"`+")
_BLOCK_START = re.compile(r"#{1,6}(?=\s|$)|[>\[]|[-+](?=[\s-]|$)|\d{1,9}(?=[.)](?:\s|$))")
"""What would start a heading, a quote, a link definition or task box, a list or a rule, or an
ordered list."""


def _underscores(match: re.Match[str]) -> str:
    """Underscores inside a word (``mild_ending``) cannot emphasise; others are escaped."""
    text, start, end = match.string, match.start(), match.end()
    if start > 0 and end < len(text) and text[start - 1].isalnum() and text[end].isalnum():
        return match.group()
    return "\\_" * (end - start)


def _plain(text: str) -> str:
    """Text outside code spans, escaped."""
    text = _ALWAYS.sub(lambda m: "\\" + m.group(), text)
    text = _OPENS.sub(lambda m: "\\" + m.group(), text)
    return _UNDERSCORES.sub(_underscores, text)


def md_inline(text: str) -> str:
    """``text`` as Markdown inside a line (a table cell, after other words): text between
    backticks as code, the rest as written; line breaks become spaces."""
    text = " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    parts = text.split("`")
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(_plain(part))
        elif i == len(parts) - 1:  # a backtick without its pair
            out.append("\\`" + _plain(part))
        elif part.strip():
            out.append(f"`{part}`")
        else:  # an empty span would read as a longer backtick string
            out.append(f"\\`{_plain(part)}\\`")
    return "".join(out)


def md_block(text: str) -> str:
    """``text`` as the start of a paragraph or a list item: as :func:`md_inline`, and a first
    character that would start a heading, quote or list is escaped."""
    line = md_inline(text).lstrip()
    start = _BLOCK_START.match(line)
    if start is None:
        return line
    if start.group()[0].isdigit():  # 1. or 1) starts an ordered list
        return line[: start.end()] + "\\" + line[start.end() :]
    return "\\" + line


def md_heading(level: int, text: str) -> str:
    """A heading of ``text``, a '#' at its end kept (Markdown would drop it as a closing mark)."""
    line = md_inline(text)
    if line.rstrip().endswith("#"):
        line = line.rstrip()[:-1] + "\\#"
    return f"{'#' * level} {line}"


def md_cell(text: str) -> str:
    """``text`` as a table cell: as :func:`md_inline`, with '|' escaped."""
    return md_inline(text).replace("|", "\\|")


def md_fence(text: str, info: str = "") -> list[str]:
    """``text`` as a fenced code block, its fence longer than any run of backticks in it."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, text, fence]
