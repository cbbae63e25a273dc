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
from heart.analyses._hostility import (
    MIN_SEPARATION,
    MIN_SPEARMAN,
    AdversarialReport,
    KeptHostility,
    ProfileOutcome,
    RaterCheck,
    adversarial_report,
)
from heart.analyses._labels import human_consensus
from heart.analyses._leaderboard import (
    Ablation,
    Leaderboard,
    Standing,
    build_leaderboard,
    per_conversation_wins,
)
from heart.analyses._majority import PairMajority, ensemble_majority, judge_votes
from heart.analyses._strategies import (
    ALL_ITEMS,
    ESCONV_MAPPING,
    ESCONV_UNCLEAR,
    ESCONV_UNMAPPED,
    MIN_MACRO_F1,
    MIN_REPLIES,
    ClassifierF1,
    StrategyReport,
    StrategyUse,
    UsageGap,
    analyse_strategies,
    esconv_reference,
)
from heart.analyses._subsets import SubsetComparison, SubsetShift, compare_subsets

__all__ = [
    "ALL_ITEMS",
    "BEST_HUMAN",
    "CLEAR_CONSENSUS",
    "ESCONV_MAPPING",
    "ESCONV_UNCLEAR",
    "ESCONV_UNMAPPED",
    "MIN_MACRO_F1",
    "MIN_REPLIES",
    "MIN_SEPARATION",
    "MIN_SPEARMAN",
    "SOURCE_TITLES",
    "Ablation",
    "AdversarialReport",
    "AgreementReport",
    "Board",
    "ClassifierF1",
    "Comparisons",
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
    "StrategyReport",
    "StrategyUse",
    "SubsetComparison",
    "SubsetShift",
    "UsageGap",
    "VerdictCounts",
    "adversarial_report",
    "analyse_agreement",
    "analyse_strategies",
    "audit_judges",
    "best_human_comparisons",
    "build_boards",
    "build_leaderboard",
    "compare_subsets",
    "ensemble_majority",
    "esconv_reference",
    "human_consensus",
    "human_llm_agreement",
    "judge_votes",
    "load_comparisons",
    "per_conversation_wins",
    "verdict_counts",
]
