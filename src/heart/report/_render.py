"""Rendering the report: Markdown, one self-contained HTML file, CSV, and the terminal table."""

from __future__ import annotations

import csv
import html
import io
import math
from pathlib import Path

from rich.table import Table

from heart.analyses import JudgeAudit, Share
from heart.report._facts import StudyFacts
from heart.types import Axis

AXES = [a.value for a in Axis]


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.0f}%"


def board_rows(facts: StudyFacts) -> list[list[str]]:
    """The board as text cells: rank, system, family, Elo, intervals, n, win rates."""
    if facts.board is None:
        return []
    rows = []
    for rank, s in enumerate(facts.board.standings, 1):
        rows.append(
            [
                str(rank),
                s.system,
                facts.families.get(s.system, ""),
                f"{s.elo:.0f}",
                f"{s.low:.0f}–{s.high:.0f}",
                f"{s.paper_low:.0f}–{s.paper_high:.0f}",
                str(s.comparisons),
                _pct(s.win_rate),
                *(_pct(s.axis_win_rates[a]) for a in AXES),
            ]
        )
    return rows


def board_header(facts: StudyFacts) -> list[str]:
    level = f"{100 * facts.board.level:.0f}%" if facts.board else "95%"
    return [
        "#",
        "system",
        "family",
        "Elo",
        f"{level} CI (conversation bootstrap)",
        f"{level} CI (paper, SE=√(1/n))",
        "comparisons",
        "win rate",
        *AXES,
    ]


TERMINAL_COLUMNS = ["#", "system", "Elo", "95% CI", "n", "win", *AXES]


def terminal_table(facts: StudyFacts) -> Table:
    """The board for an 80-column terminal (the report has every column)."""
    table = Table(title=f"HEART leaderboard: {facts.name} (LLM judges)")
    for head in TERMINAL_COLUMNS:
        table.add_column(head, justify="left" if head == "system" else "right")
    for row in board_rows(facts):
        rank, system, _family, elo, ci, _paper, n, win, *axes = row
        table.add_row(rank, system, elo, ci, n, win, *axes)
    if facts.board is not None:
        table.caption = (
            f"CI: {facts.board.rounds} bootstrap rounds over conversations; "
            "win and H-T: share of comparisons won"
        )
    return table


AUDIT_HEADER = [
    "judge",
    "family",
    "verdicts",
    "flip rate (both orders)",
    "first shown won",
    "longer won",
    "control won",
    "own family won",
    "re-asked",
    "failed",
    "audit",
]


def audit_verdict(audit: JudgeAudit) -> str:
    """The audit's conclusion on one judge, in words."""
    if audit.flagged:
        return "UNRELIABLE: " + "; ".join(audit.problems) + "."
    if audit.cautions:
        return "Caution: " + "; ".join(audit.cautions) + "."
    return "no problem found"


def audit_rows(audits: list[JudgeAudit]) -> list[list[str]]:
    """One row per judge: its shares with intervals, its answer health, and the verdict."""

    def share(s: Share | None) -> str:
        return s.text() if s is not None else "–"

    return [
        [
            a.judge,
            a.family,
            str(a.verdicts),
            share(a.flip),
            share(a.first_position),
            share(a.longer),
            share(a.control),
            share(a.own_family),
            str(a.counts.reasked),
            str(a.counts.failed),
            audit_verdict(a),
        ]
        for a in audits
    ]


AUDIT_NOTE = (
    "Shares of verdicts with 95% Wilson intervals. An unbiased judge is near 50% for first "
    "shown, longer and own family, and near 0% flip rate; the control should rarely win. Flip "
    "rate needs pairs.both_orders: true, own family needs judging.own_family: allow. A judge is "
    "flagged unreliable when the first-shown share is beyond 70/30 with its interval clear of "
    "50%, or when the flip rate's interval lies above 25%."
)


def terminal_audit(audits: list[JudgeAudit]) -> Table:
    """The judge audit for the terminal: one column per judge, unreliable ones in red, and each
    judge's conclusion in the caption."""
    table = Table(title="Judge audit (LLM judges)")
    table.add_column("check")
    for audit in audits:
        table.add_column(audit.judge, style="bold red" if audit.flagged else None)
    rows = [row[1:] for row in audit_rows(audits)]
    for i, head in enumerate(AUDIT_HEADER[1:-1]):
        table.add_row(head, *(row[i] for row in rows))
    table.caption = "\n".join(f"{a.judge}: {audit_verdict(a)}" for a in audits)
    table.caption_style = "bold"
    return table


