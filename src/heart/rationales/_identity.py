"""How a coder is named in the store: the rule coder by its version, an LLM coder by its model
section's provider, model and endpoint."""

from __future__ import annotations

from heart.config import ModelSpec

RULE_CODER = "rules-v1"
"""The rule coder's name in the store; a new version of how it reads sides gets a new name."""


def llm_coder_id(spec: ModelSpec) -> str:
    """Like ``openai:gpt-4o-mini@https://api.openai.com/v1``: whose codes a coding holds."""
    return f"{spec.provider}:{spec.model}@{spec.endpoint}"
