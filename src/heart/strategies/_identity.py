"""How a classifier is named in the store: the model section's provider, model and endpoint."""

from __future__ import annotations

from heart.config import ModelSpec

DEFAULT_CLASSIFIER = ModelSpec(max_tokens=1400)
"""The embedded model, with room for 15 answers (under a grammar it spends many tokens on the
JSON around them)."""


def classifier_id(spec: ModelSpec) -> str:
    """Like ``openai:gpt-4o@https://api.openai.com/v1``: whose labels a classification holds."""
    return f"{spec.provider}:{spec.model}@{spec.endpoint}"
