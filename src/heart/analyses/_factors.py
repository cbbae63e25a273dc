"""Factor structure of HEART: do the five axes measure one latent skill or separable ones?

Per completion, each axis gets a score from the LLM judges' axis verdicts on the pairs it took
part in (only LLM judges judge the axes; people and imported verdicts give the overall
preference alone). The scores go through parallel analysis, a maximum-likelihood factor
analysis with an oblimin rotation, Cronbach's α, and correlations with the overall win rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons
from heart.stats import (
    FactorSolution,
    ParallelAnalysis,
    alpha_if_dropped,
    bootstrap_alpha_by_conversation,
    bootstrap_correlations_by_conversation,
    correlation_eigenvalues,
    cronbach_alpha,
    factor_scores,
    fit_factor_analysis,
    max_factors,
    overall_win_rate,
    parallel_analysis,
)
from heart.tables import Cell, CellTable
from heart.types import Axis

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
AXES = [a.value for a in Axis]
MIN_FACTOR_COMPLETIONS = 20
"""Below this many completions with all five axes scored the section only says so."""
FACTOR_ROUGH_BELOW = 100
"""Below this many completions the section warns that loadings and α are rough."""


@dataclass(frozen=True)
class IntervalEstimate:
    """A statistic with its percentile interval from resampling conversations."""

    value: float
    low: float
    high: float


@dataclass(frozen=True, eq=False)
class AxisScores:
    """Per completion (rows) and axis (columns): the mean signed strength of its axis verdicts
    (+strength when its reply won the axis, −strength when it lost, 0 for no clear advantage),
    NaN where no verdict judged that axis; and, over all its LLM comparisons, its overall win
    rate (ties half)."""

    completions: list[str]
    system: Ints  # index into ``systems``
    systems: list[str]
    conversation: Ints  # index into ``conversations``
    conversations: list[str]
    scores: Floats
    verdicts: Ints
    win_rate: Floats
    comparisons: Ints

    @property
    def complete(self) -> npt.NDArray[np.bool_]:
        """The completions with every axis scored."""
        out: npt.NDArray[np.bool_] = np.all(self.verdicts > 0, axis=1)
        return out


@dataclass(frozen=True)
class AxisSummary:
    """One axis over the completions analysed: how many axis verdicts back a completion's score
    on average, the raw score's SD, its correlation with the overall win rate and α without it.
    (The raw scores' mean is about 0 by construction: every verdict gives +s to one reply and
    −s to the other.)"""

    axis: str
    verdicts_per_completion: float
    sd: float
    win: IntervalEstimate
    alpha_if_dropped: float


@dataclass(frozen=True)
class SystemFactorScores:
    """Mean factor scores, mean axis z-score and win rate of one system's completions."""

    system: str
    completions: int
    factors: list[float]
    axis_mean: float
    win_rate: float


@dataclass(frozen=True, eq=False)
class FactorStructure:
    """Everything the report's factor section shows. ``completions`` counts those with all five
    axes scored (the ones analysed); ``left_out`` the other completions LLM judges compared
    (some axis, or every axis, never judged on them). Past the counts, fields stay empty where
    the data cannot support them: ``constant`` names axes with no spread (no z-scores, so no
    factor analysis); ``problem`` says why no factor model was fitted."""

    judges: list[str]
    completions: int
    left_out: int
    conversations: int
    rounds: int
    level: float
    axes: list[AxisSummary] = field(default_factory=list)
    correlation: Floats | None = None  # (5, 5) Pearson r between axis scores, NaN if undefined
    constant: list[str] = field(default_factory=list)
    collinear: list[tuple[str, str]] = field(default_factory=list)  # pairs with |r| = 1
    parallel: ParallelAnalysis | None = None
    suggested: int = 0  # factors parallel analysis retains
    solution: FactorSolution | None = None
    problem: str = ""
    alpha: IntervalEstimate | None = None
    factor_win: list[IntervalEstimate] = field(default_factory=list)
    axis_mean_win: IntervalEstimate | None = None
    systems: list[SystemFactorScores] = field(default_factory=list)
    scores: AxisScores | None = None
    z: Floats | None = None  # (completions analysed, 5) z-scores
    factor_values: Floats | None = None  # (completions analysed, factors) regression scores

    def tables(self) -> dict[str, CellTable]:
        """The report's CSV tables, by file name without ``.csv``: factor_axes (per axis: its
        spread, correlation with the win rate, α if dropped, loadings, communality,
        uniqueness and correlations with the other axes), factor_eigenvalues (per component,
        against parallel analysis's threshold), factor_summary (α, factor against win rate,
        factors retained and fitted), factor_systems (mean scores per system) and
        factor_scores (every completion analysed). Empty tables when no axis was scored."""
        return factor_tables(self)

    def to_pandas(self) -> Any:
        """factor_axes as a data frame: one row per HEART axis."""
        return self.tables()["factor_axes"].to_pandas()

    @property
    def enough(self) -> bool:
        return self.completions >= MIN_FACTOR_COMPLETIONS

    @property
    def rough(self) -> bool:
        return self.completions < FACTOR_ROUGH_BELOW


