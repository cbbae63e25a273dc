"""The one seam every model call goes through: a request, a response, and the ChatModel protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from heart.config import ModelSpec, Price, ProviderName
from heart.types import canonical_json, sha256_hex

if TYPE_CHECKING:
    from heart.models._batch import BatchAPI


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
    cache_key: str | None = Field(
        None,
        description="the same for requests that share a prompt prefix (an item's), so a "
        "provider routes them to one prefix cache (does not change the answer)",
    )
    shared_chars: int = Field(
        0,
        ge=0,
        description="how many leading characters of the first user message other requests "
        "share: with the system prompt, the prefix a provider cache may hold (does not change "
        "the answer)",
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
    cached_tokens_in: int = Field(
        0, description="prompt tokens read from the provider's prompt cache (in tokens_in)"
    )
    cache_write_tokens: int = Field(
        0, description="prompt tokens written to the provider's cache for 5 minutes (in tokens_in)"
    )
    cache_write_1h_tokens: int = Field(
        0, description="prompt tokens written to the provider's cache for an hour (in tokens_in)"
    )
    batch_id: str | None = Field(
        None, description="the provider batch that answered, billed at its batch price"
    )
    cached: bool = Field(False, description="served from the store's call cache")
    earlier: tuple[tuple[str, str], ...] = Field(
        (), description="(answer, problem) of each earlier answer the stage's check refused"
    )


def prefix_cache_key(*parts: str) -> str:
    """A short, stable ``cache_key`` for the requests that share a prefix made of ``parts``
    (a prompt and an item, say); it reveals nothing of them."""
    return "heart-" + sha256_hex(canonical_json(list(parts)))[:24]


def billed(price: Price, response: ChatResponse) -> float:
    """What ``response`` cost at ``price``: its cache reads and writes at their own prices, and
    the batch price when a batch answered it."""
    return price.cost(
        response.tokens_in,
        response.tokens_out,
        cache_read=response.cached_tokens_in,
        cache_write=response.cache_write_tokens,
        cache_write_1h=response.cache_write_1h_tokens,
        batch=response.batch_id is not None,
    )


def usage_columns(price: Price, response: ChatResponse) -> dict[str, int | float | None]:
    """What a stage's row keeps of an answer's usage: its tokens, the prompt tokens a provider
    cache served, what it was billed, and what it would have cost live at list price."""
    return {
        "tokens_in": response.tokens_in,
        "tokens_out": response.tokens_out,
        "cached_tokens_in": response.cached_tokens_in,
        "cost_usd": billed(price, response),
        "list_cost_usd": price.cost(response.tokens_in, response.tokens_out),
    }


class ChatModel(Protocol):
    """A model behind any provider; ``complete`` streams where it can to time the first token.

    ``endpoint`` is where it is reached (a normalised base URL, or ``in-process``);
    ``output_mode`` how it is held to a JSON schema (an OpenAI-compatible server's
    ``structured_output``, Anthropic's forced ``tool``, the embedded model's ``grammar``);
    ``context_window`` the tokens heart opens the model with, where heart chooses it (the
    embedded model: a reply stops at the window's end), else None; ``batches`` the provider's
    batch API for this model, or None where it has none; ``replicas`` the models that answer
    for this one, each at one server (the model itself alone, unless its ``base_url`` lists
    several): they share its identity, so their answers share its call keys.
    """

    provider: ProviderName
    model: str
    endpoint: str
    output_mode: str
    context_window: int | None
    batches: BatchAPI | None

    @property
    def replicas(self) -> tuple[ChatModel, ...]: ...

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...


ANSWER_NEUTRAL = frozenset({"stream", "cache_key", "shared_chars"})
"""Request fields that change how a request travels, never its answer: left out of call keys."""

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
        "request": request.model_dump(mode="json", exclude=set(ANSWER_NEUTRAL)),
    }
    return sha256_hex(canonical_json(identity))
