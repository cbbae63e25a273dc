"""The report's Strategies section: usage by family and by system with its heatmap, diversity,
humans against each model family, and the classifier against its two references; its tables,
figure and CSV files."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from heart.analyses import (
    ALL_ITEMS,
    ESCONV_UNMAPPED,
    MIN_MACRO_F1,
    MIN_REPLIES,
    ClassifierF1,
    StrategyReport,
    StrategyUse,
    esconv_labels,
)
from heart.report._colours import usage_colour
from heart.report._csv import table_text
from heart.report._facts import StudyFacts
from heart.report._figures import new_figure, png_bytes, usage
from heart.report._section import Block, Figure, Flag, Section
from heart.report._table import MAX_DIFFERENCE_ROWS, Table, num, pct

NO_CLASSIFICATION = (
    "No strategy classifications yet: run `heart strategies`, or set strategies.classifier for "
    "`heart run`."
)


def _f1(value: float, low: float, high: float) -> str:
    """Like ``0.86 [0.78–0.93]``."""
    if math.isnan(value):
        return "–"
    if math.isnan(low) or math.isnan(high):
        return f"{value:.2f}"
    return f"{value:.2f} [{low:.2f}–{high:.2f}]"


def _points(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:+.1f}"


def _group(use: StrategyUse) -> str:
    """Like ``human (12)``, or ``human, adversarial (4)`` for one subset of items."""
    where = "" if use.subset == ALL_ITEMS else f", {use.subset}"
    return f"{use.group}{where} ({use.diversity.replies})"


def _usage_table(
    title: str, key: str, uses: list[StrategyUse], report: StrategyReport, note: str
) -> Table:
    """Strategies (most used first) by group, as percentages of the group's replies."""
    header = ["strategy", *(_group(u) for u in uses)]
    rows, colours = [], []
    for name in report.order:
        i = report.taxonomy.index(name)
        rates = [float(u.diversity.rates[i]) for u in uses]
        rows.append([name, *(pct(r) for r in rates)])
        colours.append([None, *(usage_colour(r) for r in rates)])
    return Table(title, header, rows, note, key, colours)


DIVERSITY_NOTE = (
    "Coverage: strategies used at least once (of {n}). Unique: mean number of strategies per "
    "reply. Entropy: Shannon entropy, in bits, of how the group's strategy uses spread over the "
    "strategies (0 when one strategy takes every use, {max:.2f} when all are used equally). SD "
    "and range: the population standard deviation and the range of the {n} usage rates, in "
    "percentage points, as the paper reports them; lower means a more even repertoire."
)


def _diversity_table(title: str, key: str, uses: list[StrategyUse]) -> Table:
    subsets = any(u.subset != ALL_ITEMS for u in uses)
    header = [*(["items"] if subsets else []), "group", "kind", "replies", "coverage",
              "unique per reply", "entropy (bits)", "SD (points)", "range (points)"]  # fmt: skip
    rows = [
        [
            *([u.subset] if subsets else []), u.group, u.kind, str(u.diversity.replies),
            f"{u.diversity.coverage} of {u.diversity.strategies}",
            num(u.diversity.mean_unique, 2), num(u.diversity.entropy_bits, 2),
            num(u.diversity.sd_points, 1), num(u.diversity.range_points, 1),
        ]
        for u in uses
    ]  # fmt: skip
    n = uses[0].diversity.strategies if uses else 15
    return Table(title, header, rows, DIVERSITY_NOTE.format(n=n, max=math.log2(n)), key)


