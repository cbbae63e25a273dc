"""Analyses: each joins store data to the pure statistics in heart.stats."""

from heart.analyses._agreement import (
    CLEAR_CONSENSUS,
    AgreementReport,
    Reliability,
    Stability,
    analyse_agreement,
)
from heart.analyses._audit import JudgeAudit, VerdictCounts, audit_judges, verdict_counts
from heart.analyses._boards import BEST_HUMAN, Board, best_human_comparisons, build_boards
from heart.analyses._comparisons import Comparisons, Source, load_comparisons
from heart.analyses._leaderboard import (
    Ablation,
    Leaderboard,
    Standing,
    build_leaderboard,
    per_conversation_wins,
)
from heart.analyses._majority import PairMajority, ensemble_majority, judge_votes

__all__ = [
    "BEST_HUMAN",
    "CLEAR_CONSENSUS",
    "Ablation",
    "AgreementReport",
    "Board",
    "Comparisons",
    "JudgeAudit",
    "Leaderboard",
    "PairMajority",
    "Reliability",
    "Source",
    "Stability",
    "Standing",
    "VerdictCounts",
    "analyse_agreement",
    "audit_judges",
    "best_human_comparisons",
    "build_boards",
    "build_leaderboard",
    "ensemble_majority",
    "judge_votes",
    "load_comparisons",
    "per_conversation_wins",
    "verdict_counts",
]
