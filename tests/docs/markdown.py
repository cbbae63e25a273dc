"""Reading the project's Markdown as GitHub renders it: headings and their anchors, links, and
the fenced code blocks of a section."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+).+?\1")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its info string (``sh``, ``yaml``...) and its text."""

    info: str
    text: str


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lower case, without punctuation other than
    hyphens and underscores, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a page; a repeated heading gets -1, -2... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link in the prose (not in code)."""
    found = []
    for number, line in prose_lines(text):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            found.append((number, match.group(1)))
    return found


def section(text: str, title: str) -> str:
    """The text of the section headed ``title``, up to the next heading of its level or
    above."""
    lines = text.splitlines()
    start = level = None
    for index, line in [(n - 1, line) for n, line in prose_lines(text)]:
        match = HEADING.match(line)
        if not match:
            continue
        depth = len(match.group(1))
        if start is None and match.group(2) == title:
            start, level = index, depth
        elif start is not None and level is not None and depth <= level:
            return "\n".join(lines[start:index])
    if start is None:
        raise AssertionError(f"no section {title!r}")
    return "\n".join(lines[start:])


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text``, in order."""
    found, info, body = [], None, []
    for line in text.splitlines():
        fence = FENCE.match(line.lstrip())
        if fence and info is None:
            info, body = line.lstrip()[3:].strip(), []
        elif fence:
            found.append(Block(info, "\n".join(body) + "\n"))
            info = None
        elif info is not None:
            body.append(line)
    return found
