"""Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama, OpenRouter, Gemini's
compatible endpoint...) through the `openai` SDK, imported only when a study uses it."""

from __future__ import annotations

import time
from typing import Any

from heart.config import ModelSpec, ProviderName
from heart.models._errors import Cause, ModelCallError
from heart.models._protocol import ChatRequest, ChatResponse
from heart.models._remote import RemoteModel

INSTALL_HINT = "install the OpenAI SDK: pip install 'heart-bench[openai]'"


def _response_format(spec: ModelSpec, schema: dict[str, Any]) -> dict[str, Any] | None:
    """How this endpoint is asked for JSON that follows ``schema``."""
    if spec.structured_output == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    if spec.structured_output == "json_object_schema":  # llama.cpp server
        return {"type": "json_object", "schema": schema}
    if spec.structured_output == "json_object":
        return {"type": "json_object"}
    return None


class OpenAICompatibleModel(RemoteModel):
    """Chat completions over HTTP; SDK retries are off because the engine does its own."""

    provider: ProviderName = "openai"
    install_hint = INSTALL_HINT

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.output_mode: str = spec.structured_output
        from heart.models.openai_batch import OpenAIBatches

        if len(self.replicas) == 1:  # replicas answer live (a batch API is one server's)
            self.batches = OpenAIBatches(self)

    def _new_client(self, secret: str, http: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key=secret, base_url=self.endpoint, max_retries=0, timeout=None, http_client=http
        )

    def _new_http(self) -> Any:
        import openai

        return openai.DefaultAsyncHttpxClient()

    def arguments(self, request: ChatRequest) -> dict[str, Any]:
        """The body of a chat completion asking ``request``, live or in a batch."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if request.json_schema is not None:
            response_format = _response_format(self._spec, request.json_schema)
            if response_format is not None:
                kwargs["response_format"] = response_format
        if request.cache_key is not None and self._spec.prompt_cache != "off":
            kwargs["prompt_cache_key"] = request.cache_key
        return kwargs

    async def complete(self, request: ChatRequest) -> ChatResponse:
        client = self._connect()
        kwargs = self.arguments(request)
        start = time.perf_counter()
        try:
            if request.stream:
                return await self._streamed(client, kwargs, start)
            answer = await client.chat.completions.create(**kwargs)
            return completion_answer(answer, latency_ms=(time.perf_counter() - start) * 1000)
        except Exception as exc:
            raise self.failure(exc) from None

    async def _streamed(self, client: Any, kwargs: dict[str, Any], start: float) -> ChatResponse:
        stream = await client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        pieces: list[str] = []
        ttft: float | None = None
        finish: str | None = None
        usage: Any = None
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    if ttft is None:
                        ttft = (time.perf_counter() - start) * 1000
                    pieces.append(choice.delta.content)
                finish = choice.finish_reason or finish
        if finish is None:
            raise ModelCallError(
                "the stream ended before the answer was complete",
                retryable=True,
                cause=Cause.CONNECTION,
            )
        # some servers (llama.cpp) do not report usage when streaming
        return answer_of(
            "".join(pieces),
            finish,
            usage,
            unreported=(None, len(pieces)),
            ttft_ms=ttft,
            latency_ms=(time.perf_counter() - start) * 1000,
        )


def completion_answer(
    completion: Any, *, latency_ms: float = 0.0, batch_id: str | None = None
) -> ChatResponse:
    """The answer in a chat.completion (the SDK's object), live or from a batch's line."""
    if not completion.choices:
        raise ModelCallError("the answer has no choices", retryable=True, cause=Cause.SERVER)
    choice = completion.choices[0]
    return answer_of(
        choice.message.content or "",
        choice.finish_reason,
        completion.usage,
        latency_ms=latency_ms,
        batch_id=batch_id,
    )


def answer_of(
    text: str,
    finish: str | None,
    usage: Any,
    *,
    unreported: tuple[int | None, int | None] = (0, 0),
    **timing: Any,
) -> ChatResponse:
    """An answer from its text, finish reason and the server's ``usage`` report (plain,
    streamed or batched); ``unreported`` are the token counts when there is no report. Cached
    prompt tokens are among ``prompt_tokens``."""
    if usage is None:
        tokens_in, tokens_out = unreported
        return ChatResponse(
            text=text, tokens_in=tokens_in, tokens_out=tokens_out, finish_reason=finish, **timing
        )
    details = getattr(usage, "prompt_tokens_details", None)
    return ChatResponse(
        text=text,
        tokens_in=usage.prompt_tokens,
        tokens_out=usage.completion_tokens,
        finish_reason=finish,
        cached_tokens_in=getattr(details, "cached_tokens", None) or 0,
        cache_write_tokens=getattr(details, "cache_write_tokens", None) or 0,
        **timing,
    )
