"""The engine: every model call of every stage runs through here."""

from heart.engine._calls import (
    Call,
    CallFailure,
    CallsFailed,
    Check,
    Engine,
    PlannedModel,
    Progress,
    ProgressFn,
    Recorder,
    RunSummary,
    plan_calls,
    run_calls,
)
from heart.engine._limits import EndpointLimits, TokenBucket
from heart.engine._retry import RetryPolicy, call_with_retries

__all__ = [
    "Call",
    "CallFailure",
    "CallsFailed",
    "Check",
    "EndpointLimits",
    "Engine",
    "PlannedModel",
    "Progress",
    "ProgressFn",
    "Recorder",
    "RetryPolicy",
    "RunSummary",
    "TokenBucket",
    "call_with_retries",
    "plan_calls",
    "run_calls",
]
