"""Rendering the report: Markdown, one self-contained HTML file, CSV tables, and the terminal."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from pathlib import Path

from rich.console import Group
from rich.table import Table as RichTable

from heart.analyses import Board, JudgeAudit, LatencyReport
from heart.console import as_text
from heart.garbage import fewer_collections
from heart.provenance import PROVENANCE_FILE
from heart.report._conclusions import board_conclusions, report_conclusions
from heart.report._csv import csv_files
from heart.report._factor_tables import factor_section, scree
from heart.report._facts import StudyFacts
from heart.report._figures import forest_png, heatmap_png, hostility_png, strategy_heatmap_png
from heart.report._folder import report_folder
from heart.report._latency_tables import FigureRef, latency_section, with_ttft
from heart.report._markdown import md_block, md_cell, md_fence, md_heading, md_inline
from heart.report._provenance_tables import provenance_lines, provenance_tables
from heart.report._rationale_tables import rationale_section
from heart.report._strategy_tables import strategy_section
from heart.report._tables import (
    AUDIT_HEADER,
    AXES,
    Table,
    ablation_table,
    adversarial_tables,
    agreement_tables,
    audit_rows,
    audit_table,
    audit_verdict,
    axis_elo_table,
    board_table,
    differences_table,
    head_to_head_table,
    subset_tables,
)


def board_warning(facts: StudyFacts) -> str | None:
    """What a reader must know before the numbers: which judges the audit flags."""
    flagged = [a.judge for a in facts.audit if a.flagged]
    if not flagged:
        return None
    if len(flagged) == len(facts.audit) and not facts.find("human", "all"):
        return (
            "Warning: every verdict on this board comes from judges the judge audit flags as "
            "unreliable; read it as a test of the pipeline, not as a ranking."
        )
    return f"Warning: the judge audit flags {', '.join(flagged)} as unreliable."


def board_tables(board: Board, latency: LatencyReport | None = None) -> list[Table]:
    """Every table of one board, the leaderboard first (with a median-TTFT column when systems
    have timings)."""
    return [
        with_ttft(board_table(board), latency),
        axis_elo_table(board),
        head_to_head_table(board),
        differences_table(board),
        ablation_table(board),
    ]


def adversarial_section(facts: StudyFacts) -> tuple[list[str], list[Table], list[str]]:
    """The adversarial section: warnings to read first, its tables, and notes after them."""
    warnings: list[str] = []
    tables: list[Table] = []
    lines: list[str] = []
    if facts.adversarial is None:
        lines.append(
            "This study has no adversarial items: set items.adversarial (20 in a full study) and "
            "run `heart items adversarial`."
        )
    else:
        tables += adversarial_tables(facts.adversarial)
        if facts.adversarial.rater.flagged:
            warnings.append(
                "Warning: the hostility rater is unreliable ("
                + "; ".join(facts.adversarial.rater.problems)
                + "), so the kept items are not shown to be as hostile as their profiles ask."
            )
    for comparison in facts.subsets:
        tables += subset_tables(comparison)
    if facts.adversarial is not None and not facts.subsets:
        lines.append(
            "No board compares regular and adversarial items yet: that needs verdicts on both "
            "subsets from the same judges."
        )
    return warnings, tables, lines


def _study_counts(facts: StudyFacts) -> list[str]:
    """The study's counts, a Markdown list item each (names in backticks)."""
    out = ["- items: " + ", ".join(f"{k} {v}" for k, v in sorted(facts.items.items()))]
    out += [f"- pairs: {facts.pairs}"]
    for system, (ok, failed) in facts.completions.items():
        done = f"{ok} ok, {failed} failed" if ok or failed else "none yet"
        out.append(f"- completions by `{system}`: {done}")
    for judge, n in facts.judgments.items():
        left_out = f", {n.left_out} valid but left out" if n.left_out else ""
        out.append(
            f"- judgments by `{judge}`: {n.counted} counted{left_out}, {n.failed} failed "
            "(failed ones are never counted)"
        )
    if facts.left_out:
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(facts.left_out.items()))
        out.append(f"- judgments left out of the analyses: {reasons}")
    return out


