"""Analyses: each joins store data to the pure statistics in heart.stats."""

from heart.analyses._audit import JudgeAudit, Share, VerdictCounts, audit_judges, verdict_counts
from heart.analyses._comparisons import Comparisons, load_comparisons
from heart.analyses._leaderboard import (
    Leaderboard,
    Standing,
    build_leaderboard,
    per_conversation_wins,
)
from heart.analyses._majority import PairMajority, ensemble_majority, judge_votes

__all__ = [
    "Comparisons",
    "JudgeAudit",
    "Leaderboard",
    "PairMajority",
    "Share",
    "Standing",
    "VerdictCounts",
    "audit_judges",
    "build_leaderboard",
    "ensemble_majority",
    "judge_votes",
    "load_comparisons",
    "per_conversation_wins",
    "verdict_counts",
]
