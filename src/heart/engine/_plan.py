"""Dry runs: what a stage's calls would cost, before any is sent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from heart.config import EngineSpec
from heart.engine._calls import Call, PlannedModel
from heart.engine._writer import cached_answers
from heart.store import Store


def batched(call: Call, spec: EngineSpec) -> bool:
    """Whether ``call`` goes through its provider's batch API under ``spec``."""
    return call.model.batches is not None and spec.batches(*call.endpoint)


def plan_calls(
    calls: Sequence[Call],
    store: Store,
    estimated: Callable[[Call], bool] | None = None,
    spec: EngineSpec | None = None,
) -> list[PlannedModel]:
    """A dry run: per endpoint and model, how many calls are new (and how many of those are
    ``estimated``), and their tokens and cost at most, at the batch price where ``spec`` sends
    them to a batch API."""
    spec = spec or EngineSpec()
    cached = cached_answers(store, [c.key for c in calls])
    plans: dict[tuple[str, str, str], PlannedModel] = {}
    for call in calls:
        key = (*call.endpoint, call.model.model)
        batch = batched(call, spec)
        replicas = tuple(r.endpoint for r in call.model.replicas)
        old = plans.get(key) or PlannedModel(
            *key, 0, 0, 0, 0, 0.0, batch=batch, replicas=replicas if len(replicas) > 1 else ()
        )
        if call.key in cached and call.usable(cached[call.key]):
            plans[key] = replace(old, calls=old.calls + 1, cached=old.cached + 1)
            continue
        tokens_in, tokens_out = call.estimated_tokens_in, call.request.max_tokens
        plans[key] = replace(
            old,
            calls=old.calls + 1,
            tokens_in=old.tokens_in + tokens_in,
            max_tokens_out=old.max_tokens_out + tokens_out,
            max_cost_usd=old.max_cost_usd + call.price.cost(tokens_in, tokens_out, batch=batch),
            estimated=old.estimated + bool(estimated and estimated(call)),
        )
    return sorted(plans.values(), key=lambda p: (p.provider, p.endpoint, p.model))
