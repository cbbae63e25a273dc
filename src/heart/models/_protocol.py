"""The one seam every model call goes through: a request, a response, and the ChatModel protocol."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from heart.config import ModelSpec, ProviderName
from heart.types import canonical_json, sha256_hex


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """Everything that determines a model's answer (and so its cache key)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    messages: tuple[Message, ...]
    max_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    json_schema: dict[str, Any] | None = None
    stream: bool = Field(
        False, description="stream the answer to time its first token (does not change it)"
    )

    @classmethod
    def prompted(cls, system: str, user: str, spec: ModelSpec, **options: Any) -> ChatRequest:
        """A system prompt and one user message, decoded as the model section says."""
        return cls(
            messages=(Message(role="system", content=system), Message(role="user", content=user)),
            max_tokens=spec.max_tokens,
            temperature=spec.temperature,
            top_p=spec.top_p,
            **options,
        )

    def follow_up(self, answer: str, message: str) -> ChatRequest:
        """This conversation continued: the model's ``answer``, then a new user ``message``."""
        return self.model_copy(
            update={
                "messages": (
                    *self.messages,
                    Message(role="assistant", content=answer),
                    Message(role="user", content=message),
                )
            }
        )


class ChatResponse(BaseModel):
    """A model's answer and what it cost in time and tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    text: str
    tokens_in: int | None = Field(0, description="None when the server did not report usage")
    tokens_out: int | None = 0
    ttft_ms: float | None = None
    latency_ms: float = 0.0
    finish_reason: str | None = None
    cached: bool = Field(False, description="served from the store's call cache")
    earlier: tuple[tuple[str, str], ...] = Field(
        (), description="(answer, problem) of each earlier answer the stage's check refused"
    )


class ChatModel(Protocol):
    """A model behind any provider; ``complete`` streams where it can to time the first token.

    ``endpoint`` is where it is reached (a normalised base URL, or ``in-process``);
    ``output_mode`` how it is held to a JSON schema (an OpenAI-compatible server's
    ``structured_output``, Anthropic's forced ``tool``, the embedded model's ``grammar``);
    ``context_window`` the tokens heart opens the model with, where heart chooses it (the
    embedded model: a reply stops at the window's end), else None.
    """

    provider: ProviderName
    model: str
    endpoint: str
    output_mode: str
    context_window: int | None

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...


CALL_KEY_VERSION = 2
"""Raised whenever what goes into a call key changes, so no answer cached under an older key is
ever served for a newer one. Version 2 added the endpoint and the output mode."""


def call_key(model: ChatModel, request: ChatRequest) -> str:
    """The cache and resume key of ``request`` sent to ``model``: everything that chooses the
    answer (provider, endpoint, model, the output mode when a schema is asked for, the context
    window heart opens it with, the request) and nothing that does not (streaming, timeouts,
    retries)."""
    identity = {
        "key": CALL_KEY_VERSION,
        "provider": model.provider,
        "endpoint": model.endpoint,
        "model": model.model,
        "output": model.output_mode if request.json_schema is not None else None,
        "context": model.context_window,
        "request": request.model_dump(mode="json", exclude={"stream"}),
    }
    return sha256_hex(canonical_json(identity))
