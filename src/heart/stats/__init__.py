"""Rating, agreement and strategy statistics: pure functions on arrays (Bradley–Terry, Elo,
bootstrap, intervals, multiple comparisons, inter-rater agreement, strategy diversity, F1)."""

from heart.stats._agreement import (
    bootstrap_krippendorff_alpha_by_conversation,
    category_table,
    fleiss_kappa,
    krippendorff_alpha,
)
from heart.stats._bootstrap import (
    BootstrapResult,
    bootstrap_by_conversation,
    bootstrap_share_by_conversation,
    conversation_draws,
)
from heart.stats._bradley_terry import (
    ELO_BASE,
    ELO_SCALE,
    SEPARATION_RIDGE,
    BradleyTerryFit,
    bradley_terry_mle_exists,
    elo_from_theta,
    fit_bradley_terry,
    fit_bradley_terry_batch,
)
from heart.stats._cluster import cluster_robust_interval
from heart.stats._comention import CoMention, chance_co_mention, co_mention
from heart.stats._correlation import (
    FISHER_Z,
    SYSTEM_BOOTSTRAP,
    Correlation,
    least_squares_line,
    median_and_quartiles,
    pearson_correlation,
    spearman_correlation,
    spearman_rounds,
)
from heart.stats._differences import EloDifference, bootstrap_p_values, elo_differences
from heart.stats._diversity import (
    Diversity,
    coverage,
    mean_unique,
    rate_spread,
    strategy_diversity,
    usage_entropy,
    usage_rates,
)
from heart.stats._f1 import F1Result, f1_by_conversation, f1_scores
from heart.stats._factors import (
    MIN_UNIQUENESS,
    PARALLEL_DRAWS,
    PARALLEL_PERCENTILE,
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
    oblimin_rotation,
    parallel_analysis,
    random_correlation_eigenvalues,
    standardise,
)
from heart.stats._few_conversations import (
    clearly_above,
    few_conversations_factor,
    tied_ranks,
    widen,
)
from heart.stats._intervals import paper_interval, percentile_interval
from heart.stats._kappa import cohen_kappa
from heart.stats._logistic import LogisticFit, fit_logistic
from heart.stats._multiple import benjamini_hochberg
from heart.stats._online_elo import online_elo
from heart.stats._proportions import wilson_interval
from heart.stats._rates import RateDifference, rate_differences_by_conversation
from heart.stats._share import Share
from heart.stats._wins import overall_win_rate, win_matrix, win_rates

__all__ = [
    "ELO_BASE",
    "ELO_SCALE",
    "FISHER_Z",
    "MIN_UNIQUENESS",
    "PARALLEL_DRAWS",
    "PARALLEL_PERCENTILE",
    "SEPARATION_RIDGE",
    "SYSTEM_BOOTSTRAP",
    "BootstrapResult",
    "BradleyTerryFit",
    "CoMention",
    "Correlation",
    "Diversity",
    "EloDifference",
    "F1Result",
    "FactorSolution",
    "LogisticFit",
    "ParallelAnalysis",
    "RateDifference",
    "Share",
    "alpha_if_dropped",
    "benjamini_hochberg",
    "bootstrap_alpha_by_conversation",
    "bootstrap_by_conversation",
    "bootstrap_correlations_by_conversation",
    "bootstrap_krippendorff_alpha_by_conversation",
    "bootstrap_p_values",
    "bootstrap_share_by_conversation",
    "bradley_terry_mle_exists",
    "category_table",
    "chance_co_mention",
    "clearly_above",
    "cluster_robust_interval",
    "co_mention",
    "cohen_kappa",
    "conversation_draws",
    "correlation_eigenvalues",
    "coverage",
    "cronbach_alpha",
    "elo_differences",
    "elo_from_theta",
    "f1_by_conversation",
    "f1_scores",
    "factor_scores",
    "few_conversations_factor",
    "fit_bradley_terry",
    "fit_bradley_terry_batch",
    "fit_factor_analysis",
    "fit_logistic",
    "fleiss_kappa",
    "krippendorff_alpha",
    "least_squares_line",
    "max_factors",
    "mean_unique",
    "median_and_quartiles",
    "oblimin_rotation",
    "online_elo",
    "overall_win_rate",
    "paper_interval",
    "parallel_analysis",
    "pearson_correlation",
    "percentile_interval",
    "random_correlation_eigenvalues",
    "rate_differences_by_conversation",
    "rate_spread",
    "spearman_correlation",
    "spearman_rounds",
    "standardise",
    "strategy_diversity",
    "tied_ranks",
    "usage_entropy",
    "usage_rates",
    "widen",
    "wilson_interval",
    "win_matrix",
    "win_rates",
]