def _prompt_lines(facts: StudyFacts) -> list[str]:
    """Each prompt in use with its version and hash, a Markdown list item each."""
    return [f"- {n} {v}: `{h}`" for n, v, h in facts.prompts]


def _study_lines(facts: StudyFacts) -> list[str]:
    out = [*_md_list(_study_counts(facts)), ""]
    if facts.provenance is not None:
        out += ["### Provenance", "", *_md_list(provenance_lines(facts.provenance)), ""]
        for table in provenance_tables(facts.provenance):
            out += markdown_table(table, level=4)
    return [*out, "### Prompts", "", *_md_list(_prompt_lines(facts))]


def _html_list(lines: list[str]) -> str:
    """Markdown list items as an HTML list, text between backticks as code."""

    def item(line: str) -> str:
        parts = line.removeprefix("- ").split("`")
        return "".join(
            f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p)
            for i, p in enumerate(parts)
        )

    return "<ul>" + "".join(f"<li>{item(line)}</li>" for line in lines) + "</ul>"


# --- Markdown ------------------------------------------------------------------------------


def markdown_table(table: Table, level: int = 3) -> list[str]:
    """A titled table, every title, cell and note shown as written."""
    out = [md_heading(level, table.title), ""]
    out.append("| " + " | ".join(map(md_cell, table.header)) + " |")
    out.append("|" + "---|" * len(table.header))
    out += ["| " + " | ".join(map(md_cell, row)) + " |" for row in table.rows]
    if table.note:
        out += ["", md_block(table.note)]
    return [*out, ""]


def _md_list(lines: list[str]) -> list[str]:
    """Lines that are Markdown list items (``- text``), their text shown as written."""
    return [f"- {md_block(line.removeprefix('- '))}" for line in lines]


def _md_paragraphs(texts: list[str]) -> list[str]:
    return [line for text in texts for line in (md_block(text), "")]


def _md_warnings(texts: list[str]) -> list[str]:
    return [line for text in texts for line in (f"**{md_inline(text.strip())}**", "")]


def render_markdown(facts: StudyFacts) -> str:
    """The report as Markdown. Names, labels and quoted text are escaped so that they render as
    written: never as HTML, links or emphasis."""
    out = [md_heading(1, f"HEART report: {facts.name}"), ""]
    warning = board_warning(facts)
    if warning:
        out += _md_warnings([warning])
    conclusions = report_conclusions(facts.boards, facts.audit)
    if conclusions:
        out += ["## What can be concluded", "", *(f"- {md_block(c)}" for c in conclusions), ""]
    if not facts.boards:
        out += ["No valid judgments yet: run `heart run` to fill the board.", ""]
    for board in facts.boards:
        out += [md_heading(2, board.title), ""]
        for table in board_tables(board, facts.latency):
            out += markdown_table(table)
    out += ["## Adversarial items", ""]
    warnings, tables, lines = adversarial_section(facts)
    out += _md_warnings(warnings)
    for table in tables:
        out += markdown_table(table)
    out += _md_paragraphs(lines)
    tables = agreement_tables(facts.agreement)
    if tables:
        out += ["## Agreement", ""]
        for table in tables:
            out += markdown_table(table)
    out += ["## Rationales", ""]
    rationales = rationale_section(facts.rationales)
    out += _md_warnings(rationales.warnings) + _md_paragraphs(rationales.lines)
    for table in rationales.tables:
        out += markdown_table(table)
    out += ["## Strategies", ""]
    section = strategy_section(facts.strategies)
    out += _md_warnings(section.warnings) + _md_paragraphs(section.lines)
    for table in section.tables:
        out += markdown_table(table)
    out += ["## Judge audit", ""]
    if facts.audit:
        out += markdown_table(audit_table(facts.audit))[2:]
    else:
        out += ["No verdicts yet.", ""]
    out += ["## Factor structure", ""]
    factors = factor_section(facts.factors, [a.judge for a in facts.audit if a.flagged])
    out += _md_warnings(factors.warnings) + _md_paragraphs(factors.lines)
    for table in factors.tables:
        out += markdown_table(table)
    out += ["## Latency and capability", ""]
    for block in latency_section(facts.latency, facts.capability).blocks:
        if isinstance(block, Table):
            out += markdown_table(block)
        elif isinstance(block, str):
            out += _md_paragraphs([block])
    out += ["## Study", "", *_study_lines(facts)]
    out += ["", "### Configuration", "", *md_fence(facts.config_text.rstrip(), "yaml"), ""]
    return "\n".join(out)


