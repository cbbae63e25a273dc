"""The engine: every model call of every stage runs through here."""

from heart.engine._batch_store import BatchView, stored_batches
from heart.engine._calls import (
    Call,
    CallFailure,
    CallsFailed,
    Check,
    PlannedModel,
    Progress,
    ProgressFn,
    Recorder,
    ReplicaLoad,
    RunSummary,
    replica_lines,
)
from heart.engine._limits import EndpointLimits, TokenBucket
from heart.engine._plan import plan_calls
from heart.engine._retry import RetryPolicy, call_with_retries
from heart.engine._run import Engine, run_calls

__all__ = [
    "BatchView",
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
    "ReplicaLoad",
    "RetryPolicy",
    "RunSummary",
    "TokenBucket",
    "call_with_retries",
    "plan_calls",
    "replica_lines",
    "run_calls",
    "stored_batches",
]
