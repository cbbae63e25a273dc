"""The report's Judge audit section: every LLM judge and human rater held to the same rules
(flip rate, position, length, the control, own family), its table and judge_audit.csv; then
the people who judged in the web app, each with their quality measures, flags and decision."""

from __future__ import annotations

from heart.analyses import JudgeAudit
from heart.people import (
    APPROVE,
    FLOOR_WORDS_PER_MINUTE,
    MIN_VERDICTS,
    QUALITY_COLUMNS,
    RATER_LEVEL,
    RaterQuality,
    quality_cells,
)
from heart.report._csv import SHARE_COLUMNS, Cell, csv_text, share_cells
from heart.report._facts import StudyFacts
from heart.report._section import Block, Section
from heart.report._table import Table, conclusion, share_text

AUDIT_CHECKS = ("flip", "first_position", "longer", "control", "own_family")
NO_VERDICTS = (
    "No verdicts yet: the audit checks every judge and rater once `heart judge` or people in "
    "the web app have given verdicts."
)

AUDIT_HEADER = [
    "judge", "source", "family", "verdicts", "flip rate (both orders)", "first shown won",
    "longer won", "control won", "own family won", "re-asked", "failed", "audit",
]  # fmt: skip

AUDIT_NOTE = (
    "LLM judges and human raters, collected by heart or imported, held to the same rules. Shares "
    "of verdicts with 95% Wilson intervals. An unbiased judge is near 50% for first shown, "
    "longer and own family, and near 0% flip rate; the control should rarely win. A tie ("
    '"about the same") favours neither reply: it takes no part in the shares, and verdicts '
    "counts it. The flip rate counts pairs judged in both orders with a winner both times (LLM "
    "judges need pairs.both_orders: true); own family is an LLM judge's (judging.own_family: "
    "allow). A judge or rater is flagged unreliable when the first-shown share is beyond 70/30 "
    "with its interval clear of 50%, or when the flip rate's interval lies above 25%."
)


def audit_source(audit: JudgeAudit) -> str:
    """Who gave the verdicts and where they came from: "LLM judge", "person, imported", ..."""
    who = "person" if audit.person else "LLM judge"
    imported, ok = audit.counts.imported, audit.counts.ok
    if not imported:
        return who
    return f"{who}, imported" if imported >= ok else f"{who}, {imported} of {ok} imported"


def audit_verdicts(audit: JudgeAudit) -> str:
    """The verdicts counted, with the ties among them: "40 (6 ties)"."""
    ties = f" ({audit.ties} tie{'s' * (audit.ties != 1)})" if audit.ties else ""
    return f"{audit.verdicts}{ties}"


def audit_verdict(audit: JudgeAudit) -> str:
    """The audit's conclusion on one judge, in words."""
    return conclusion(audit.flagged, audit.problems, audit.cautions)


def audit_rows(audits: list[JudgeAudit]) -> list[list[str]]:
    """One row per judge: who it is, its shares with intervals, its answer health, and the
    verdict."""

    return [
        [
            a.judge, audit_source(a), a.family, audit_verdicts(a), share_text(a.flip),
            share_text(a.first_position), share_text(a.longer), share_text(a.control),
            share_text(a.own_family),
            str(a.counts.reasked), str(a.counts.failed), audit_verdict(a),
        ]
        for a in audits
    ]  # fmt: skip


def audit_table(audits: list[JudgeAudit]) -> Table:
    """Every judge and rater, LLM judges first, those flagged unreliable marked."""
    return Table(
        "",
        AUDIT_HEADER,
        audit_rows(audits),
        AUDIT_NOTE,
        "judge-audit",
        flagged=[a.flagged for a in audits],
    )


AUDIT_COLUMNS = [
    "judge", "family", "source", "imported", "verdicts", "ties", "both_orders",
    *(f"{check}_{col}" for check in AUDIT_CHECKS for col in SHARE_COLUMNS),
    "reasked", "failed", "flagged", "problems", "cautions",
]  # fmt: skip


def audit_csv_rows(audits: list[JudgeAudit]) -> list[list[Cell]]:
    """One row per judge or rater: its source (llm or human), verdicts imported, verdicts
    counted with the ties among them, pairs seen in both orders, then every share."""
    return [
        [
            a.judge, a.family, a.source, a.counts.imported, a.verdicts, a.ties, a.both_orders,
            *(cell for check in AUDIT_CHECKS for cell in share_cells(getattr(a, check))),
            a.counts.reasked, a.counts.failed, a.flagged, "; ".join(a.problems),
            "; ".join(a.cautions),
        ]
        for a in audits
    ]  # fmt: skip


RATER_NOTE = (
    "People who judged in the web app, each measured as the audit measures judges: the share "
    "of verdicts won by the reply shown first, median seconds per judgment against the time its "
    f"text takes to read at {FLOOR_WORDS_PER_MINUTE} words a minute (the floor), judgments "
    "faster than that, the longest run of one answer, agreement with the other raters' "
    f"majority on shared pairs and Cohen's κ, and the checks failed. Shares carry "
    f"{100 * RATER_LEVEL:g}% Wilson intervals; no flag is raised on fewer than {MIN_VERDICTS} "
    "verdicts. The flags that exclude are set by people.exclude_flags and "
    "people.checks_to_exclude; gold pairs never count as attention checks. Decision, by "
    "Prolific's rules: ask to return only after two failed attention checks; keep out of the "
    "analyses (and approve) for other flags that exclude; approve everyone else."
)


def rubric_note(shown: bool) -> str:
    """Whether the study's raters saw the HEART rubric before judging."""
    if shown:
        return (
            "These raters read the five HEART axes before judging (people.show_rubric), so "
            "their verdicts are not independent of the rubric the LLM judges follow."
        )
    return (
        "These raters judged without the HEART rubric (people.show_rubric is off), as the "
        "HEART design has it."
    )


def rater_table(raters: list[RaterQuality], rubric_shown: bool = False) -> Table:
    """Every person who judged, with their measures, flags (each with its reason) and the
    decision; those kept out or asked to return marked."""
    judged = [q for q in raters if q.measures.verdicts or q.measures.timed]
    rows = [
        [
            q.rater, str(q.counted), *quality_cells(q.measures),
            "; ".join(f"{f.name}{' (excludes)' if f.excludes else ''}: {f.reason}"
                      for f in q.flags) or "none",
            f"{q.decision}: {q.decision_reason}",
        ]
        for q in judged
    ]  # fmt: skip
    return Table(
        "Human raters: quality per rater",
        ["rater", "counted", *QUALITY_COLUMNS, "flags", "decision"],
        rows,
        f"{RATER_NOTE} {rubric_note(rubric_shown)}",
        "rater-quality",
        flagged=[q.decision != APPROVE for q in judged],
    )


def audit_section(facts: StudyFacts) -> Section:
    if not facts.audit:
        return Section("audit", "Judge audit", empty=NO_VERDICTS)
    tables: list[Block] = [audit_table(facts.audit)]
    if any(q.measures.verdicts or q.measures.timed for q in facts.raters):
        tables.append(rater_table(facts.raters, facts.rubric_shown))
    return Section("audit", "Judge audit", tables)


def audit_files(facts: StudyFacts) -> dict[str, str]:
    return {"judge_audit.csv": csv_text(AUDIT_COLUMNS, audit_csv_rows(facts.audit))}
