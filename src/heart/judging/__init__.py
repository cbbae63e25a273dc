"""Judging: the HEART rubric prompt, the strict verdict schema, the pair design, LLM judges."""

from heart.judging._adaptive import (
    add_round,
    judge_in_rounds,
    next_round,
    projected_pairs,
    round_of,
)
from heart.judging._assign import EnsembleJudge, PairFamilies, Schedule, schedule_judges
from heart.judging._llm import (
    JudgingInputs,
    JudgingPlan,
    JudgingSummary,
    judge_pairs,
    judge_request,
    plan_judging,
    schedule_for,
    verdict_check,
    verdict_problem,
)
from heart.judging._pairs import build_pairs, pairs_to_add
from heart.judging._schema import VERDICT_SCHEMA, InvalidVerdict, Verdict, parse_verdict

__all__ = [
    "VERDICT_SCHEMA",
    "EnsembleJudge",
    "InvalidVerdict",
    "JudgingInputs",
    "JudgingPlan",
    "JudgingSummary",
    "PairFamilies",
    "Schedule",
    "Verdict",
    "add_round",
    "build_pairs",
    "judge_in_rounds",
    "judge_pairs",
    "judge_request",
    "next_round",
    "pairs_to_add",
    "parse_verdict",
    "plan_judging",
    "projected_pairs",
    "round_of",
    "schedule_for",
    "schedule_judges",
    "verdict_check",
    "verdict_problem",
]
