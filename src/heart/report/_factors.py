"""The report's Factor structure section: the axis scores, their correlations, parallel analysis
with its scree plot, the loadings, α and the relation to the overall win rate; its tables,
figure and CSV files."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np

from heart.analyses import MIN_FACTOR_COMPLETIONS, FactorStructure, IntervalEstimate
from heart.report._csv import table_text
from heart.report._facts import StudyFacts
from heart.report._figures import new_figure, png_bytes
from heart.report._section import Block, Figure, Flag, Section
from heart.report._table import AXES, Table, num, pct

SCORING = (
    "Per completion, each axis is scored by the mean signed strength of the LLM judges' verdicts "
    "on that axis over the pairs it took part in (+strength when its reply won the axis, "
    "−strength when it lost, 0 for no clear advantage), then z-scored across completions. "
    "People and imported verdicts give only the overall preference, so they take no part."
)


def _num(x: float) -> str:
    return num(x, 2)


def _estimate(e: IntervalEstimate | None) -> str:
    """Like ``0.62 [0.55–0.68]``."""
    if e is None or math.isnan(e.value):
        return "–"
    if math.isnan(e.low) or math.isnan(e.high):
        return f"{e.value:.2f}"
    between = " to " if e.low < 0 or e.high < 0 else "–"
    return f"{e.value:.2f} [{e.low:.2f}{between}{e.high:.2f}]"


def _factor_names(report: FactorStructure) -> list[str]:
    return [] if report.solution is None else [f"F{i + 1}" for i in range(report.solution.factors)]


def _verdict_line(report: FactorStructure) -> str:
    """What parallel analysis and the fitted model say, in one sentence or two."""
    pa = report.parallel
    assert pa is not None
    test = (
        f"eigenvalues of the axes' correlation matrix above the {pa.percentile:.0f}th percentile "
        f"of {pa.draws:,} random data sets of the same shape"
    )
    fitted = report.solution.factors if report.solution else 0
    if report.suggested == 0:
        return (
            f"Parallel analysis retains no factor ({test}): the axes share no more variance than "
            "random scores would, so the one-factor loadings below are for reference only."
        )
    if report.suggested == 1:
        return (
            f"Parallel analysis retains one factor ({test}): the five axes rise and fall together, "
            "as one overall quality of a reply would make them."
        )
    text = f"Parallel analysis retains {report.suggested} factors ({test})"
    if fitted < report.suggested:
        text += f"; a maximum-likelihood model of five axes identifies at most {fitted}, so "
        text += f"{fitted} are fitted"
    text += ": the axes split into groups that vary apart, though they may still be related"
    if report.solution is not None and fitted > 1:
        phi = report.solution.factor_correlation[0, 1]
        text += f" (the oblimin factors correlate at φ = {phi:.2f})"
    return text + "."


def factor_lines(report: FactorStructure | None) -> tuple[list[str], list[str]]:
    """Warnings to read first and the section's lines."""
    if report is None or not report.judges:
        return [], [
            "No LLM verdict has judged the HEART axes yet (people and imported verdicts give "
            "only the overall preference), so there is no factor structure to show."
        ]
    if not report.enough:
        return [], [
            f"Factor structure needs at least {MIN_FACTOR_COMPLETIONS} completions whose LLM "
            f"verdicts judged all five axes; this study has {report.completions}."
        ]
    warnings: list[str] = []
    count = (
        f"{report.completions} completions over {report.conversations} conversations, axis "
        f"verdicts by {', '.join(report.judges)}"
    )
    if report.left_out:
        count += (
            f"; {report.left_out} other completions LLM judges compared are left out, since "
            "some axis was never judged on them"
        )
    lines = [SCORING, count + "."]
    if report.rough:
        warnings.append(
            f"Only {report.completions} completions: the figures below are rough sketches, not "
            "estimates to rely on."
        )
    if report.collinear:
        pairs = ", ".join(f"{x} and {y}" for x, y in report.collinear)
        lines.append(
            f"Perfectly correlated axis scores (|r| = 1): {pairs}. Such axes carry one signal, "
            "as when a judge gives every verdict the same axis winners."
        )
    if report.problem:
        lines.append(f"No factor model: {report.problem}.")
    if report.parallel is not None:
        lines.append(_verdict_line(report))
    if report.alpha is not None:
        lines.append(
            f"Cronbach's α over the five axis z-scores: {_estimate(report.alpha)} (intervals "
            f"here resample conversations, {report.rounds:,} rounds)."
        )
    solution = report.solution
    if solution is not None and solution.heywood:
        lines.append(
            "Some axis reached the lowest uniqueness the fit allows (a Heywood case): the "
            "factors explain nearly all of it, which usually means too little data or too many "
            "factors; read its loading with care."
        )
    if solution is not None and not solution.converged:
        warnings.append("The factor model did not converge: its loadings are not reliable.")
    if report.axes:
        lines.append(
            "The axis and the overall verdicts come from the same judgments, so some of each "
            "correlation with the win rate is built in."
        )
    return warnings, lines


