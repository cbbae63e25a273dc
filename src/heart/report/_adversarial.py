"""The report's Adversarial items section: what became of the rewrites per escalation profile,
the hostility rater check with its figure, and each system's Elo on regular against adversarial
items; its tables, figure and CSV files."""

from __future__ import annotations

from functools import partial

import numpy as np

from heart.analyses import (
    MIN_SEPARATION,
    MIN_SPEARMAN,
    SOURCE_TITLES,
    AdversarialReport,
    RaterCheck,
    SubsetComparison,
)
from heart.report._csv import SHARE_COLUMNS, Cell, csv_text, share_cells
from heart.report._facts import StudyFacts
from heart.report._figures import new_figure, png_bytes
from heart.report._section import Block, Figure, Flag, Section
from heart.report._table import Table, conclusion, interval, num, share_text

NO_ADVERSARIAL = (
    "This study has no adversarial items: set items.adversarial (20 in a full study) and run "
    "`heart items adversarial`."
)


ADVERSARIAL_NOTE = (
    "A rewrite becomes an item only if it alternates supporter and seeker, opens with the "
    "supporter's greeting, keeps every supporter turn word for word and the number of seeker "
    "turns, has at least 4 turns, passes the safety screen, ends on a seeker turn rated 8 or "
    "more, and keeps every rated seeker turn within the tolerance of its target. A rewrite that "
    "fails is asked again with the reasons (items.rewrite_retries), then rejected with the "
    "reasons of its last try. ESConv's original reply answered the calm seeker of the source "
    "conversation, so the ESConv original takes no part in adversarial items."
)


def rater_verdict(check: RaterCheck) -> str:
    """The hostility rater check's conclusion, in words."""
    return conclusion(check.flagged, check.problems, check.cautions)


def adversarial_tables(report: AdversarialReport) -> list[Table]:
    """Per escalation profile what became of the rewrites, and the hostility rater check."""
    outcome = [
        [p.profile, str(p.rewritten), str(p.kept), str(p.rewritten - p.kept),
         ", ".join(f"{why} {n}" for why, n in p.rejected.items()) or "–"]
        for p in report.profiles
    ]  # fmt: skip
    check = report.rater
    rater = [
        ["rewritten seeker turns rated", str(check.turns)],
        ["mean |rating − target|", num(check.mean_error, 1)],
        ["Spearman ρ of ratings with targets", num(check.spearman, 2)],
        ["mean rating of the rewritten turns", num(check.rewritten_mean, 1)],
        ["mean rating of the original, calm turns", num(check.original_mean, 1)],
        ["conclusion", rater_verdict(check)],
    ]
    return [
        Table(
            "Adversarial items by escalation profile",
            ["profile", "rewritten", "kept", "rejected", "reasons (last try)"],
            outcome,
            ADVERSARIAL_NOTE,
            "adversarial-items",
        ),
        Table(
            "Hostility rater check",
            ["what", "value"],
            rater,
            "The rater is the only check that a rewrite is as hostile as asked. It should rate "
            "the rewritten turns near their targets and well above the original seeker turns "
            f"(by {MIN_SEPARATION:g} or more, with Spearman ρ of {MIN_SPEARMAN:g} or more and "
            f"a mean miss within the tolerance of {check.tolerance}); otherwise its ratings, and "
            "the items it let through, are not evidence of hostility.",
            "hostility-rater",
        ),
    ]


def subset_tables(comparison: SubsetComparison) -> list[Table]:
    """Each system's Elo on regular and on adversarial items, the shift, and agreement."""
    lv = f"{100 * comparison.level:.0f}%"
    rows = [
        [s.system, f"{s.regular:.0f}", f"{s.adversarial:.0f}", f"{s.shift:+.0f}",
         interval(s.low, s.high), str(s.rank_regular), str(s.rank_adversarial)]
        for s in comparison.shifts
    ]  # fmt: skip
    changes = "changes" if comparison.order_changes else "does not change"
    note = (
        "Elo on each subset, centred on the systems both rank (mean 1500); shift = adversarial "
        f"minus regular, with a {lv} interval from resampling conversations "
        f"({comparison.rounds} rounds, the same draws for both subsets). Kendall τ between the "
        f"two orders: {num(comparison.kendall_tau, 2)}; the order {changes}."
    )
    if comparison.only_regular:
        note += f" On regular items only: {', '.join(comparison.only_regular)}."
    title = SOURCE_TITLES[comparison.source]
    tables = [
        Table(
            f"Regular against adversarial items: {title}",
            [
                "system",
                "Elo regular",
                "Elo adversarial",
                "shift",
                f"{lv} CI",
                "rank regular",
                "rank adversarial",
            ],
            rows,
            note,
            f"subsets-{comparison.source}",
        )
    ]
    if any(share is not None for share in comparison.agreement.values()):
        tables.append(
            Table(
                "Human–LLM agreement by subset",
                ["items", "agreement"],
                [[subset, share_text(share)] for subset, share in comparison.agreement.items()],
                "Human majority against the LLM ensemble's majority on the pairs both voted on.",
                "agreement-subsets",
            )
        )
    return tables


