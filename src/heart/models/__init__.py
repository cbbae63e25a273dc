"""Models behind one ChatModel protocol; providers are imported only when a study uses them."""

from __future__ import annotations

from heart.config import ModelSpec
from heart.models._batch import BatchAPI, BatchResult, BatchState, BatchStatus
from heart.models._protocol import (
    CALL_KEY_VERSION,
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    billed,
    call_key,
    prefix_cache_key,
    usage_columns,
)


def make_chat_model(spec: ModelSpec) -> ChatModel:
    """The ChatModel for a study's model section."""
    if spec.provider == "embedded":
        from heart.models.embedded import EmbeddedModel

        return EmbeddedModel(spec.model, n_ctx=spec.n_ctx)
    if spec.provider == "openai":
        from heart.models.openai_compat import OpenAICompatibleModel

        return OpenAICompatibleModel(spec)
    from heart.models.anthropic import AnthropicModel

    return AnthropicModel(spec)


__all__ = [
    "CALL_KEY_VERSION",
    "BatchAPI",
    "BatchResult",
    "BatchState",
    "BatchStatus",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "billed",
    "call_key",
    "make_chat_model",
    "prefix_cache_key",
    "usage_columns",
]
