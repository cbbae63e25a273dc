"""The report's Rationales section: which themes judges and raters bring up, whether humans and
LLM judges bring up the same ones when they agree, which themes go with the verdict, and how far
an LLM coder agrees with the rule-based one; its tables and CSV files (every code with the
phrase behind it)."""

from __future__ import annotations

import math

from heart.analyses import MIN_FIT, CoderReport, RationaleReport
from heart.rationales import Theme
from heart.report._facts import StudyFacts
from heart.report._rationale_files import rationale_csv
from heart.report._section import Section
from heart.report._table import Table, num, pct
from heart.stats import Share

SOURCE_NAMES = {"llm": "LLM judges", "human": "human raters"}
NO_CODES = (
    "No rationale is coded yet: run `heart rationales` (or `heart run`) once judgments with "
    "rationales are stored."
)
LITERAL_NOTE = (
    "The rule-based coder is transparent but literal: it codes a theme wherever a phrase of the "
    "codebook appears, and every code keeps the phrase that triggered it and the words that "
    "placed it on a reply (rationale-codes.csv); it misses paraphrases and can misread irony."
)


def _text(share: Share | None) -> str:
    return share.text() if share is not None and share.n else "–"


def _kind(theme: Theme) -> str:
    return ("micro-skill, " if theme.skill else "") + theme.polarity


def _coverage(report: RationaleReport, coder: CoderReport) -> str:
    parts = [
        f"{coder.coded.get(source, 0)} of {report.rationales.get(source, 0)} rationales of {name}"
        for source, name in SOURCE_NAMES.items()
        if report.rationales.get(source, 0) or coder.coded.get(source, 0)
    ]
    failed = f"; {coder.failed} failed (asked again on the next run)" if coder.failed else ""
    book = report.codebook
    return (
        f"Coded by {coder.coder} with codebook {book.version} ({len(book.themes)} themes, sha256 "
        f"{book.hash[:12]}…): {', '.join(parts) or 'none'}{failed}."
    )


def _themes_table(report: RationaleReport, coder: CoderReport) -> Table:
    sources = [s for s in SOURCE_NAMES if s in coder.rates]
    rows = []
    for t, theme in enumerate(report.codebook.themes):
        phrases = ", ".join(f'"{p}" ×{n}' for p, n in coder.phrases.get(theme.id, []))
        rows.append(
            [theme.name, theme.axis.value, _kind(theme),
             *(_text(coder.rates[s][t]) for s in sources), phrases or "–"]
        )  # fmt: skip
    lv = f"{100 * report.level:.0f}%"
    return Table(
        "Themes in rationales",
        ["theme", "axis", "kind", *(SOURCE_NAMES[s] for s in sources), "phrases found most"],
        rows,
        "Share of each source's coded rationales that bring the theme up (as praise, fault or "
        f"lack), with a {lv} interval from resampling conversations; the phrases that "
        "triggered it most often.",
        "rationale-themes",
    )


def _comention_table(report: RationaleReport, coder: CoderReport) -> Table | None:
    c = coder.comention
    if c is None:
        return None
    rows = [
        ["all themes (pooled)", _text(c.overall), pct(c.chance_overall),
         num(c.kappa_overall, 2), "", ""]
    ]  # fmt: skip
    for t, theme in enumerate(report.codebook.themes):
        rows.append(
            [theme.name, _text(c.themes[t]), pct(float(c.chance[t])), num(float(c.kappa[t]), 2),
             pct(float(c.rate_first[t])), pct(float(c.rate_second[t]))]
        )  # fmt: skip
    lv = f"{100 * report.level:.0f}%"
    note = (
        f"{coder.paired} of the {coder.agreed_pairs} pairs where the human majority and the LLM-"
        "ensemble majority pick the same reply carry coded rationales from both. On each, a group "
        "mentions a theme when a rationale of any of its members who voted for that reply does. "
        f"Share of those pairs (pooled: of pairs × themes) where both mention or both omit the "
        f"theme, with a {lv} interval from resampling conversations; by chance: the same when "
        "each pair's LLM rationales are swapped for those of a random pair of another "
        f"conversation ({c.chance_rounds} seeded draws); Cohen's κ corrects for chance (pooled: "
        "over every pair and theme). The paper reports 68% co-mention or co-omission."
    )
    return Table(
        "Humans and LLM judges on agreed pairs",
        ["theme", "both mention or both omit", "by chance", "Cohen's κ", "humans mention",
         "LLM judges mention"],
        rows, note, "rationale-comention",
    )  # fmt: skip


