"""Anthropic's Messages API through the `anthropic` SDK, imported only when a study uses it.

Structured output uses a forced tool call whose input schema is the requested JSON schema.
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
from heart.models.openai_compat import translate_error

INSTALL_HINT = "install the Anthropic SDK: pip install 'heart-bench[anthropic]'"
TOOL = "answer"


class AnthropicModel(RemoteModel):
    provider: ProviderName = "anthropic"
    output_mode = "tool"
    install_hint = INSTALL_HINT

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self._sampling: set[str] = set()

    def _new_client(self, secret: str) -> Any:
        import anthropic

        client = anthropic.AsyncAnthropic(
            api_key=secret, base_url=self.endpoint, max_retries=0, timeout=None
        )
        # newer SDKs fix sampling on the server side and no longer take these arguments
        accepted = inspect.signature(client.messages.create).parameters
        self._sampling = {"temperature", "top_p"} & set(accepted)
        return client

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": m.role, "content": m.content}
                for m in request.messages
                if m.role != "system"
            ],
            "max_tokens": request.max_tokens,
        }
        if "temperature" in self._sampling:
            kwargs["temperature"] = request.temperature
        if "top_p" in self._sampling and request.top_p < 1:
            kwargs["top_p"] = request.top_p
        if system:
            kwargs["system"] = system
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
        kwargs = self._arguments(request)
        start = time.perf_counter()
        try:
            if request.stream and request.json_schema is None:
                return await self._streamed(client, kwargs, start)
            answer = await client.messages.create(**kwargs)
        except ModelCallError:
            raise
        except Exception as exc:
            raise translate_error(exc, [self._secret]) from None
        text = ""
        for block in answer.content:
            if block.type == "tool_use":
                text = json.dumps(block.input)
                break
            if block.type == "text":
                text += block.text
        return ChatResponse(
            text=text,
            tokens_in=answer.usage.input_tokens,
            tokens_out=answer.usage.output_tokens,
            latency_ms=(time.perf_counter() - start) * 1000,
            finish_reason=answer.stop_reason,
        )

    async def _streamed(self, client: Any, kwargs: dict[str, Any], start: float) -> ChatResponse:
        stream = await client.messages.create(**kwargs, stream=True)
        pieces: list[str] = []
        ttft: float | None = None
        finish: str | None = None
        tokens_in = tokens_out = 0
        finished = False
        async for event in stream:
            if event.type == "message_start":
                tokens_in = event.message.usage.input_tokens
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                if ttft is None:
                    ttft = (time.perf_counter() - start) * 1000
                pieces.append(event.delta.text)
            elif event.type == "message_delta":
                finish = event.delta.stop_reason
                tokens_out = event.usage.output_tokens
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
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            ttft_ms=ttft,
            latency_ms=(time.perf_counter() - start) * 1000,
            finish_reason=finish,
        )
