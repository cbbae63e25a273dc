"""The report as Markdown. Names, labels and quoted text are escaped so that they render as
written: never as HTML, links or emphasis. Figures are left to the HTML report."""

from __future__ import annotations

from heart.report._document import Document, document
from heart.report._facts import StudyFacts
from heart.report._markdown import md_block, md_cell, md_fence, md_heading, md_inline
from heart.report._section import (
    Block,
    Bullets,
    Code,
    Details,
    Figure,
    Flag,
    Heading,
    Section,
)
from heart.report._table import Table


def markdown_table(table: Table, level: int = 3) -> list[str]:
    """A table under its title (if it has one), every title, cell and note shown as written."""
    out = [md_heading(level, table.title), ""] if table.title else []
    out.append("| " + " | ".join(map(md_cell, table.header)) + " |")
    out.append("|" + "---|" * len(table.header))
    out += ["| " + " | ".join(map(md_cell, row)) + " |" for row in table.rows]
    if table.note:
        out += ["", md_block(table.note)]
    return [*out, ""]


def _warning(text: str) -> list[str]:
    return [f"**{md_inline(text.strip())}**", ""]


def markdown_blocks(blocks: list[Block]) -> list[str]:
    """Blocks in order; a table after a heading inside the section is one level below it; the
    blocks of a ``Details`` in its place."""
    out: list[str] = []
    level = 3
    for block in blocks:
        if isinstance(block, str):
            out += [md_block(block), ""]
        elif isinstance(block, Flag):
            out += _warning(block.text)
        elif isinstance(block, Table):
            out += markdown_table(block, level)
        elif isinstance(block, Bullets):
            out += [*(f"- {md_block(item)}" for item in block.items), ""]
        elif isinstance(block, Heading):
            out += [md_heading(3, block.text), ""]
            level = 4
        elif isinstance(block, Code):
            out += [*md_fence(block.text, block.info), ""]
        elif isinstance(block, Details):  # Markdown has no closed blocks: shown in place
            out += markdown_blocks(block.blocks)
        else:
            assert isinstance(block, Figure)  # figures are in the HTML report only
    return out


def markdown_section(section: Section) -> list[str]:
    out = [md_heading(2, section.title), ""]
    if section.empty:
        return [*out, md_block(section.empty), ""]
    return out + markdown_blocks(section.blocks)


def render_markdown(facts: StudyFacts) -> str:
    """The report of ``facts`` as Markdown."""
    return document_markdown(document(facts))


def document_markdown(doc: Document) -> str:
    """``doc`` as Markdown."""
    out = [md_heading(1, doc.title), "", md_block(doc.about), ""]
    if doc.warning:
        out += _warning(doc.warning)
    out += markdown_section(doc.first)
    out += ["## Contents", ""]
    out += [f"- {md_block(s.title)}" + (" (nothing yet)" if s.empty else "") for s in doc.sections]
    out.append("")
    for section in doc.sections:
        out += markdown_section(section)
    return "\n".join(out)