def _gap_table(report: StrategyReport) -> Table:
    order = {name: i for i, name in enumerate(report.order)}
    gaps = sorted(report.gaps, key=lambda g: (g.family, order[g.strategy]))
    shown = (
        gaps if len(gaps) <= MAX_DIFFERENCE_ROWS else [g for g in gaps if g.difference.significant]
    )
    lv = f"{100 * report.level:.0f}%"
    rows = [
        [
            g.family, g.strategy, pct(g.difference.rate_a), pct(g.difference.rate_b),
            _points(g.difference.difference),
            f"{_points(g.difference.low)} to {_points(g.difference.high)}",
            num(g.difference.p_value, 3), num(g.difference.p_adjusted, 3),
            "yes" if g.difference.significant else "no",
        ]
        for g in shown
    ]  # fmt: skip
    note = (
        "Usage rate of the pooled human replies minus the family's, in percentage points, with "
        f"a {lv} interval and a two-sided p-value from resampling conversations "
        f"({report.rounds} rounds); p-values are adjusted by Benjamini–Hochberg across the "
        f"{len(report.taxonomy)} strategies of each family (significant: adjusted p < 0.05)."
    )
    if len(shown) < len(gaps):
        note += " Only the significant differences are listed; strategy_differences.csv has all."
    return Table(
        "Humans against each model family",
        ["family", "strategy", "humans", "family", "Δ (points)", f"{lv} CI", "p", "p (BH)",
         "significant"],
        rows, note, "strategy-differences",
    )  # fmt: skip


def _macro(check: ClassifierF1) -> str:
    r = check.result
    return _f1(r.macro, r.macro_low, r.macro_high)


def _human_f1_table(report: StrategyReport) -> Table | None:
    absent = report.check("human consensus")
    left_out = report.check("human consensus", "left out")
    if absent is None or left_out is None:
        return None
    a, b = absent.result, left_out.result
    rows = [["macro F1", _macro(absent), _macro(left_out), "", ""]]
    for name in report.order:
        i = report.taxonomy.index(name)
        rows.append([
            name, _f1(a.f1[i], a.low[i], a.high[i]), _f1(b.f1[i], b.low[i], b.high[i]),
            str(int(a.tp[i] + a.fn[i])), str(int(a.tp[i] + a.fp[i])),
        ])  # fmt: skip
    lv = f"{100 * report.level:.0f}%"
    note = (
        f"{absent.replies} replies with a human consensus (strategies chosen by more than half "
        f"of their labellers; labels of raters excluded by quality control left out) and an "
        f"answer of the classifier. Left out as disagreements: {report.disagreements} of the "
        f"{report.labelled} labelled replies (a strategy chosen by exactly half of the "
        "labellers; the admin page lists them). The classifier's 'uncertain' counts as absent, "
        "and, in the second column, is left out. '–': neither side marked the strategy. "
        f"Intervals: {lv}, resampling conversations."
    )
    return Table(
        "Classifier against human consensus",
        ["strategy", "F1 (uncertain as absent)", "F1 (uncertain left out)", "people marked",
         "classifier marked"],
        rows, note, "classifier-f1",
    )  # fmt: skip


def _esconv_table(report: StrategyReport) -> Table | None:
    audit = report.check("ESConv annotations")
    if audit is None:
        return None
    r = audit.result
    rows = [["macro F1", "", _macro(audit), "", ""]]
    for n, name in enumerate(audit.strategies):
        labels = " or ".join(esconv_labels(name))
        rows.append([name, labels, _f1(r.f1[n], r.low[n], r.high[n]), str(int(r.tp[n] + r.fn[n])),
                     str(int(r.tp[n] + r.fp[n]))])  # fmt: skip
    note = (
        f"{r.replies} ESConv original replies whose supporters annotated their strategies. A "
        "label with one counterpart in the taxonomy marks it; a label with several (Reflection "
        "of feelings, Affirmation and Reassurance, Providing Suggestions) is met by any of them: "
        "a counterpart the classifier marked counts as found, each counts as missed when it "
        "marked none, and the others are left out when it marked one. Not mapped: "
        f"{', '.join(ESCONV_UNMAPPED)}. ESConv labels each utterance with one strategy, so a "
        "reply may use strategies its annotation does not name: read this as a rough check."
    )
    return Table(
        "Classifier against ESConv's annotations",
        ["strategy", "ESConv label", "F1 (uncertain as absent)", "ESConv marked",
         "classifier marked"],
        rows, note, "classifier-audit",
    )  # fmt: skip


def _unscored_table(report: StrategyReport) -> Table | None:
    """The strategies the audit against ESConv cannot score, and why."""
    audit = report.check("ESConv annotations")
    if audit is None or not audit.not_scored:
        return None
    note = (
        f"{len(audit.not_scored)} of the {len(report.taxonomy)} strategies have no counterpart "
        "among ESConv's labels, so the audit above says nothing about how well the classifier "
        "finds them; only people's labels can check those."
    )
    return Table(
        "Strategies ESConv's annotations cannot score",
        ["strategy", "why"],
        [[name, why] for name, why in audit.not_scored.items()],
        note, "classifier-audit-unscored",
    )  # fmt: skip