def axis_scores(comparisons: Comparisons) -> AxisScores:
    """Each completion's score per axis from the axis verdicts of the comparisons given."""
    n = len(comparisons.completions)
    ca, cb = comparisons.completion_a, comparisons.completion_b
    scores = np.full((n, len(AXES)), np.nan)
    verdicts = np.zeros((n, len(AXES)), dtype=np.int64)
    for k in range(len(AXES)):
        given = comparisons.axis_given[:, k]
        outcome = comparisons.axis_outcome[given, k]
        strength = comparisons.axis_strength[given, k]
        signed = np.select([outcome == 0, outcome == 1], [strength, -strength], 0.0)
        total = np.bincount(ca[given], weights=signed, minlength=n)
        total -= np.bincount(cb[given], weights=signed, minlength=n)
        count = np.bincount(ca[given], minlength=n) + np.bincount(cb[given], minlength=n)
        verdicts[:, k] = count
        np.divide(total, count, out=scores[:, k], where=count > 0)
    system = np.zeros(n, dtype=np.int64)
    system[ca], system[cb] = comparisons.a, comparisons.b
    conversation = np.zeros(n, dtype=np.int64)
    conversation[ca] = conversation[cb] = comparisons.conversation
    b_won = comparisons.outcome == 1
    winner = np.where(b_won, cb, ca)
    loser = np.where(b_won, ca, cb)
    win_rate = overall_win_rate(winner, loser, comparisons.outcome == 2, n) if n else np.zeros(0)
    return AxisScores(
        completions=list(comparisons.completions),
        system=system,
        systems=list(comparisons.systems),
        conversation=conversation,
        conversations=list(comparisons.conversations),
        scores=scores,
        verdicts=verdicts,
        win_rate=win_rate,
        comparisons=np.bincount(ca, minlength=n) + np.bincount(cb, minlength=n),
    )


def _estimates(values: Floats, low: Floats, high: Floats) -> list[IntervalEstimate]:
    return [
        IntervalEstimate(float(v), float(lo), float(hi))
        for v, lo, hi in zip(values, low, high, strict=True)
    ]


def _correlation(x: Floats) -> Floats:
    """Pearson r between columns, NaN for a column with no spread."""
    sd = x.std(axis=0, ddof=1)
    varies = sd > 0
    out = np.full((x.shape[1], x.shape[1]), np.nan)
    if varies.sum() >= 1:
        idx = np.flatnonzero(varies)
        out[np.ix_(idx, idx)] = np.atleast_2d(np.corrcoef(x[:, idx], rowvar=False))
    return out


