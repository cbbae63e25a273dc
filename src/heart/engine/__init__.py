"""The engine: every model call of every stage runs through here."""

from heart.engine._calls import (
    Call,
    Check,
    Engine,
    PlannedModel,
    Recorder,
    RunSummary,
    plan_calls,
    run_calls,
)
from heart.engine._limits import ProviderLimits, TokenBucket
from heart.engine._retry import RetryPolicy, call_with_retries

__all__ = [
    "Call",
    "Check",
    "Engine",
    "PlannedModel",
    "ProviderLimits",
    "Recorder",
    "RetryPolicy",
    "RunSummary",
    "TokenBucket",
    "call_with_retries",
    "plan_calls",
    "run_calls",
]
