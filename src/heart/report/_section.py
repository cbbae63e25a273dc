"""The core of the report's layout: a section is a title and blocks in reading order (warnings,
paragraphs, lists, tables, figures, detail to open when wanted), or, when it has no data yet,
one line saying what would fill it. Every renderer reads sections alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from heart.report._table import Table


@dataclass(frozen=True)
class Flag:
    """A warning to read before what follows it."""

    text: str
    key: str = ""


@dataclass(frozen=True)
class Figure:
    """A figure, drawn only by the renderers that embed figures. ``draw`` is a module-level
    function with its data (``functools.partial``), never a lambda: a large study's figures are
    drawn in a worker process, which is sent it pickled."""

    key: str
    alt: str
    draw: Callable[[], bytes]


@dataclass(frozen=True)
class Bullets:
    """A list; with ``code``, text between backticks is code."""

    items: list[str]
    code: bool = True


@dataclass(frozen=True)
class Heading:
    """A heading inside a section."""

    text: str
    key: str = ""


@dataclass(frozen=True)
class Code:
    """A block of text shown as written, such as the study file."""

    text: str
    info: str = ""


@dataclass(frozen=True)
class Details:
    """Blocks a reader opens when wanted: closed in the HTML under a line saying what they hold,
    in place in Markdown, so that the page reaches the next section sooner and drops nothing."""

    summary: str
    blocks: list[Block]
    key: str = ""


Block = str | Flag | Table | Figure | Bullets | Heading | Code | Details
"""A paragraph (text between backticks is code) or one of the block types above."""


def every_block(blocks: list[Block]) -> list[Block]:
    """The blocks in reading order, those inside a ``Details`` in its place."""
    out: list[Block] = []
    for block in blocks:
        out += every_block(block.blocks) if isinstance(block, Details) else [block]
    return out


@dataclass
class Section:
    """One section of the report. ``empty`` set: no data yet, and the one line saying what
    would fill the section, shown in place of its blocks."""

    key: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    empty: str = ""

    @property
    def tables(self) -> list[Table]:
        return [b for b in every_block(self.blocks) if isinstance(b, Table)]

    @property
    def lines(self) -> list[str]:
        return [b for b in every_block(self.blocks) if isinstance(b, str)]

    @property
    def warnings(self) -> list[str]:
        return [b.text for b in every_block(self.blocks) if isinstance(b, Flag)]
