"""Models of both API providers pointed at the fake server, for tests of what goes on the wire."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from heart.config import ModelSpec
from heart.models import BatchResult, BatchStatus, ChatRequest, Message
from heart.models._remote import RemoteModel
from heart.models.anthropic import AnthropicModel
from heart.models.openai_compat import OpenAICompatibleModel
from tests.fakes.fault_server import FaultServer

T = TypeVar("T")
SINCE = "2000-01-01T00:00:00Z"
IDS = [f"{i:064x}" for i in range(1, 7)]  # custom ids both providers accept


def openai_model(server: FaultServer, **spec: Any) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        ModelSpec.model_validate(
            {"provider": "openai", "base_url": server.openai_base_url, "model": "m", **spec}
        )
    )


def anthropic_model(server: FaultServer, **spec: Any) -> AnthropicModel:
    return AnthropicModel(
        ModelSpec.model_validate(
            {"provider": "anthropic", "base_url": server.anthropic_base_url, "model": "m", **spec}
        )
    )


def ask(user: str, system: str = "Be kind.", **options: Any) -> ChatRequest:
    return ChatRequest(
        messages=(Message(role="system", content=system), Message(role="user", content=user)),
        max_tokens=32,
        **options,
    )


def run(model: RemoteModel, work: Callable[[], Awaitable[T]]) -> T:
    """``work`` on a fresh event loop, the model's client closed after it."""

    async def go() -> T:
        try:
            return await work()
        finally:
            await model.aclose()

    return asyncio.run(go())


def drive(
    model: RemoteModel,
    server: FaultServer,
    texts: list[str],
    *,
    polls: int = 2,
    fault: str | None = None,
) -> tuple[str, list[BatchStatus], list[BatchResult]]:
    """Submit one request per text as a batch of ``model`` (the next batch fault set first),
    poll it ``polls`` times, and read its results."""
    if fault is not None:
        server.fault_next_batch(fault)

    async def work() -> tuple[str, list[BatchStatus], list[BatchResult]]:
        assert model.batches is not None
        remote = await model.batches.submit(
            [(IDS[i], ask(text)) for i, text in enumerate(texts)], label="b1"
        )
        seen = [await model.batches.status(remote) for _ in range(polls)]
        return remote, seen, await model.batches.results(remote)

    return run(model, work)
