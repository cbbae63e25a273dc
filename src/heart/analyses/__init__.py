"""Analyses: each joins store data to the pure statistics in heart.stats."""

from heart.analyses._comparisons import Comparisons, load_comparisons
from heart.analyses._leaderboard import (
    Leaderboard,
    Standing,
    build_leaderboard,
    per_conversation_wins,
)
from heart.analyses._position import PositionCheck, position_checks, wilson_interval

__all__ = [
    "Comparisons",
    "Leaderboard",
    "PositionCheck",
    "Standing",
    "build_leaderboard",
    "load_comparisons",
    "per_conversation_wins",
    "position_checks",
    "wilson_interval",
]
