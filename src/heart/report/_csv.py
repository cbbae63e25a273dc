"""The report's CSV files, for scripts: one number per column at full precision (an estimate,
its interval and its count apart), an empty cell where there is no data, never formatted text."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

from heart.analyses import (
    AgreementReport,
    Board,
    ClassifierF1,
    JudgeAudit,
    LatencyReport,
    Standing,
    board_audit,
    esconv_labels,
)
from heart.report._facts import StudyFacts
from heart.report._latency_csv import TTFT_COLUMNS, latency_files, ttft_cells
from heart.stats import Share
from heart.types import Axis

AXES = [a.value for a in Axis]
Cell = str | int | float | bool | None
AUDIT_CHECKS = ("flip", "first_position", "longer", "control", "own_family")
SHARE_COLUMNS = ("hits", "n", "estimate", "low", "high")


def _cell(value: Cell) -> str:
    """Floats in their shortest exact form, NaN and None as an empty cell, booleans as words."""
    if type(value) is str:  # the commonest cell first: large files are mostly words
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def _csv(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue()


def _share(share: Share | None) -> list[Cell]:
    """hits, n, estimate, low, high; empty when there is no share."""
    if share is None or not share.n:
        return [None] * len(SHARE_COLUMNS)
    return [share.hits, share.n, share.value, share.low, share.high]


BOARD_HEADER = [
    "board", "rank", "system", "kind", "family", "elo", "low", "high", "robust_low",
    "robust_high", "paper_low", "paper_high", "comparisons", "conversations", "opponents",
    "judges", "preliminary", "preliminary_reasons", "audit", "flagged_judges", "win_rate",
    *(f"win_rate_{a}" for a in AXES), *(f"elo_{a}" for a in AXES), *TTFT_COLUMNS,
]  # fmt: skip


def board_rows(
    board: Board, audits: list[JudgeAudit], latency: LatencyReport | None = None
) -> list[list[Cell]]:
    """The board: one row per system, the best human last (rank †); rank empty where the system
    has no interval; the audit's verdict on the board's judges on every row; TTFT columns from
    ``latency``."""
    ranked: list[tuple[Cell, Standing]] = [
        (s.rank if s.ranked else None, s) for s in board.leaderboard.standings
    ]
    if board.best_human is not None:
        ranked.append(("†", board.best_human))
    audit = board_audit(board, audits)
    return [
        [
            board.key, rank, s.system, s.kind, s.family, s.elo, s.low, s.high, s.robust_low,
            s.robust_high, s.paper_low, s.paper_high, s.comparisons, s.conversations,
            s.opponents, s.judges, bool(s.preliminary), "; ".join(s.preliminary), audit.verdict,
            ";".join(audit.flagged), s.win_rate, *(s.axis_win_rates[a] for a in AXES),
            *(s.axis_elo[a] for a in AXES), *ttft_cells(latency, s.system),
        ]
        for rank, s in ranked
    ]  # fmt: skip


DIFFERENCE_HEADER = [
    "board", "system", "vs", "elo_difference", "low", "high", "p", "p_bh", "significant", "clear"
]  # fmt: skip


def difference_rows(board: Board) -> list[list[Cell]]:
    names = board.leaderboard.systems
    return [
        [board.key, names[d.i], names[d.j], d.difference, d.low, d.high, d.p_value, d.p_adjusted,
         d.significant, d.clear]
        for d in board.leaderboard.differences
    ]  # fmt: skip


AUDIT_HEADER = [
    "judge", "family", "source", "imported", "verdicts", "ties", "both_orders",
    *(f"{check}_{col}" for check in AUDIT_CHECKS for col in SHARE_COLUMNS),
    "reasked", "failed", "flagged", "problems", "cautions",
]  # fmt: skip


def audit_rows(audits: list[JudgeAudit]) -> list[list[Cell]]:
    """One row per judge or rater: its source (llm or human), verdicts imported, verdicts
    counted with the ties among them, pairs seen in both orders, then every share."""
    return [
        [
            a.judge, a.family, a.source, a.counts.imported, a.verdicts, a.ties, a.both_orders,
            *(cell for check in AUDIT_CHECKS for cell in _share(getattr(a, check))),
            a.counts.reasked, a.counts.failed, a.flagged, "; ".join(a.problems),
            "; ".join(a.cautions),
        ]
        for a in audits
    ]  # fmt: skip


def agreement_files(report: AgreementReport | None) -> dict[str, str]:
    """Agreement with humans and between judges, reliability and stability, one file each."""
    if report is None or report.empty:
        return {}
    humans: list[tuple[str, Share | None]] = [
        ("human majority vs LLM-ensemble majority", report.human_llm),
        ("each human rater vs the majority of the others", report.inter_human),
        ("human vs LLM on ambiguous pairs", report.ambiguous),
        ("human vs LLM on clear pairs", report.clear),
        *((f"LLM judge {j} vs human majority", r) for j, r in report.judge_vs_humans.items()),
    ]
    judges = [(f"{x} & {y}", r) for x, y, r in report.judge_pairs]
    judges += [(" & ".join(t), r) for t, r in report.judge_triples]
    reliability: list[list[Cell]] = [
        [r.group, r.units, r.raters, r.kappa, r.kappa_units, r.alpha_nominal, r.alpha_ordinal,
         *(r.axis_kappa.get(a) for a in AXES)]
        for r in report.reliability
    ]  # fmt: skip
    stability: list[list[Cell]] = [
        [s.group, s.subset_size, s.judges, s.draws, s.median, s.p05, s.minimum, s.same_top]
        for s in report.stability
    ]
    reliability_header = [
        "raters", "pairs", "n_raters", "fleiss_kappa", "kappa_pairs", "alpha_nominal",
        "alpha_ordinal", *(f"kappa_{a}" for a in AXES),
    ]  # fmt: skip
    stability_header = [
        "judges", "subset_size", "n_judges", "draws", "median_tau", "p05_tau", "min_tau",
        "same_top",
    ]  # fmt: skip
    return {
        "agreement-humans.csv": _csv(
            ["what", *SHARE_COLUMNS], [[w, *_share(r)] for w, r in humans if r is not None]
        ),
        "agreement-judges.csv": _csv(
            ["judges", *SHARE_COLUMNS], [[w, *_share(r)] for w, r in judges]
        ),
        "reliability.csv": _csv(reliability_header, reliability),
        "stability.csv": _csv(stability_header, stability),
    }


def factor_files(facts: StudyFacts) -> dict[str, str]:
    """The factor structure: per axis, eigenvalues, α and correlations with the win rate, per
    system, and every completion's scores."""
    report = facts.factors
    if report is None or not report.axes or report.scores is None or report.z is None:
        return {}
    solution = report.solution
    fitted = solution.factors if solution else 0
    slots = 2  # the most factors a model of the five axes identifies
    axes: list[list[Cell]] = []
    for k, a in enumerate(report.axes):
        loadings: list[Cell] = [
            float(solution.loadings[k, f]) if solution and f < fitted else None
            for f in range(slots)
        ]
        correlations: list[Cell] = (
            [float(v) for v in report.correlation[k]] if report.correlation is not None else []
        )
        axes.append(
            [a.axis, report.completions, a.verdicts_per_completion, a.sd, a.win.value, a.win.low,
             a.win.high, a.alpha_if_dropped, *loadings,
             float(solution.communalities[k]) if solution else None,
             float(solution.uniquenesses[k]) if solution else None, *correlations]
        )  # fmt: skip
    eigen: list[list[Cell]] = []
    if report.parallel is not None:
        pa = report.parallel
        eigen = [
            [i + 1, float(e), float(t), pa.percentile, pa.draws, i < pa.factors]
            for i, (e, t) in enumerate(zip(pa.eigenvalues, pa.thresholds, strict=True))
        ]
    n = report.completions
    summary: list[list[Cell]] = []
    if report.alpha is not None:
        summary.append(["cronbach_alpha", report.alpha.value, report.alpha.low,
                        report.alpha.high, n])  # fmt: skip
    for f, e in enumerate(report.factor_win, 1):
        summary.append([f"r_factor_{f}_win_rate", e.value, e.low, e.high, n])
    if report.axis_mean_win is not None:
        e = report.axis_mean_win
        summary.append(["r_axis_mean_win_rate", e.value, e.low, e.high, n])
    if solution is not None and fitted > 1:
        summary.append(["factor_correlation_1_2", float(solution.factor_correlation[0, 1]),
                        None, None, n])  # fmt: skip
    if report.parallel is not None:
        summary.append(["parallel_analysis_factors", report.suggested, None, None, n])
    summary.append(["factors_fitted", fitted, None, None, n])
    systems: list[list[Cell]] = [
        [s.system, s.completions,
         *(s.factors[f] if f < len(s.factors) else None for f in range(slots)),
         s.axis_mean, s.win_rate]
        for s in report.systems
    ]  # fmt: skip
    scores = report.scores
    kept = scores.complete
    values = report.factor_values
    per_completion: list[list[Cell]] = []
    for row, i in enumerate(kept.nonzero()[0]):
        factor_cells: list[Cell] = [
            float(values[row, f]) if values is not None and f < fitted else None
            for f in range(slots)
        ]
        per_completion.append(
            [scores.completions[i], scores.systems[scores.system[i]],
             scores.conversations[scores.conversation[i]], int(scores.comparisons[i]),
             float(scores.win_rate[i]), *(float(v) for v in scores.scores[i]),
             *(float(v) for v in report.z[row]), *factor_cells]
        )  # fmt: skip
    factor_columns = [f"factor_{f}" for f in range(1, slots + 1)]
    return {
        "factor_axes.csv": _csv(
            ["axis", "completions", "verdicts_per_completion", "sd", "win_r", "win_low",
             "win_high", "alpha_if_dropped", *(f"loading_{f}" for f in range(1, slots + 1)),
             "communality", "uniqueness", *(f"r_{a}" for a in AXES)],
            axes,
        ),
        "factor_eigenvalues.csv": _csv(
            ["component", "eigenvalue", "threshold", "percentile", "draws", "retained"], eigen
        ),
        "factor_summary.csv": _csv(["statistic", "estimate", "low", "high", "completions"],
                                   summary),
        "factor_systems.csv": _csv(
            ["system", "completions", *(f"mean_{c}" for c in factor_columns), "mean_axis_z",
             "mean_win_rate"],
            systems,
        ),
        "factor_scores.csv": _csv(
            ["completion", "system", "conversation", "comparisons", "win_rate",
             *(f"score_{a}" for a in AXES), *(f"z_{a}" for a in AXES), *factor_columns],
            per_completion,
        ),
    }  # fmt: skip


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
        files["adversarial.csv"] = _csv(
            ["profile", "rewritten", "kept", "rejected", "reasons"], rows
        )
        c = report.rater
        files["hostility_rater.csv"] = _csv(
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
        files["subsets.csv"] = _csv(
            ["judges", "system", "elo_regular", "elo_adversarial", "shift", "low", "high",
             "rank_regular", "rank_adversarial"],
            shifts,
        )  # fmt: skip
        agreement: list[list[Cell]] = [
            [subset, *_share(share)] for subset, share in facts.subsets[0].agreement.items()
        ]
        files["agreement-subsets.csv"] = _csv(["items", *SHARE_COLUMNS], agreement)
    return files


F1_HEADER = ["classifier", "reference", "uncertain", "strategy", "esconv_labels", "f1", "low",
             "high", "tp", "fp", "fn", "replies", "flagged", "not_scored"]  # fmt: skip


def _f1_rows(classifier: str, check: ClassifierF1) -> list[list[Cell]]:
    """The macro F1 (flagged or not), one row per strategy the check scores, then one per
    strategy it cannot score, with why (``not_scored``) and no numbers."""
    r = check.result
    esconv = check.reference == "ESConv annotations"
    rows: list[list[Cell]] = [
        [classifier, check.reference, check.uncertain, "macro", None, r.macro, r.macro_low,
         r.macro_high, None, None, None, r.replies, check.flagged, None],
    ]  # fmt: skip
    for n, name in enumerate(check.strategies):
        rows.append(
            [classifier, check.reference, check.uncertain, name,
             "; ".join(esconv_labels(name)) if esconv else None, float(r.f1[n]),
             float(r.low[n]), float(r.high[n]), int(r.tp[n]), int(r.fp[n]), int(r.fn[n]),
             r.replies, None, None]
        )  # fmt: skip
    rows += [
        [classifier, check.reference, check.uncertain, name, None, None, None, None, None, None,
         None, None, None, why]
        for name, why in check.not_scored.items()
    ]  # fmt: skip
    return rows


def strategy_files(facts: StudyFacts) -> dict[str, str]:
    """Usage and diversity per system, family and subset; humans against each model family;
    the classifier against human consensus and against ESConv's annotations."""
    report = facts.strategies
    if report is None:
        return {}
    groups = [("system", u) for u in report.systems]
    groups += [("family", u) for u in [*report.families, *report.subsets]]
    usage: list[list[Cell]] = [
        [scope, u.subset, u.group, u.kind, u.diversity.replies, name, int(u.diversity.uses[i]),
         float(u.diversity.rates[i])]
        for scope, u in groups
        for i, name in enumerate(report.taxonomy)
    ]  # fmt: skip
    diversity: list[list[Cell]] = [
        [scope, u.subset, u.group, u.kind, u.diversity.replies, u.diversity.strategies,
         u.diversity.coverage, u.diversity.mean_unique, u.diversity.entropy_bits,
         u.diversity.sd_points, u.diversity.range_points]
        for scope, u in groups
    ]  # fmt: skip
    gaps: list[list[Cell]] = [
        [g.family, g.strategy, g.human_replies, g.family_replies, g.difference.rate_a,
         g.difference.rate_b, g.difference.difference, g.difference.low, g.difference.high,
         g.difference.p_value, g.difference.p_adjusted, g.difference.significant]
        for g in report.gaps
    ]  # fmt: skip
    f1 = [
        row for check in report.checks if check.reference == "human consensus"
        for row in _f1_rows(report.classifier, check)
    ]  # fmt: skip
    audit = [
        row for check in report.checks if check.reference == "ESConv annotations"
        for row in _f1_rows(report.classifier, check)
    ]  # fmt: skip
    return {
        "strategy_usage.csv": _csv(
            ["scope", "items", "group", "kind", "replies", "strategy", "uses", "rate"], usage
        ),
        "strategy_diversity.csv": _csv(
            [
                "scope",
                "items",
                "group",
                "kind",
                "replies",
                "strategies",
                "coverage",
                "mean_unique",
                "entropy_bits",
                "sd_points",
                "range_points",
            ],
            diversity,
        ),
        "strategy_differences.csv": _csv(
            [
                "family",
                "strategy",
                "human_replies",
                "family_replies",
                "human_rate",
                "family_rate",
                "difference",
                "low",
                "high",
                "p",
                "p_bh",
                "significant",
            ],
            gaps,
        ),
        "classifier_f1.csv": _csv(F1_HEADER, f1),
        "classifier_audit.csv": _csv(F1_HEADER, audit),
    }


def csv_files(facts: StudyFacts) -> dict[str, str]:
    """Every CSV file of the report, by name."""
    from heart.report._rationale_csv import rationale_files  # it builds on this module

    boards, differences = [], []
    for board in facts.boards:
        boards += board_rows(board, facts.audit, facts.latency)
        differences += difference_rows(board)
    return {
        "leaderboard.csv": _csv(BOARD_HEADER, boards),
        "differences.csv": _csv(DIFFERENCE_HEADER, differences),
        "judge_audit.csv": _csv(AUDIT_HEADER, audit_rows(facts.audit)),
        **agreement_files(facts.agreement),
        **factor_files(facts),
        **adversarial_files(facts),
        **strategy_files(facts),
        **rationale_files(facts.rationales),
        **latency_files(facts.latency, facts.capability),
    }
