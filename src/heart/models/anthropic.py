"""Anthropic's Messages API through the `anthropic` SDK, imported only when a study uses it.

Structured output uses a forced tool call whose input schema is the requested JSON schema. With
the model's prompt cache on, the system prompt and the shared head of the first user message are
marked with ``cache_control``, so requests that share them read them from Anthropic's cache.
"""

from __future__ import annotations

import inspect
import json
import time
from typing import Any

from heart.config import ModelSpec, ProviderName
from heart.models._errors import Cause, ModelCallError
from heart.models._protocol import ChatRequest, ChatResponse
from heart.models._remote import RemoteModel

INSTALL_HINT = "install the Anthropic SDK: pip install 'heart-bench[anthropic]'"
TOOL = "answer"


class AnthropicModel(RemoteModel):
    provider: ProviderName = "anthropic"
    output_mode = "tool"
    install_hint = INSTALL_HINT

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self._sampling: set[str] = set()
        from heart.models.anthropic_batch import AnthropicBatches

        if len(self.replicas) == 1:  # replicas answer live (a batch API is one server's)
            self.batches = AnthropicBatches(self)

    def _new_client(self, secret: str, http: Any) -> Any:
        import anthropic

        client = anthropic.AsyncAnthropic(
            api_key=secret, base_url=self.endpoint, max_retries=0, timeout=None, http_client=http
        )
        # newer SDKs fix sampling on the server side and no longer take these arguments
        accepted = inspect.signature(client.messages.create).parameters
        self._sampling = {"temperature", "top_p"} & set(accepted)
        return client

    def _new_http(self) -> Any:
        import anthropic

        return anthropic.DefaultAsyncHttpxClient()

    def arguments(self, request: ChatRequest) -> dict[str, Any]:
        """The parameters of a Messages request asking ``request``, live or in a batch (after
        ``_connect``, which learns what sampling the SDK takes)."""
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        messages: list[dict[str, Any]] = [
            {"role": m.role, "content": m.content} for m in request.messages if m.role != "system"
        ]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
        }
        if "temperature" in self._sampling:
            kwargs["temperature"] = request.temperature
        if "top_p" in self._sampling and request.top_p < 1:
            kwargs["top_p"] = request.top_p
        if system:
            kwargs["system"] = system
        if self._spec.prompt_cache != "off":
            mark = {"type": "ephemeral", "ttl": self._spec.prompt_cache}
            if system:
                kwargs["system"] = [{"type": "text", "text": system, "cache_control": mark}]
            first = next((m for m in messages if m["role"] == "user"), None)
            if first is not None and request.shared_chars > 0:
                text, cut = first["content"], request.shared_chars
                first["content"] = [{"type": "text", "text": text[:cut], "cache_control": mark}]
                if text[cut:]:
                    first["content"].append({"type": "text", "text": text[cut:]})
        if request.json_schema is not None:
            kwargs["tools"] = [
                {
                    "name": TOOL,
                    "description": "Give the answer.",
                    "input_schema": request.json_schema,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": TOOL}
        return kwargs

    async def complete(self, request: ChatRequest) -> ChatResponse:
        client = self._connect()
        kwargs = self.arguments(request)
        start = time.perf_counter()
        try:
            if request.stream and request.json_schema is None:
                return await self._streamed(client, kwargs, start)
            answer = await client.messages.create(**kwargs)
        except Exception as exc:
            raise self.failure(exc) from None
        return message_answer(answer, latency_ms=(time.perf_counter() - start) * 1000)

    async def _streamed(self, client: Any, kwargs: dict[str, Any], start: float) -> ChatResponse:
        stream = await client.messages.create(**kwargs, stream=True)
        pieces: list[str] = []
        ttft: float | None = None
        finish: str | None = None
        usage: dict[str, Any] = {}
        finished = False
        async for event in stream:
            if event.type == "message_start":
                usage.update(_reported(event.message.usage))
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                if ttft is None:
                    ttft = (time.perf_counter() - start) * 1000
                pieces.append(event.delta.text)
            elif event.type == "message_delta":
                finish = event.delta.stop_reason
                usage.update(_reported(event.usage))  # the final counts, where it gives them
            elif event.type == "message_stop":
                finished = True
        if not finished:
            raise ModelCallError(
                "the stream ended before the answer was complete",
                retryable=True,
                cause=Cause.CONNECTION,
            )
        return ChatResponse(
            text="".join(pieces),
            ttft_ms=ttft,
            latency_ms=(time.perf_counter() - start) * 1000,
            finish_reason=finish,
            **usage_fields(usage),
        )


def message_answer(
    message: Any, *, latency_ms: float = 0.0, batch_id: str | None = None
) -> ChatResponse:
    """The answer in a Message (the SDK's object), live or from a batch's result: the forced
    tool's input as JSON, else the text."""
    text = ""
    for block in message.content:
        if block.type == "tool_use":
            text = json.dumps(block.input)
            break
        if block.type == "text":
            text += block.text
    return ChatResponse(
        text=text,
        latency_ms=latency_ms,
        finish_reason=message.stop_reason,
        batch_id=batch_id,
        **usage_fields(_reported(message.usage)),
    )


USAGE_NAMES = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cache_creation",
)


def _reported(usage: Any) -> dict[str, Any]:
    """The counts a usage report (a Message's, or a stream event's) gives, by name."""
    values = {name: getattr(usage, name, None) for name in USAGE_NAMES}
    return {name: value for name, value in values.items() if value is not None}


def usage_fields(usage: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's usage as heart counts it: ``input_tokens`` leaves cache reads and writes
    out, ``tokens_in`` has every prompt token; writes are split by lifetime where the
    ``cache_creation`` breakdown says (all five-minute writes where it does not)."""
    read = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    breakdown = usage.get("cache_creation")
    hour = (getattr(breakdown, "ephemeral_1h_input_tokens", None) or 0) if breakdown else 0
    return {
        "tokens_in": (usage.get("input_tokens") or 0) + read + written,
        "tokens_out": usage.get("output_tokens") or 0,
        "cached_tokens_in": read,
        "cache_write_tokens": max(written - hour, 0),
        "cache_write_1h_tokens": hour,
    }
