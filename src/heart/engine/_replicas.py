"""Replicas of one model: its calls spread over the servers that answer for it.

A call goes to the replica with the fewest calls outstanding among those awake and below their
concurrency; calls wait in order when none is. A replica that fails as a server does (refused or
reset connection, timeout, 5xx) is rested: twice ``backoff_base_s`` (1 s by default), doubling
with each failure in a row, up to ``backoff_cap_s``; an answer wakes its count. Failures of calls
sent before a rest began do not lengthen it, so a server that dies with many calls in flight is
rested once. Every replica shares the model's identity: which one answered never reaches a key.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass

from heart.engine._calls import ReplicaLoad
from heart.engine._limits import EndpointLimits
from heart.engine._retry import RetryPolicy
from heart.models import ChatModel
from heart.models._errors import Cause, ModelCallError

RESTING_CAUSES = frozenset({Cause.CONNECTION, Cause.TIMEOUT, Cause.SERVER})
"""Failures that say a server is down or struggling, rather than something about the call."""


@dataclass(eq=False)
class Replica:
    """One server of a model: its own limits, what it has in hand, and its rest."""

    model: ChatModel
    gate: EndpointLimits
    concurrency: int
    outstanding: int = 0
    answered: int = 0
    rested: int = 0
    failures: int = 0  # in a row
    awake_at: float = 0.0
    rested_at: float = float("-inf")


def pool_key(model: ChatModel) -> tuple[str, str, tuple[str, ...]]:
    """What the replicas of ``model`` are known by in one run: provider, model, their URLs."""
    return (model.provider, model.model, tuple(r.endpoint for r in model.replicas))


def rests(error: ModelCallError) -> bool:
    """Whether ``error`` rests the replica that gave it."""
    return error.retryable and error.cause in RESTING_CAUSES


class Replicas:
    """The replicas of one model, and the calls waiting for one of them (first come, first
    served)."""

    def __init__(self, name: str, replicas: list[Replica], policy: RetryPolicy) -> None:
        self.name = name
        self.replicas = replicas
        self.policy = policy
        self.waiting: deque[asyncio.Future[Replica]] = deque()
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = float("inf")

    def loads(self) -> list[ReplicaLoad]:
        return [
            ReplicaLoad(self.name, r.model.endpoint, r.answered, r.rested) for r in self.replicas
        ]

    def awake(self) -> bool:
        """Whether some replica is not resting."""
        now = time.monotonic()
        return any(r.awake_at <= now for r in self.replicas)

    def _free(self, now: float) -> Replica | None:
        """The awake replica with room and the fewest calls outstanding (the first on a tie)."""
        free = [r for r in self.replicas if r.awake_at <= now and r.outstanding < r.concurrency]
        return min(free, key=lambda r: r.outstanding, default=None)

    async def take(self) -> Replica:
        """A replica for one call; give it back when the call is done with it."""
        now = time.monotonic()
        replica = None if self.waiting else self._free(now)
        if replica is not None:
            replica.outstanding += 1
            return replica
        waiter: asyncio.Future[Replica] = asyncio.get_running_loop().create_future()
        self.waiting.append(waiter)
        self._hand_out()
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give_back(waiter.result())
            raise

    def give_back(self, replica: Replica) -> None:
        replica.outstanding -= 1
        self._hand_out()

    def _hand_out(self) -> None:
        now = time.monotonic()
        while self.waiting:
            replica = self._free(now)
            if replica is None:
                break
            waiter = self.waiting.popleft()
            if not waiter.done():
                replica.outstanding += 1
                waiter.set_result(replica)
        self._wake_later(now)

    def _wake_later(self, now: float) -> None:
        """With calls waiting, hand out again when the next resting replica wakes."""
        resting = [r.awake_at for r in self.replicas if r.awake_at > now]
        if not self.waiting or not resting or min(resting) >= self.timer_at:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.timer_at = min(resting)
        self.timer = asyncio.get_running_loop().call_later(self.timer_at - now, self._woken)

    def _woken(self) -> None:
        self.timer, self.timer_at = None, float("inf")
        self._hand_out()

    def failed(self, replica: Replica, sent_at: float) -> None:
        """Rest ``replica`` after a call sent at ``sent_at`` failed as a server fails."""
        if sent_at < replica.rested_at:
            return  # sent before its last rest began: the same outage
        replica.failures += 1
        replica.rested += 1
        now = time.monotonic()
        seconds = min(self.policy.cap_s, self.policy.base_s * 2**replica.failures)
        replica.rested_at, replica.awake_at = now, now + seconds

    def answered(self, replica: Replica) -> None:
        replica.answered += 1
        replica.failures = 0

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer, self.timer_at = None, float("inf")
