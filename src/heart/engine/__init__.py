"""The engine: every model call of every stage runs through here."""

from heart.engine._calls import Call, RunSummary, run_calls

__all__ = ["Call", "RunSummary", "run_calls"]