def adversarial_section(facts: StudyFacts) -> Section:
    """Warnings to read first, the tables and the hostility figure, and notes after them."""
    section = Section("adversarial", "Adversarial items")
    report = facts.adversarial
    if report is None and not facts.subsets:
        section.empty = NO_ADVERSARIAL
        return section
    blocks: list[Block] = []
    if report is None:
        blocks.append(NO_ADVERSARIAL)
    else:
        if report.rater.flagged:
            blocks.append(
                Flag(
                    "Warning: the hostility rater is unreliable ("
                    + "; ".join(report.rater.problems)
                    + "), so the kept items are not shown to be as hostile as their profiles ask."
                )
            )
        blocks += adversarial_tables(report)
    for comparison in facts.subsets:
        blocks += subset_tables(comparison)
    if report is not None and report.kept:
        blocks.append(Figure("hostility", "hostility by turn", partial(hostility_png, report)))
    if report is not None and not facts.subsets:
        blocks.append(
            "No board compares regular and adversarial items yet: that needs verdicts on both "
            "subsets from the same judges."
        )
    section.blocks = blocks
    return section


def adversarial_files(facts: StudyFacts) -> dict[str, str]:
    """The adversarial stage per profile, the hostility rater check, and regular against
    adversarial Elo and agreement per judge source."""
    files = {}
    report = facts.adversarial
    if report is not None:
        rows: list[list[Cell]] = [
            [p.profile, p.rewritten, p.kept, p.rewritten - p.kept,
             "; ".join(f"{why}={n}" for why, n in p.rejected.items())]
            for p in report.profiles
        ]  # fmt: skip
        files["adversarial.csv"] = csv_text(
            ["profile", "rewritten", "kept", "rejected", "reasons"], rows
        )
        c = report.rater
        files["hostility_rater.csv"] = csv_text(
            ["turns", "mean_error", "spearman", "rewritten_mean", "original_mean", "tolerance",
             "flagged", "problems"],
            [[c.turns, c.mean_error, c.spearman, c.rewritten_mean, c.original_mean, c.tolerance,
              c.flagged, "; ".join(c.problems)]],
        )  # fmt: skip
    if facts.subsets:
        shifts: list[list[Cell]] = [
            [cmp.source, s.system, s.regular, s.adversarial, s.shift, s.low, s.high,
             s.rank_regular, s.rank_adversarial]
            for cmp in facts.subsets
            for s in cmp.shifts
        ]  # fmt: skip
        files["subsets.csv"] = csv_text(
            ["judges", "system", "elo_regular", "elo_adversarial", "shift", "low", "high",
             "rank_regular", "rank_adversarial"],
            shifts,
        )  # fmt: skip
        agreement: list[list[Cell]] = [
            [subset, *share_cells(share)] for subset, share in facts.subsets[0].agreement.items()
        ]
        files["agreement-subsets.csv"] = csv_text(["items", *SHARE_COLUMNS], agreement)
    return files


def hostility_png(report: AdversarialReport) -> bytes:
    """One panel per escalation profile with kept items: each item's target hostility per
    seeker turn (line) and the rater's score (points)."""
    profiles = [p.profile for p in report.profiles if p.kept]
    fig = new_figure(3.2 * len(profiles) + 0.6, 2.9)
    axes = np.atleast_1d(fig.subplots(1, len(profiles), sharey=True, squeeze=False)[0])
    for ax, profile in zip(axes, profiles, strict=True):
        for n, kept in enumerate(k for k in report.kept if k.profile == profile):
            turns = np.arange(1, len(kept.targets) + 1)
            colour = f"C{n % 10}"
            ax.plot(turns, kept.targets, color=colour, lw=1.5, alpha=0.6)
            ax.plot(turns, kept.ratings, "o", color=colour, ms=4)
        ax.set_title(profile, fontsize=9)
        ax.set_xlabel("seeker turn", fontsize=8)
        longest = max(len(k.targets) for k in report.kept if k.profile == profile)
        ax.set_xticks(range(1, longest + 1))
        ax.set_ylim(-0.5, 10.5)
        ax.grid(color="#eeeeee")
    axes[0].set_ylabel("hostility (line: target, dots: rated)", fontsize=8)
    fig.suptitle("Kept adversarial items: target against rated hostility", fontsize=10, y=1.04)
    return png_bytes(fig)
