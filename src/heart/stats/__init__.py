"""Rating and agreement statistics: pure functions on arrays (Bradley–Terry, Elo, bootstrap,
intervals, multiple comparisons, inter-rater agreement)."""

from heart.stats._agreement import category_table, fleiss_kappa, krippendorff_alpha
from heart.stats._bootstrap import (
    BootstrapResult,
    bootstrap_by_conversation,
    bootstrap_share_by_conversation,
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
from heart.stats._differences import EloDifference, elo_differences
from heart.stats._intervals import paper_interval, percentile_interval
from heart.stats._multiple import benjamini_hochberg
from heart.stats._online_elo import online_elo
from heart.stats._proportions import wilson_interval
from heart.stats._share import Share
from heart.stats._wins import overall_win_rate, win_matrix, win_rates

__all__ = [
    "ELO_BASE",
    "ELO_SCALE",
    "SEPARATION_RIDGE",
    "BootstrapResult",
    "BradleyTerryFit",
    "EloDifference",
    "Share",
    "benjamini_hochberg",
    "bootstrap_by_conversation",
    "bootstrap_share_by_conversation",
    "bradley_terry_mle_exists",
    "category_table",
    "cluster_robust_interval",
    "elo_differences",
    "elo_from_theta",
    "fit_bradley_terry",
    "fit_bradley_terry_batch",
    "fleiss_kappa",
    "krippendorff_alpha",
    "online_elo",
    "overall_win_rate",
    "paper_interval",
    "percentile_interval",
    "wilson_interval",
    "win_matrix",
    "win_rates",
]
