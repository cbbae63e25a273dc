"""The report's "Judges against people" section: per LLM judge, where its Elo for each system
parts from people's on the item-pairs both judged, in words and in a table; and
judge_vs_people.csv."""

from __future__ import annotations

import math

from heart.analyses import JudgeAudit, JudgeVsPeople, judges_audit
from heart.report._csv import Cell, csv_text
from heart.report._facts import StudyFacts
from heart.report._section import Block, Flag, Section
from heart.report._table import Table, interval

NO_OVERLAP = (
    "Judges against people needs people's verdicts and an LLM judge's on the same item-pairs: "
    "invite raters (`heart serve`) or import their verdicts."
)
CSV_COLUMNS = [
    "judge", "system", "elo_judge", "elo_people", "gap", "gap_low", "gap_high", "apart",
    "verdicts_judge", "verdicts_people", "conversations", "preliminary", "preliminary_reasons",
    "tau", "tau_low", "tau_high", "item_pairs", "judge_audit",
]  # fmt: skip


def tau_text(found: JudgeVsPeople) -> str:
    """Like ``τ 0.87 [0.47–1.00]``; no interval below two systems with intervals, no τ when
    one side ranks every system level."""
    if math.isnan(found.tau):
        return "τ – (one side puts every system level)"
    if math.isnan(found.tau_low):
        return f"τ {found.tau:.2f} (no interval: too few conversations)"
    return f"τ {found.tau:.2f} [{found.tau_low:.2f}–{found.tau_high:.2f}]"


def gap_table(found: JudgeVsPeople, audits: list[JudgeAudit]) -> Table:
    """One judge's Elo against people's, system by system, the largest gap first."""
    lv = f"{100 * found.level:.0f}%"
    rows = [
        [
            s.system, f"{s.elo_judge:.0f}", f"{s.elo_people:.0f}", f"{s.gap:+.0f}",
            interval(s.gap_low, s.gap_high), "yes" if s.apart else "no", str(s.verdicts_judge),
            str(s.verdicts_people), str(s.conversations),
            "preliminary: " + "; ".join(s.preliminary) if s.preliminary else "firm",
        ]
        for s in found.systems
    ]  # fmt: skip
    note = (
        f"{found.sentence()} Orders: {tau_text(found)}. Both Elo columns are fitted as the boards "
        "fit theirs (strength weights, ties half, mean 1500 over the systems compared), on the "
        f"{found.item_pairs} item-pairs both judged; the gap's interval refits both sides on the "
        f"same resampled conversations ({found.rounds} rounds). A judge that lifts one system "
        "lowers the others a little, as every Elo is measured from the mean. Judge audit: "
        f"{judges_audit(found.judges, audits).verdict}."
    )
    return Table(
        f"{found.judge} against people",
        ["system", "Elo (judge)", "Elo (people)", "gap", f"{lv} CI of the gap", "beyond noise",
         "judge verdicts", "people's verdicts", "conversations", "evidence"],
        rows, note, f"judge-vs-people-{found.judge}",
    )  # fmt: skip


def judges_people_section(facts: StudyFacts) -> Section:
    found = facts.judges_vs_people
    if not found:
        return Section("judges-vs-people", "Judges against people", empty=NO_OVERLAP)
    blocks: list[Block] = []
    for item in found:
        if item.apart:
            audit = judges_audit(item.judges, facts.audit).verdict
            told = " The judge audit flags this judge." if audit == "flagged" else ""
            blocks.append(Flag(item.sentence() + told, f"judge-apart-{item.judge}"))
    if not blocks:
        blocks.append(
            "No LLM judge rates any system differently from people beyond noise, on the "
            "item-pairs both judged."
        )
    blocks += [gap_table(item, facts.audit) for item in found]
    return Section("judges-vs-people", "Judges against people", blocks)


def judges_people_files(facts: StudyFacts) -> dict[str, str]:
    """judge_vs_people.csv: a row per judge and system (none without an overlap)."""
    if not facts.judges_vs_people:
        return {}
    rows: list[list[Cell]] = [
        [
            found.judge, s.system, s.elo_judge, s.elo_people, s.gap, s.gap_low, s.gap_high,
            s.apart, s.verdicts_judge, s.verdicts_people, s.conversations, bool(s.preliminary),
            "; ".join(s.preliminary), found.tau, found.tau_low, found.tau_high, found.item_pairs,
            judges_audit(found.judges, facts.audit).verdict,
        ]
        for found in facts.judges_vs_people
        for s in found.systems
    ]  # fmt: skip
    return {"judge_vs_people.csv": csv_text(CSV_COLUMNS, rows)}