def _names(names: list[str]) -> str:
    """Like ``H, A and T``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _standardise(x: Floats) -> Floats:
    """Columns as z-scores; a column with no spread stays NaN."""
    sd = x.std(axis=0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        z: Floats = np.where(sd > 0, (x - x.mean(axis=0)) / sd, np.nan)
    return z


def _system_scores(
    scores: AxisScores, kept: npt.NDArray[np.bool_], axis_mean: Floats, factors: Floats | None
) -> list[SystemFactorScores]:
    system = scores.system[kept]
    out = []
    for s in np.unique(system):
        rows = system == s
        out.append(
            SystemFactorScores(
                system=scores.systems[int(s)],
                completions=int(rows.sum()),
                factors=[] if factors is None else [float(v) for v in factors[rows].mean(axis=0)],
                axis_mean=float(axis_mean[rows].mean()),
                win_rate=float(scores.win_rate[kept][rows].mean()),
            )
        )
    return sorted(out, key=lambda r: (-(r.factors[0] if r.factors else r.axis_mean), r.system))


def factor_structure(
    comparisons: Comparisons, *, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> FactorStructure:
    """The factor structure of the five axes, from the LLM judges' verdicts among
    ``comparisons``: as far as the data support it (see ``FactorStructure``)."""
    llm = comparisons.by_source("llm")
    scores = axis_scores(llm)
    kept = scores.complete
    n = int(kept.sum())
    judges = sorted({llm.judges[j] for j in np.unique(llm.judge[llm.axis_given.any(axis=1)])})
    base = FactorStructure(
        judges=judges,
        completions=n,
        left_out=len(scores.completions) - n,
        conversations=len(np.unique(scores.conversation[kept])),
        rounds=rounds,
        level=level,
    )
    if n < MIN_FACTOR_COMPLETIONS:
        return base
    raw = scores.scores[kept]
    win = scores.win_rate[kept]
    conversation = scores.conversation[kept]
    z = _standardise(raw)
    varies = np.all(np.isfinite(z), axis=0)
    constant = [a for a, v in zip(AXES, varies, strict=True) if not v]
    correlation = _correlation(raw)
    collinear = [
        (AXES[i], AXES[j])
        for i in range(len(AXES))
        for j in range(i + 1, len(AXES))
        if abs(correlation[i, j]) > 1 - 1e-9
    ]
    axis_mean = np.nanmean(z[:, varies], axis=1) if varies.any() else np.zeros(n)
    r, low, high = bootstrap_correlations_by_conversation(
        np.column_stack([np.nan_to_num(z), axis_mean]), win, conversation,
        rounds=rounds, seed=seed, level=level,
    )  # fmt: skip
    r[:-1][~varies] = low[:-1][~varies] = high[:-1][~varies] = np.nan
    wins = _estimates(r, low, high)
    complete = not constant
    dropped = alpha_if_dropped(z) if complete else np.full(len(AXES), np.nan)
    axes = [
        AxisSummary(a, float(scores.verdicts[kept, k].mean()), float(raw[:, k].std(ddof=1)),
                    wins[k], float(dropped[k]))
        for k, a in enumerate(AXES)
    ]  # fmt: skip
    result = replace(
        base,
        axes=axes,
        correlation=correlation,
        constant=constant,
        collinear=collinear,
        axis_mean_win=wins[-1] if varies.any() else None,
        scores=scores,
        z=z,
    )
    if not complete:
        return replace(
            result,
            problem=f"{_names(constant)} never told two replies apart in these "
            "completions, so those axes have no z-scores and the factor model cannot be fitted",
            systems=_system_scores(scores, kept, axis_mean, None),
        )
    alpha = cronbach_alpha(z)
    alpha_low, alpha_high = bootstrap_alpha_by_conversation(
        z, conversation, rounds=rounds, seed=seed, level=level
    )
    result = replace(result, alpha=IntervalEstimate(alpha, alpha_low, alpha_high))
    if correlation_eigenvalues(correlation)[-1] <= 1e-10:
        return replace(
            result,
            problem="some axes are exact linear combinations of others here (the correlation "
            "matrix is singular), so neither parallel analysis nor the factor model has "
            "anything to separate",
            systems=_system_scores(scores, kept, axis_mean, None),
        )
    parallel = parallel_analysis(z, seed=seed)
    result = replace(result, parallel=parallel, suggested=parallel.factors)
    m = min(max(parallel.factors, 1), max_factors(len(AXES)))
    solution = fit_factor_analysis(correlation, m)
    values = factor_scores(z, correlation, solution)
    fr, flow, fhigh = bootstrap_correlations_by_conversation(
        values, win, conversation, rounds=rounds, seed=seed, level=level
    )
    return replace(
        result,
        solution=solution,
        factor_win=_estimates(fr, flow, fhigh),
        factor_values=values,
        systems=_system_scores(scores, kept, axis_mean, values),
    )


# --- as tables ---


def factor_tables(report: FactorStructure) -> dict[str, CellTable]:
    """See ``FactorStructure.tables``."""
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
            [float(v) for v in report.correlation[k]]
            if report.correlation is not None
            else [None] * len(AXES)
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
    scores, z, values = report.scores, report.z, report.factor_values
    per_completion: list[list[Cell]] = []
    if scores is not None:
        for row, i in enumerate(scores.complete.nonzero()[0]):
            factor_cells: list[Cell] = [
                float(values[row, f]) if values is not None and f < fitted else None
                for f in range(slots)
            ]
            z_cells: list[Cell] = (
                [float(v) for v in z[row]] if z is not None else [None] * len(AXES)
            )
            per_completion.append(
                [scores.completions[i], scores.systems[scores.system[i]],
                 scores.conversations[scores.conversation[i]], int(scores.comparisons[i]),
                 float(scores.win_rate[i]), *(float(v) for v in scores.scores[i]),
                 *z_cells, *factor_cells]
            )  # fmt: skip
    factor_columns = [f"factor_{f}" for f in range(1, slots + 1)]
    return {
        "factor_axes": CellTable(
            ["axis", "completions", "verdicts_per_completion", "sd", "win_r", "win_low",
             "win_high", "alpha_if_dropped", *(f"loading_{f}" for f in range(1, slots + 1)),
             "communality", "uniqueness", *(f"r_{a}" for a in AXES)],
            axes,
        ),
        "factor_eigenvalues": CellTable(
            ["component", "eigenvalue", "threshold", "percentile", "draws", "retained"], eigen
        ),
        "factor_summary": CellTable(["statistic", "estimate", "low", "high", "completions"],
                                   summary),
        "factor_systems": CellTable(
            ["system", "completions", *(f"mean_{c}" for c in factor_columns), "mean_axis_z",
             "mean_win_rate"],
            systems,
        ),
        "factor_scores": CellTable(
            ["completion", "system", "conversation", "comparisons", "win_rate",
             *(f"score_{a}" for a in AXES), *(f"z_{a}" for a in AXES), *factor_columns],
            per_completion,
        ),
    }  # fmt: skip
