"""Per-endpoint limits: how many calls at once, and requests and tokens per minute."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field


@dataclass
class TokenBucket:
    """``capacity`` units per minute, refilled continuously; ``take`` waits until there is room.

    A request larger than the capacity is let through once the bucket is full, so it cannot
    wait forever.
    """

    capacity: float
    level: float = field(init=False)
    stamp: float = field(init=False)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    def __post_init__(self) -> None:
        self.level = self.capacity
        self.stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.capacity / 60)
        self.stamp = now

    async def take(self, amount: float) -> None:
        async with self.lock:
            need = min(amount, self.capacity)
            self._refill()
            while self.level < need:
                await asyncio.sleep((need - self.level) * 60 / self.capacity)
                self._refill()
            self.level -= amount


class EndpointLimits:
    """The gate every call to one endpoint passes: a concurrency slot, then the rate buckets."""

    def __init__(
        self,
        concurrency: int,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
    ) -> None:
        self.slots = asyncio.Semaphore(concurrency)
        self.requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None

    async def admit(self, tokens: int) -> None:
        """Wait for the rate limits to allow one more request of about ``tokens`` tokens."""
        if self.requests is not None:
            await self.requests.take(1)
        if self.tokens is not None:
            await self.tokens.take(tokens)