def _odds(odds: float, low: float, high: float) -> str:
    if math.isnan(odds):
        return "–"
    return f"{odds:.2f} [{low:.2f}–{high:.2f}]"


def _verdicts_table(report: RationaleReport, coder: CoderReport) -> Table | None:
    names = {t.id: t for t in report.codebook.themes}
    rows = [
        [SOURCE_NAMES.get(link.source, link.source), names[link.theme].name,
         names[link.theme].polarity, str(link.n), pct(link.won / link.n) if link.n else "–",
         _odds(link.odds, link.low, link.high), num(link.p_adjusted, 3), link.note]
        for link in coder.links
        if link.n
    ]  # fmt: skip
    if not rows:
        return None
    lv = f"{100 * report.level:.0f}%"
    note = (
        "On judgments whose rationale says which reply a theme is about (a reply said to lack "
        "it counts for the other reply) and that name a winner: how often that reply won, and "
        "the odds that it wins at equal reply lengths, balanced positions and a rationale of "
        "average length (logistic regression on the length difference, the position shown and "
        f"the rationale's length; {lv} intervals clustered by conversation; p-values for odds "
        "of 1, adjusted by Benjamini–Hochberg across the themes of a source). Strengths should "
        "sit above 1 and weaknesses below. Not fitted ('–') with fewer than "
        f"{MIN_FIT} judgments, one outcome only, or separated outcomes."
    )
    return Table(
        "Themes and the verdict",
        ["judges", "theme", "kind", "judgments", "its reply won", "adjusted odds", "p (BH)",
         "note"],
        rows, note, "rationale-verdicts",
    )  # fmt: skip


def _coders_table(report: RationaleReport) -> Table | None:
    a = report.agreement
    if a is None:
        return None
    rows = [["all themes (pooled)", _text(a.overall), num(a.kappa_overall, 2)]]
    rows += [
        [theme.name, _text(a.themes[t]), num(a.kappa[t], 2)]
        for t, theme in enumerate(report.codebook.themes)
    ]
    return Table(
        "LLM coder against the rule-based coder",
        ["theme", "both find it or both do not", "Cohen's κ"],
        rows,
        f"{a.rationales} rationales coded by both {a.coder} and {a.reference}. A low κ on a "
        "theme says the two coders read it differently: look at its codes before trusting "
        "either.",
        "rationale-coders",
    )


def rationale_section(facts: StudyFacts) -> Section:
    """The section's introduction and tables, or how to code rationales."""
    section = Section("rationales", "Rationales")
    report = facts.rationales
    if report is None or report.primary is None:
        section.empty = NO_CODES
        return section
    coder = report.primary
    lines: list[str] = []
    lines.append(_coverage(report, coder))
    lines.append(LITERAL_NOTE)
    if report.llm_coder is not None:
        a = report.agreement
        if a is None:
            lines.append(
                f"The LLM coder {report.llm_coder} has coded no rationale the rule-based coder "
                "coded: run `heart rationales`."
            )
        else:
            lines.append(
                f"The LLM coder {a.coder} agrees with the rule-based coder on {_text(a.overall)} "
                f"theme decisions over {a.rationales} rationales (Cohen's κ "
                f"{num(a.kappa_overall, 2)}); see the table per theme below."
            )
    for other in report.coders[1:]:
        if other.comention is not None:
            c = other.comention
            lines.append(
                f"With the codes of {other.coder}: both mention or both omit a theme on "
                f"{_text(c.overall)} pair-themes of agreed pairs (by chance "
                f"{pct(c.chance_overall)}; κ {num(c.kappa_overall, 2)})."
            )
    if not coder.coded.get("human"):
        lines.append(
            "No human rationales are coded: the co-mention of themes by humans and LLM judges "
            "needs pairs judged by both, with rationales (collect them in the web app, or import "
            "judgments with a rationale column). Below: the themes of the LLM judges' rationales."
        )
    elif coder.comention is None:
        lines.append(
            "No pair has a human majority and an LLM-ensemble majority that agree and coded "
            "rationales from both, so co-mention cannot be measured yet."
        )
    tables = [_themes_table(report, coder)]
    tables += [
        t
        for t in (
            _comention_table(report, coder),
            _verdicts_table(report, coder),
            _coders_table(report),
        )
        if t is not None
    ]
    section.blocks = [*lines, *tables]
    return section


# --- CSV ---


def rationale_files(facts: StudyFacts) -> dict[str, str]:
    """The rationale CSV files (``rationale_csv``), as the report's worker made them when it
    did."""
    made = facts.rationale_files
    return made if made is not None else rationale_csv(facts.rationales)