def axis_table(report: FactorStructure) -> Table:
    header = ["axis", "verdicts per completion", "SD of the raw score", "r with win rate",
              "α without it"]  # fmt: skip
    rows = [
        [a.axis, num(a.verdicts_per_completion, 1), _num(a.sd), _estimate(a.win),
         _num(a.alpha_if_dropped)]
        for a in report.axes
    ]  # fmt: skip
    rows.append(["mean of the z-scores", "", "", _estimate(report.axis_mean_win), ""])
    note = (
        "Verdicts per completion: the mean number of axis verdicts behind a completion's score. "
        "SD: of the raw score (−5 to +5; its mean is 0 by construction) over the completions "
        "analysed. r: Pearson correlation of the axis z-score with the completion's overall win "
        "rate (share of its LLM comparisons won, ties half)."
    )
    if report.constant:
        note += f" {', '.join(report.constant)}: no spread, so no z-score and no r."
    return Table("Axis scores", header, rows, note, "factor-axes")


def correlation_table(report: FactorStructure) -> Table:
    assert report.correlation is not None
    rows = [[axis, *(_num(float(v)) for v in report.correlation[i])] for i, axis in enumerate(AXES)]
    return Table(
        "Correlations between axis scores",
        ["", *AXES],
        rows,
        "Pearson r between the completions' axis scores; '–' where an axis has no spread.",
        "factor-correlations",
    )


def parallel_table(report: FactorStructure) -> Table:
    pa = report.parallel
    assert pa is not None
    rows = [
        [str(i + 1), _num(float(e)), _num(float(t)), "yes" if i < pa.factors else "no"]
        for i, (e, t) in enumerate(zip(pa.eigenvalues, pa.thresholds, strict=True))
    ]
    return Table(
        "Parallel analysis",
        ["component", "eigenvalue", f"random, {pa.percentile:.0f}th percentile", "retained"],
        rows,
        f"Eigenvalues of the correlation matrix of the {pa.observations} completions' axis "
        f"z-scores, against the {pa.percentile:.0f}th percentile of the same eigenvalue over "
        f"{pa.draws:,} simulated data sets of uncorrelated normal scores of the same shape "
        "(seeded). Components are retained from the first while they beat that line.",
        "factor-parallel",
    )


def loading_table(report: FactorStructure) -> Table:
    solution = report.solution
    assert solution is not None
    names = _factor_names(report)
    rows = [
        [axis, *(_num(float(v)) for v in solution.loadings[i]),
         _num(float(solution.communalities[i])), _num(float(solution.uniquenesses[i]))]
        for i, axis in enumerate(AXES)
    ]  # fmt: skip
    note = (
        "Maximum-likelihood factor analysis of the axis correlation matrix. Loadings: each "
        "axis's weight on each factor (signs set so that a factor's loadings sum to a positive "
        "number). Communality: the share of the axis's variance the factors explain; "
        "uniqueness: the rest."
    )
    if solution.factors > 1:
        note += (
            " Rotated by oblimin (direct quartimin), which lets the factors correlate, as skills "
            "of one reply may: the loadings are the pattern (each axis regressed on the factors); "
            f"the factors correlate at φ = {solution.factor_correlation[0, 1]:.2f}."
        )
    return Table(
        f"Factor loadings ({len(names)} factor{'s' if len(names) > 1 else ''})",
        ["axis", *names, "communality", "uniqueness"],
        rows,
        note,
        "factor-loadings",
    )


def win_table(report: FactorStructure) -> Table:
    rows = [["Cronbach's α (five axes)", _estimate(report.alpha)]]
    rows += [
        [f"r: {name} score with win rate", _estimate(e)]
        for name, e in zip(_factor_names(report), report.factor_win, strict=True)
    ]
    rows.append(["r: mean axis z-score with win rate", _estimate(report.axis_mean_win)])
    return Table(
        "Reliability and relation to the win rate",
        ["statistic", f"estimate [{100 * report.level:.0f}% CI]"],
        rows,
        "Factor scores by the regression method; the win rate is each completion's share of its "
        "LLM comparisons won, ties half. Intervals resample conversations.",
        "factor-wins",
    )


