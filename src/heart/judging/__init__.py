"""Judging: the HEART rubric prompt, the strict verdict schema, the pair design, LLM judges."""

from heart.judging._llm import (
    JudgingSummary,
    judge_pairs,
    judge_request,
    judgment_id,
    plan_judging,
)
from heart.judging._pairs import build_pairs, pair_id, seeded_order
from heart.judging._schema import VERDICT_SCHEMA, InvalidVerdict, Verdict, parse_verdict

__all__ = [
    "VERDICT_SCHEMA",
    "InvalidVerdict",
    "JudgingSummary",
    "Verdict",
    "build_pairs",
    "judge_pairs",
    "judge_request",
    "judgment_id",
    "pair_id",
    "parse_verdict",
    "plan_judging",
    "seeded_order",
]
