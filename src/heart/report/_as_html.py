"""The report as one self-contained HTML file that reads on a phone as on a desktop: every
table scrolls inside its own box and every figure shrinks to the screen's width, so the page
itself never scrolls sideways. Names and text are escaped, never read as HTML. The figures come
drawn (``document_html``): here, or half of them in a worker process (heart.report._aside)."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping

from heart.report._document import Document, document, figure_draws
from heart.report._facts import StudyFacts
from heart.report._figures import draw_figures
from heart.report._section import Block, Bullets, Details, Figure, Flag, Heading, Section
from heart.report._table import Table

CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:76rem;color:#222;
padding:0 1rem;line-height:1.4}
h1{font-size:1.6rem;margin:.2rem 0 .6rem}
h1,h2,h3,h4,p,li{overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%;margin:.6rem 0}
table{border-collapse:collapse}
th,td{padding:.25rem .55rem;border-bottom:1px solid #ddd}
th{text-align:left;font-weight:600;font-size:.9rem}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.flag{color:#b00020;font-weight:600}.note{color:#555;font-size:.88rem;max-width:60rem}
#about{max-width:60rem}
figure{margin:1rem 0}figure img{max-width:100%;height:auto}
pre{background:#f6f6f6;padding:1rem;overflow:auto;max-width:100%}
h2{border-top:2px solid #eee;padding-top:1rem;margin-top:2rem}
#first h2{border-top:0;padding-top:0;margin-top:1rem}
.empty{border-top:1px solid #eee;margin:1rem 0 0;padding-top:.5rem}
.empty h2{display:inline;border:0;padding:0;margin:0;font-size:1rem}
.empty span{color:#555;margin-left:.4rem}
#contents ol{columns:15rem;margin:.4rem 0}#contents li{break-inside:avoid}
.quiet{color:#777}
details{margin:.8rem 0}summary{cursor:pointer;color:#1f4e79}
details[open]>summary{margin-bottom:.4rem}
@media (max-width:40rem){body{margin:.6rem auto;padding:0 .7rem;font-size:.94rem}
th,td{padding:.2rem .4rem;font-size:.85rem}h1{font-size:1.25rem}h2{font-size:1.2rem}
#first ul{padding-left:1.1rem}#contents ol{columns:2;padding-left:1.6rem}}
"""


def _numeric(text: str) -> bool:
    return bool(text) and (text[0].isdigit() or text[0] in "+-–†#") and len(text) < 24


def html_table(table: Table, level: int = 3) -> str:
    """A table under its title (if it has one), in a box of its own that scrolls sideways when
    the table is wider than the screen; flagged rows marked."""
    e = html.escape
    parts = [f"<h{level}>{e(table.title)}</h{level}>"] if table.title else []
    parts.append("<div class='scroll'>")
    parts.append(f"<table id='{e(table.key)}'><thead><tr>" if table.key else "<table><thead><tr>")
    parts += [f"<th>{e(h)}</th>" for h in table.header]
    parts.append("</tr></thead><tbody>")
    for r, row in enumerate(table.rows):
        flagged = r < len(table.flagged) and table.flagged[r]
        parts.append("<tr class='flag'>" if flagged else "<tr>")
        colours = table.colours[r] if r < len(table.colours) else []
        for c, cell in enumerate(row):
            style = f" style='background:{colours[c]}'" if c < len(colours) and colours[c] else ""
            kind = " class='num'" if _numeric(cell) else ""
            parts.append(f"<td{kind}{style}>{e(cell)}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table></div>")
    if table.note:
        parts.append(f"<p class='note'>{e(table.note)}</p>")
    return "".join(parts)


def _figure(figure: Figure, pngs: Mapping[str, bytes]) -> str:
    data = base64.b64encode(pngs[figure.key]).decode("ascii")
    return (
        f"<figure id='{html.escape(figure.key)}'><img alt='{html.escape(figure.alt)}' "
        f"src='data:image/png;base64,{data}'></figure>"
    )


def _item(text: str, code: bool) -> str:
    """A list item's text, escaped; with ``code``, text between backticks as code."""
    if not code:
        return html.escape(text)
    parts = text.split("`")
    return "".join(
        f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts)
    )


def html_blocks(blocks: list[Block], pngs: Mapping[str, bytes]) -> str:
    """Blocks in order, each figure's PNG bytes taken from ``pngs`` by its key; a table after a
    heading inside the section is one level below it; a ``Details`` closed under its summary
    line."""
    e = html.escape
    parts: list[str] = []
    level = 3
    for block in blocks:
        if isinstance(block, str):
            parts.append(f"<p>{e(block)}</p>")
        elif isinstance(block, Flag):
            key = f" id='{e(block.key)}'" if block.key else ""
            parts.append(f"<p class='flag'{key}>{e(block.text)}</p>")
        elif isinstance(block, Table):
            parts.append(html_table(block, level))
        elif isinstance(block, Figure):
            parts.append(_figure(block, pngs))
        elif isinstance(block, Bullets):
            items = "".join(f"<li>{_item(i, block.code)}</li>" for i in block.items)
            parts.append(f"<ul>{items}</ul>")
        elif isinstance(block, Heading):
            key = f" id='{e(block.key)}'" if block.key else ""
            parts.append(f"<h3{key}>{e(block.text)}</h3>")
            level = 4
        elif isinstance(block, Details):
            key = f" id='{e(block.key)}'" if block.key else ""
            inside = html_blocks(block.blocks, pngs)
            parts.append(f"<details{key}><summary>{e(block.summary)}</summary>{inside}</details>")
        else:
            parts.append(f"<pre>{e(block.text)}</pre>")
    return "".join(parts)


def html_section(section: Section, pngs: Mapping[str, bytes]) -> str:
    """A section (its figures' bytes from ``pngs``); one without data is one line: its title
    and what would fill it."""
    e = html.escape
    heading = f"<h2 id='{e(section.key)}'>{e(section.title)}</h2>"
    if section.empty:
        return f"<section class='empty'>{heading} <span>{e(section.empty)}</span></section>"
    return f"<section>{heading}{html_blocks(section.blocks, pngs)}</section>"


def _contents(sections: list[Section]) -> str:
    e = html.escape
    items = [
        f"<li><a href='#{e(s.key)}'>{e(s.title)}</a>"
        + (" <span class='quiet'>(nothing yet)</span>" if s.empty else "")
        + "</li>"
        for s in sections
    ]
    return f"<nav id='contents'><h2>Contents</h2><ol>{''.join(items)}</ol></nav>"


def render_html(facts: StudyFacts) -> str:
    """The report of ``facts`` as HTML, its figures drawn in this process."""
    doc = document(facts)
    return document_html(doc, draw_figures(figure_draws(doc)))


def document_html(doc: Document, pngs: Mapping[str, bytes]) -> str:
    """``doc`` as HTML, each figure's PNG bytes taken from ``pngs`` by its key."""
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{e(doc.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(doc.title)}</h1><p id='about'>{e(doc.about)}</p>",
    ]
    if doc.warning:
        parts.append(f"<p class='flag' id='warning'>{e(doc.warning)}</p>")
    parts.append(f"<div id='first'>{html_section(doc.first, pngs)}</div>")
    parts.append(_contents(doc.sections))
    parts += [html_section(s, pngs) for s in doc.sections]
    parts.append("</body></html>")
    return "".join(parts)