def board_warning(facts: StudyFacts) -> str | None:
    """What a reader must know before the numbers: which judges the audit flags."""
    flagged = [a.judge for a in facts.audit if a.flagged]
    if not flagged:
        return None
    if len(flagged) == len(facts.audit):
        return (
            "Warning: every verdict on this board comes from judges the judge audit flags as "
            "unreliable; read it as a test of the pipeline, not as a ranking."
        )
    return f"Warning: the judge audit flags {', '.join(flagged)} as unreliable."


def render_markdown(facts: StudyFacts) -> str:
    out = [f"# HEART report: {facts.name}", ""]
    if facts.board is None:
        out += ["No valid judgments yet: run `heart run` to fill the board.", ""]
    else:
        b = facts.board
        out += [
            f"{b.comparisons} LLM judgments over {b.conversations} conversations; Elo from a "
            f"strength-weighted Bradley–Terry fit; intervals from {b.rounds} bootstrap rounds "
            "that resample conversations, beside the paper's asymptotic interval.",
            "",
        ]
        warning = board_warning(facts)
        if warning:
            out += [f"**{warning}**", ""]
        if b.separated:
            out += [
                "Note: some system won or lost every comparison (perfect separation); the "
                "fit used a weak ridge penalty so the ratings stay finite.",
                "",
            ]
        header = board_header(facts)
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(r) + " |" for r in board_rows(facts)]
        out.append("")
    out += ["## Judge audit", ""]
    if facts.audit:
        out.append("| " + " | ".join(AUDIT_HEADER) + " |")
        out.append("|" + "---|" * len(AUDIT_HEADER))
        out += ["| " + " | ".join(r) + " |" for r in audit_rows(facts.audit)]
        out += ["", AUDIT_NOTE]
    else:
        out.append("No LLM judgments yet.")
    out += ["", "## Study", ""]
    out += ["- items: " + ", ".join(f"{k} {v}" for k, v in sorted(facts.items.items()))]
    out += [f"- pairs: {facts.pairs}"]
    for system, (ok, failed) in facts.completions.items():
        out.append(f"- completions by `{system}`: {ok} ok, {failed} failed")
    for judge, (ok, failed) in facts.judgments.items():
        out.append(
            f"- judgments by `{judge}`: {ok} ok, {failed} failed (failed ones are never counted)"
        )
    out += ["", "### Prompts", ""]
    out += [f"- {n} {v}: `{h}`" for n, v, h in facts.prompts]
    out += ["", "### Configuration", "", "```yaml", facts.config_text.rstrip(), "```", ""]
    return "\n".join(out)


CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}th,td{padding:.3rem .6rem;border-bottom:1px solid #ddd}
td.num{text-align:right;font-variant-numeric:tabular-nums}.flag{color:#b00020;font-weight:600}
pre{background:#f6f6f6;padding:1rem;overflow:auto}
"""


def render_html(facts: StudyFacts) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>HEART report: {e(facts.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>HEART report: {e(facts.name)}</h1>",
    ]
    if facts.board is None:
        parts.append("<p>No valid judgments yet: run <code>heart run</code>.</p>")
    else:
        warning = board_warning(facts)
        if warning:
            parts.append(f"<p class='flag'>{e(warning)}</p>")
        parts.append("<table id='leaderboard'><thead><tr>")
        parts += [f"<th>{e(h)}</th>" for h in board_header(facts)]
        parts.append("</tr></thead><tbody>")
        for row in board_rows(facts):
            cells = [
                f"<td>{e(c)}</td>" if i in (1, 2) else f"<td class='num'>{e(c)}</td>"
                for i, c in enumerate(row)
            ]
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
    parts.append("<h2>Judge audit</h2><table id='judge-audit'><thead><tr>")
    parts += [f"<th>{e(h)}</th>" for h in AUDIT_HEADER]
    parts.append("</tr></thead><tbody>")
    for audit, row in zip(facts.audit, audit_rows(facts.audit), strict=True):
        cls = " class='flag'" if audit.flagged else ""
        parts.append(f"<tr{cls}>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    parts.append(f"</tbody></table><p>{e(AUDIT_NOTE)}</p>")
    parts.append("<h2>Study</h2>")
    md = render_markdown(facts)
    study_part = md.split("## Study", 1)[1]
    parts.append(f"<pre>{e(study_part.strip())}</pre></body></html>")
    return "".join(parts)


def render_csv(facts: StudyFacts) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(board_header(facts))
    writer.writerows(board_rows(facts))
    return buffer.getvalue()


def write_report(facts: StudyFacts, directory: Path) -> Path:
    """Write report.md, index.html and leaderboard.csv into ``directory``; returns the HTML path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.md").write_text(render_markdown(facts), encoding="utf-8")
    (directory / "leaderboard.csv").write_text(render_csv(facts), encoding="utf-8")
    path = directory / "index.html"
    path.write_text(render_html(facts), encoding="utf-8")
    return path