def strategy_section(facts: StudyFacts) -> Section:
    """The section's warnings, introduction, tables and heatmap (only a line when nothing is
    classified)."""
    section = Section("strategies", "Strategies")
    report = facts.strategies
    if report is None:
        section.empty = NO_CLASSIFICATION
        return section
    blocks: list[Block] = []
    if report.flagged:
        blocks.append(
            Flag(
                f"Warning: the strategy classifier {report.classifier} is unreliable ("
                + "; ".join(report.problems)
                + "), so the figures below may not say which strategies the replies use.",
                "strategy-warning",
            )
        )
    blocks.append(
        f"{report.classified} replies classified by {report.classifier}; a strategy it marks "
        f"present counts as used. The classifier is flagged unreliable when its macro F1 "
        f"against human consensus or ESConv's annotations is below {MIN_MACRO_F1:g} on "
        f"{MIN_REPLIES} replies or more."
    )
    blocks += [f"Caution: {c}." for c in report.cautions]
    if report.check("human consensus") is None:
        blocks.append(
            "No reply carries both a human consensus and the classifier's answer: label replies "
            "in the web app (people.label_completions) to check the classifier against people."
        )
    by_family = "Share of each family's replies that use each strategy (most used overall first). "
    by_family += "Human replies are pooled; controls repeat one fixed reply: see them per system."
    by_system = "Share of each system's replies that use each strategy."
    blocks.append(
        _usage_table("Strategy use by family", "strategy-use", report.families, report, by_family)
    )
    if report.families:
        blocks.append(
            Figure(
                "strategy-heatmap", "strategy use by family", partial(strategy_heatmap_png, report)
            )
        )
    blocks += [
        _diversity_table("Diversity of strategy use by family", "strategy-diversity",
                         report.families),
        *([_gap_table(report)] if report.gaps else []),
        *[t for t in (_human_f1_table(report), _esconv_table(report), _unscored_table(report))
          if t],
        _usage_table("Strategy use by system", "strategy-use-systems", report.systems, report,
                     by_system),
        _diversity_table("Diversity of strategy use by system", "strategy-diversity-systems",
                         report.systems),
    ]  # fmt: skip
    if report.subsets:
        title = "by family, regular and adversarial items"
        blocks += [
            _usage_table(f"Strategy use {title}", "strategy-use-subsets", report.subsets, report,
                         "Share of each family's replies on each subset that use each strategy."),
            _diversity_table(f"Diversity of strategy use {title}", "strategy-diversity-subsets",
                             report.subsets),
        ]  # fmt: skip
    section.blocks = blocks
    return section


# --- CSV ---


def strategy_files(facts: StudyFacts) -> dict[str, str]:
    """Usage and diversity per system, family and subset; humans against each model family;
    the classifier against human consensus and against ESConv's annotations."""
    report = facts.strategies
    if report is None:
        return {}
    return {f"{name}.csv": table_text(table) for name, table in report.tables().items()}


# --- figures ---


def strategy_heatmap_png(report: StrategyReport) -> bytes:
    """Usage of each strategy (rows, most used overall first) by each family (columns), in
    percent of the family's replies."""
    families = report.families
    index = [report.taxonomy.index(name) for name in report.order]
    rates = np.asarray([[u.diversity.rates[i] for u in families] for i in index])
    fig = new_figure(1.15 * len(families) + 3.4, 0.36 * len(index) + 1.6)
    ax = fig.subplots()
    image = ax.imshow(100 * rates, cmap=usage(), vmin=0, vmax=100, aspect="auto")
    for i in range(len(index)):
        for j in range(len(families)):
            value = 100 * rates[i, j]
            text = "–" if math.isnan(value) else f"{value:.0f}"
            colour = "white" if value >= 55 else "#222222"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
    labels = [f"{u.group}\nn={u.diversity.replies}" for u in families]
    ax.set_xticks(range(len(families)), labels, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(index)), report.order, fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label("% of the family's replies", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    ax.set_title("Strategy use by family (% of each family's replies)", fontsize=10, pad=30)
    return png_bytes(fig)
