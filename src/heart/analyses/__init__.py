"""Analyses: each joins store data to the pure statistics in heart.stats."""

from heart.analyses._agreement import (
    CLEAR_CONSENSUS,
    AgreementReport,
    Reliability,
    Stability,
    analyse_agreement,
    human_llm_agreement,
)
from heart.analyses._audit import JudgeAudit, VerdictCounts, audit_judges, verdict_counts
from heart.analyses._boards import (
    BEST_HUMAN,
    SOURCE_TITLES,
    Board,
    best_human_comparisons,
    build_boards,
)
from heart.analyses._comparisons import Comparisons, Source, load_comparisons
from heart.analyses._factors import (
    FACTOR_ROUGH_BELOW,
    MIN_FACTOR_COMPLETIONS,
    AxisScores,
    AxisSummary,
    FactorStructure,
    IntervalEstimate,
    SystemFactorScores,
    axis_scores,
    factor_structure,
)
from heart.analyses._hostility import (
    MIN_SEPARATION,
    MIN_SPEARMAN,
    AdversarialReport,
    KeptHostility,
    ProfileOutcome,
    RaterCheck,
    adversarial_report,
)
from heart.analyses._leaderboard import (
    Ablation,
    Leaderboard,
    Standing,
    build_leaderboard,
    per_conversation_wins,
)
from heart.analyses._majority import PairMajority, ensemble_majority, judge_votes
from heart.analyses._subsets import SubsetComparison, SubsetShift, compare_subsets

__all__ = [
    "BEST_HUMAN",
    "CLEAR_CONSENSUS",
    "FACTOR_ROUGH_BELOW",
    "MIN_FACTOR_COMPLETIONS",
    "MIN_SEPARATION",
    "MIN_SPEARMAN",
    "SOURCE_TITLES",
    "Ablation",
    "AdversarialReport",
    "AgreementReport",
    "AxisScores",
    "AxisSummary",
    "Board",
    "Comparisons",
    "FactorStructure",
    "IntervalEstimate",
    "JudgeAudit",
    "KeptHostility",
    "Leaderboard",
    "PairMajority",
    "ProfileOutcome",
    "RaterCheck",
    "Reliability",
    "Source",
    "Stability",
    "Standing",
    "SubsetComparison",
    "SubsetShift",
    "SystemFactorScores",
    "VerdictCounts",
    "adversarial_report",
    "analyse_agreement",
    "audit_judges",
    "axis_scores",
    "best_human_comparisons",
    "build_boards",
    "build_leaderboard",
    "compare_subsets",
    "ensemble_majority",
    "factor_structure",
    "human_llm_agreement",
    "judge_votes",
    "load_comparisons",
    "per_conversation_wins",
    "verdict_counts",
]
