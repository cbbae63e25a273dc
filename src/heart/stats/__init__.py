"""Rating statistics: pure functions on arrays (Bradley–Terry, Elo, bootstrap, intervals)."""

from heart.stats._bootstrap import BootstrapResult, bootstrap_by_conversation
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
from heart.stats._intervals import paper_interval, percentile_interval
from heart.stats._proportions import wilson_interval
from heart.stats._wins import overall_win_rate, win_matrix, win_rates

__all__ = [
    "ELO_BASE",
    "ELO_SCALE",
    "SEPARATION_RIDGE",
    "BootstrapResult",
    "BradleyTerryFit",
    "bootstrap_by_conversation",
    "bradley_terry_mle_exists",
    "elo_from_theta",
    "fit_bradley_terry",
    "fit_bradley_terry_batch",
    "overall_win_rate",
    "paper_interval",
    "percentile_interval",
    "wilson_interval",
    "win_matrix",
    "win_rates",
]