# --- HTML ----------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:76rem;color:#222;padding:0 1rem}
table{border-collapse:collapse;margin:.6rem 0}
th,td{padding:.25rem .55rem;border-bottom:1px solid #ddd}
th{text-align:left;font-weight:600;font-size:.9rem}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.flag{color:#b00020;font-weight:600}.note{color:#555;font-size:.88rem;max-width:60rem}
figure{margin:1rem 0}figure img{max-width:100%;height:auto}
nav a{margin-right:1rem}pre{background:#f6f6f6;padding:1rem;overflow:auto}
h2{border-top:2px solid #eee;padding-top:1rem;margin-top:2rem}
"""


def _numeric(text: str) -> bool:
    return bool(text) and (text[0].isdigit() or text[0] in "+-–†#") and len(text) < 24


def html_table(
    table: Table,
    row_class: Callable[[int], str] | None = None,
    heading: bool = True,
    level: int = 3,
) -> str:
    e = html.escape
    parts = [f"<h{level}>{e(table.title)}</h{level}>"] if heading else []
    parts.append(f"<table id='{e(table.key)}'><thead><tr>" if table.key else "<table><thead><tr>")
    parts += [f"<th>{e(h)}</th>" for h in table.header]
    parts.append("</tr></thead><tbody>")
    for r, row in enumerate(table.rows):
        cls = row_class(r) if row_class else ""
        parts.append(f"<tr class='{cls}'>" if cls else "<tr>")
        colours = table.colours[r] if r < len(table.colours) else []
        for c, cell in enumerate(row):
            style = f" style='background:{colours[c]}'" if c < len(colours) and colours[c] else ""
            kind = " class='num'" if _numeric(cell) else ""
            parts.append(f"<td{kind}{style}>{e(cell)}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table>")
    if table.note:
        parts.append(f"<p class='note'>{e(table.note)}</p>")
    return "".join(parts)


def _figure(png: bytes, alt: str, key: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f"<figure id='{html.escape(key)}'><img alt='{html.escape(alt)}' "
        f"src='data:image/png;base64,{data}'></figure>"
    )


def render_html(facts: StudyFacts) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>HEART report: {e(facts.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>HEART report: {e(facts.name)}</h1>",
    ]
    sections = [(b.key, b.title) for b in facts.boards] + [
        ("adversarial", "Adversarial items"), ("agreement", "Agreement"),
        ("rationales", "Rationales"), ("strategies", "Strategies"), ("audit", "Judge audit"),
        ("study", "Study"),
    ]  # fmt: skip
    sections.insert(len(sections) - 1, ("factors", "Factor structure"))
    sections.insert(len(sections) - 1, ("latency", "Latency and capability"))
    parts.append("<nav>" + "".join(f"<a href='#{e(k)}'>{e(t)}</a>" for k, t in sections) + "</nav>")
    warning = board_warning(facts)
    if warning:
        parts.append(f"<p class='flag' id='warning'>{e(warning)}</p>")
    conclusions = report_conclusions(facts.boards, facts.audit)
    if conclusions:
        parts.append("<section id='conclusions'><h2>What can be concluded</h2><ul>")
        parts += [f"<li>{e(line)}</li>" for line in conclusions]
        parts.append("</ul></section>")
    if not facts.boards:
        parts.append("<p>No valid judgments yet: run <code>heart run</code>.</p>")
    for n, board in enumerate(facts.boards):
        parts.append(f"<h2 id='{e(board.key)}'>Leaderboard: {e(board.title)}</h2>")
        tables = board_tables(board, facts.latency)
        parts.append(html_table(tables[0], heading=False))
        if n == 0:
            parts.append(_figure(heatmap_png(board), "leaderboard heatmap", f"heatmap-{board.key}"))
        parts.append(_figure(forest_png(board), "Elo forest plot", f"forest-{board.key}"))
        parts += [html_table(t) for t in tables[1:]]
    parts.append("<h2 id='adversarial'>Adversarial items</h2>")
    warnings, tables, lines = adversarial_section(facts)
    parts += [f"<p class='flag'>{e(line)}</p>" for line in warnings]
    parts += [html_table(t) for t in tables]
    if facts.adversarial is not None and facts.adversarial.kept:
        parts.append(_figure(hostility_png(facts.adversarial), "hostility by turn", "hostility"))
    parts += [f"<p>{e(line)}</p>" for line in lines]
    parts.append("<h2 id='agreement'>Agreement</h2>")
    tables = agreement_tables(facts.agreement)
    parts += [html_table(t) for t in tables] or [
        "<p>Agreement needs verdicts from at least two judges or raters on the same pairs.</p>"
    ]
    parts.append("<h2 id='rationales'>Rationales</h2>")
    rationales = rationale_section(facts.rationales)
    parts += [f"<p class='flag'>{e(w)}</p>" for w in rationales.warnings]
    parts += [f"<p>{e(line)}</p>" for line in rationales.lines]
    parts += [html_table(t) for t in rationales.tables]
    parts.append("<h2 id='strategies'>Strategies</h2>")
    section = strategy_section(facts.strategies)
    parts += [f"<p class='flag' id='strategy-warning'>{e(w)}</p>" for w in section.warnings]
    parts += [f"<p>{e(line)}</p>" for line in section.lines]
    for n, table in enumerate(section.tables):
        parts.append(html_table(table))
        if n == 0 and facts.strategies is not None and facts.strategies.families:
            png = strategy_heatmap_png(facts.strategies)
            parts.append(_figure(png, "strategy use by family", "strategy-heatmap"))
    parts.append("<h2 id='audit'>Judge audit</h2>")
    if facts.audit:
        parts.append(
            html_table(audit_table(facts.audit), lambda r: "flag" if facts.audit[r].flagged else "")
        )
    else:
        parts.append("<p>No verdicts yet.</p>")
    parts.append("<h2 id='factors'>Factor structure</h2>")
    factors = factor_section(facts.factors, [a.judge for a in facts.audit if a.flagged])
    parts += [f"<p class='flag' id='factor-warning'>{e(w)}</p>" for w in factors.warnings]
    parts += [f"<p>{e(line)}</p>" for line in factors.lines]
    for table in factors.tables:
        parts.append(html_table(table))
        if table.key == "factor-parallel" and facts.factors is not None:
            parts.append(_figure(scree(facts.factors), "scree plot", "factor-scree"))
    parts.append("<h2 id='latency'>Latency and capability</h2>")
    for block in latency_section(facts.latency, facts.capability).blocks:
        if isinstance(block, Table):
            parts.append(html_table(block))
        elif isinstance(block, FigureRef):
            parts.append(_figure(block.draw(), block.alt, block.key))
        else:
            parts.append(f"<p>{e(block)}</p>")
    parts.append("<h2 id='study'>Study</h2>")
    parts.append(_html_list(_study_counts(facts)))
    if facts.provenance is not None:
        parts.append(
            f"<h3 id='provenance'>Provenance</h3>{_html_list(provenance_lines(facts.provenance))}"
        )
        parts += [html_table(t, level=4) for t in provenance_tables(facts.provenance)]
    parts.append(f"<h3>Prompts</h3>{_html_list(_prompt_lines(facts))}")
    parts.append(f"<h3>Configuration</h3><pre>{e(facts.config_text.rstrip())}</pre>")
    parts.append("</body></html>")
    return "".join(parts)


@fewer_collections()
def write_report(facts: StudyFacts, directory: Path) -> Path:
    """Write index.html, report.md, the CSV tables and provenance.json into a new folder and
    put it in place of ``directory`` once all are written (see ``report_folder``); returns the
    HTML path."""
    with report_folder(directory, report_files=(PROVENANCE_FILE,)) as folder:
        (folder / "report.md").write_text(render_markdown(facts), encoding="utf-8")
        for name, text in csv_files(facts).items():
            (folder / name).write_text(text, encoding="utf-8")
        if facts.provenance is not None:
            (folder / PROVENANCE_FILE).write_text(facts.provenance.to_json(), encoding="utf-8")
        (folder / "index.html").write_text(render_html(facts), encoding="utf-8")
    return directory / "index.html"


# --- terminal ------------------------------------------------------------------------------

TERMINAL_COLUMNS = ["#", "system", "Elo", "95% CI", "n", "win", *AXES]


def terminal_table(facts: StudyFacts, board: Board | None = None) -> RichTable:
    """A board (default: the main one) for an 80-column terminal; the report has every column.
    Names are shown as written, never read as console markup."""
    board = board or facts.main
    title = f"HEART leaderboard: {facts.name}"
    title = f"{title} ({board.title})" if board else title
    table = RichTable(title=as_text(title, style="table.title"))
    for head in TERMINAL_COLUMNS:
        table.add_column(head, justify="left" if head == "system" else "right")
    if board is None:
        table.caption = "No valid judgments yet: run `heart run`."
        return table
    for row in board_table(board).rows:
        rank, system, _family, elo, ci, _robust, _paper, n, _c, _o, _j, win, *axes, evidence = row
        mark = " *" if evidence != "firm" and rank != "†" else ""
        table.add_row(*map(as_text, (rank, system + mark, elo, ci, n, win, *axes)))
    lb = board.leaderboard
    table.caption = (
        f"CI: {lb.rounds} bootstrap rounds over conversations; #: shared by systems whose "
        "intervals overlap, – without an interval; win and H-T: share of comparisons won"
        + ("; * preliminary" if lb.preliminary else "")
        + ("; † selection-biased, not ranked" if board.best_human else "")
    )
    return table


def terminal_conclusions(facts: StudyFacts, board: Board | None = None) -> list[str]:
    """What the terminal prints under a board: its evidence, audit, clear pairs and
    preliminary systems."""
    board = board or facts.main
    return board_conclusions(board, facts.audit) if board is not None else []


RATER_COLUMNS = [
    "judge", "source", "verdicts", "flip rate (both orders)", "first shown won", "longer won",
    "control won", "audit",
]  # fmt: skip
"""The audit's columns that say something about a person (no family, re-asks or failures)."""


def _judge_columns(audits: list[JudgeAudit]) -> RichTable:
    """LLM judges, few with many checks: one column per judge, conclusions in the caption."""
    table = RichTable(title="Judge audit (LLM judges)")
    table.add_column("check")
    for audit in audits:
        table.add_column(as_text(audit.judge), style="bold red" if audit.flagged else None)
    rows = [row[1:] for row in audit_rows(audits)]
    for i, head in enumerate(AUDIT_HEADER[1:-1]):
        table.add_row(head, *(as_text(row[i]) for row in rows))
    table.caption = as_text("\n".join(f"{a.judge}: {audit_verdict(a)}" for a in audits))
    table.caption_style = "bold"
    return table


def _rater_rows(audits: list[JudgeAudit]) -> RichTable:
    """Human raters, perhaps many: one row per rater, a word for the conclusion in the last
    column, and the reasons of those flagged or cautioned in the caption."""
    table = RichTable(title="Judge audit (human raters)")
    for head in RATER_COLUMNS:
        table.add_column("rater" if head == "judge" else head)
    at = [AUDIT_HEADER.index(head) for head in RATER_COLUMNS[:-1]]
    for audit, row in zip(audits, audit_rows(audits), strict=True):
        word = "unreliable" if audit.flagged else "caution" if audit.cautions else "ok"
        cells = [*(as_text(row[i]) for i in at), as_text(word)]
        table.add_row(*cells, style="bold red" if audit.flagged else None)
    noted = [a for a in audits if a.flagged or a.cautions]
    table.caption = as_text("\n".join(f"{a.judge}: {audit_verdict(a)}" for a in noted))
    table.caption_style = "bold"
    return table


def terminal_audit(audits: list[JudgeAudit]) -> Group:
    """The judge audit for the terminal, unreliable judges and raters in red: LLM judges one
    column each, human raters one row each. Names and cells are shown as written, never read as
    console markup."""
    judges = [a for a in audits if not a.person]
    people = [a for a in audits if a.person]
    return Group(
        *([_judge_columns(judges)] if judges else []), *([_rater_rows(people)] if people else [])
    )
