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

    def call_hash(self, provider: str, model: str) -> str:
        """The cache and resume key of this request sent to ``provider``/``model``."""
        request = self.model_dump(mode="json", exclude={"stream"})
        return sha256_hex(
            canonical_json({"provider": provider, "model": model, "request": request})
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
    """A model behind any provider; ``complete`` streams where it can to time the first token."""

    provider: ProviderName
    model: str

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...