def system_table(report: FactorStructure) -> Table:
    names = _factor_names(report)
    rows = [
        [s.system, str(s.completions), *(f"{v:+.2f}" for v in s.factors), f"{s.axis_mean:+.2f}",
         pct(s.win_rate)]
        for s in report.systems
    ]  # fmt: skip
    return Table(
        "Scores by system",
        ["system", "completions", *(f"mean {n}" for n in names), "mean axis z-score",
         "mean win rate"],
        rows,
        "Means over each system's completions analysed (factor and axis scores are z-scaled "
        "across all completions, so 0 is the average completion).",
        "factor-systems",
    )  # fmt: skip


def factor_section(facts: StudyFacts) -> Section:
    """The section: warnings (a judge the audit flags, too little data), lines, tables and the
    scree plot; one line when no LLM verdict judged the axes on enough completions."""
    report = facts.factors
    warnings, lines = factor_lines(report)
    section = Section("factors", "Factor structure")
    if report is None or not report.axes:
        if warnings:
            section.blocks = [*(Flag(w, "factor-warning") for w in warnings), *lines]
        else:
            section.empty = " ".join(lines)
        return section
    flagged = [a.judge for a in facts.audit if a.flagged]
    suspect = [j for j in report.judges if j in flagged]
    if suspect:
        warnings.insert(
            0,
            f"The judge audit flags {', '.join(suspect)} as unreliable: these axis scores "
            "inherit its biases.",
        )
    blocks: list[Block] = [*(Flag(w, "factor-warning") for w in warnings), *lines]
    blocks += [axis_table(report), correlation_table(report)]
    if report.parallel is not None:
        blocks.append(parallel_table(report))
        blocks.append(Figure("factor-scree", "scree plot", partial(scree, report)))
    if report.solution is not None:
        blocks.append(loading_table(report))
    if report.alpha is not None:
        blocks.append(win_table(report))
    if report.systems:
        blocks.append(system_table(report))
    section.blocks = blocks
    return section


def scree(report: FactorStructure) -> bytes:
    """The scree plot with the parallel-analysis line (the report has one when it has a
    parallel analysis)."""
    pa = report.parallel
    assert pa is not None
    return scree_png(pa.eigenvalues.tolist(), pa.thresholds.tolist(), pa.percentile)


# --- CSV ---


def factor_files(facts: StudyFacts) -> dict[str, str]:
    """The factor structure: per axis, eigenvalues, α and correlations with the win rate, per
    system, and every completion's scores."""
    report = facts.factors
    if report is None or not report.axes or report.scores is None or report.z is None:
        return {}
    return {f"{name}.csv": table_text(table) for name, table in report.tables().items()}


# --- figures ---


def scree_png(
    eigenvalues: Sequence[float], thresholds: Sequence[float], percentile: float
) -> bytes:
    """The scree plot of the axes' correlation matrix: observed eigenvalues against the
    parallel-analysis line (the same percentile of random data's), retained ones filled."""
    k = len(eigenvalues)
    x = np.arange(1, k + 1)
    observed = np.asarray(eigenvalues, dtype=np.float64)
    line = np.asarray(thresholds, dtype=np.float64)
    beaten = observed > line
    kept = k if beaten.all() else int(np.argmin(beaten))
    fig = new_figure(5.2, 3.2)
    ax = fig.subplots()
    ax.plot(x, observed, color="#1f4e79", lw=1.5, label="observed eigenvalue")
    ax.plot(x[:kept], observed[:kept], "o", color="#1f4e79", ms=6, label="retained")
    ax.plot(x[kept:], observed[kept:], "o", mfc="white", color="#1f4e79", ms=6)
    ax.plot(x, line, "--", color="#c8553d", lw=1.5,
            label=f"random data, {percentile:.0f}th percentile")  # fmt: skip
    ax.set_xticks(x)
    ax.set_xlabel("component", fontsize=8)
    ax.set_ylabel("eigenvalue", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.grid(color="#eeeeee")
    ax.legend(fontsize=8, frameon=False)
    ax.set_title("Scree plot of the axis scores with parallel analysis", fontsize=10)
    return png_bytes(fig)
