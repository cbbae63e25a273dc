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

    def _new_client(self, secret: str) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key=secret, base_url=self.endpoint, max_retries=0, timeout=None
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        client = self._connect()
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
        start = time.perf_counter()
        try:
            if request.stream:
                return await self._streamed(client, kwargs, start)
            answer = await client.chat.completions.create(**kwargs)
            if not answer.choices:
                raise ModelCallError(
                    "the answer has no choices", retryable=True, cause=Cause.SERVER
                )
            usage = answer.usage
            return ChatResponse(
                text=answer.choices[0].message.content or "",
                tokens_in=usage.prompt_tokens if usage else 0,
                tokens_out=usage.completion_tokens if usage else 0,
                latency_ms=(time.perf_counter() - start) * 1000,
                finish_reason=answer.choices[0].finish_reason,
            )
        except ModelCallError:
            raise
        except Exception as exc:
            raise translate_error(exc, [self._secret]) from None

    async def _streamed(self, client: Any, kwargs: dict[str, Any], start: float) -> ChatResponse:
        stream = await client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        pieces: list[str] = []
        ttft: float | None = None
        finish: str | None = None
        tokens_in: int | None = None
        tokens_out: int | None = None
        async for chunk in stream:
            if chunk.usage is not None:
                tokens_in, tokens_out = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
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
        return ChatResponse(
            text="".join(pieces),
            tokens_in=tokens_in,  # some servers (llama.cpp) do not report usage when streaming
            tokens_out=tokens_out if tokens_out is not None else len(pieces),
            ttft_ms=ttft,
            latency_ms=(time.perf_counter() - start) * 1000,
            finish_reason=finish,
        )


def translate_error(exc: Exception, secrets: list[str]) -> ModelCallError:
    """An SDK or transport exception as a ModelCallError the engine knows how to treat."""
    from heart.models._errors import redact, retry_after_seconds, status_is_retryable

    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    name = type(exc).__name__
    message = redact(f"{name}: {exc}", secrets)
    if isinstance(status, int):
        return ModelCallError(
            f"HTTP {status}: {message}",
            retryable=status_is_retryable(status),
            retry_after=retry_after_seconds(getattr(response, "headers", None)),
            status=status,
        )
    cause = _transient_cause(exc)
    if cause is not None:
        return ModelCallError(message, retryable=True, cause=cause)
    return ModelCallError(message, retryable=False)


TIMEOUT_NAMES = frozenset({"APITimeoutError", "TimeoutException"})
CONNECTION_NAMES = frozenset({"APIConnectionError", "TransportError"})
GARBLED_NAMES = frozenset({"APIResponseValidationError"})


def _transient_cause(exc: Exception) -> Cause | None:
    """Why a transient failure happened: a timeout, a refused, dropped or cut-off connection,
    or a garbled body (the server's fault); None when the failure is not transient. SDK and
    transport classes are matched by name, so no SDK needs importing here."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or names & TIMEOUT_NAMES:
        return Cause.TIMEOUT
    if isinstance(exc, ConnectionError) or names & CONNECTION_NAMES:
        return Cause.CONNECTION
    if isinstance(exc, ValueError) or names & GARBLED_NAMES:  # JSONDecodeError included
        return Cause.SERVER
    return None
