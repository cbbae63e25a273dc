"""The provider batches a study has submitted: list them (asking the providers for the latest
counts, if wanted) and cancel them. Runs collect finished batches' results themselves."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

from heart.check import models_in_use
from heart.engine import BatchView, stored_batches
from heart.engine._batch_store import record_status
from heart.errors import HeartError
from heart.models import BatchStatus, ChatModel, make_chat_model
from heart.models._errors import ModelCallError
from heart.study import Study


@dataclass(frozen=True)
class BatchLine:
    """A stored batch and, when the provider was asked, what it says now (None: not asked,
    or it could not be reached, as ``problem`` says)."""

    batch: BatchView
    now: BatchStatus | None = None
    problem: str = ""


def _model(study: Study, batch: BatchView) -> ChatModel | None:
    """The study's model the batch was sent to, if the study still names it."""
    for use in models_in_use(study.config):
        spec = use.spec
        if (spec.provider, spec.endpoint, spec.model) == (batch.provider, batch.endpoint,
                                                           batch.model):  # fmt: skip
            return make_chat_model(spec)
    return None


async def _each(study: Study, batches: Sequence[BatchView], cancel: bool) -> list[BatchLine]:
    lines: list[BatchLine] = []
    for batch in batches:
        model = _model(study, batch)
        api = model.batches if model is not None else None
        if batch.remote_id is None:
            lines.append(BatchLine(batch, problem="its submission is not confirmed yet"))
            continue
        if model is None or api is None:
            lines.append(BatchLine(batch, problem="the study no longer names its model"))
            continue
        try:
            now = await (api.cancel(batch.remote_id) if cancel else api.status(batch.remote_id))
        except ModelCallError as exc:
            lines.append(BatchLine(batch, problem=str(exc)))
            continue
        finally:
            await model.aclose()
        # only the counts: a run takes the results and the final state, with the answers
        await asyncio.to_thread(record_status, study.store, batch.id, replace(now, detail=""))
        lines.append(BatchLine(batch, now))
    return lines


def list_batches(study: Study, *, check: bool = False, everything: bool = False) -> list[BatchLine]:
    """The study's open batches (all with ``everything``); with ``check``, each open one's
    state as its provider reports it now."""
    batches = stored_batches(study.store, everything=everything)
    if not check:
        return [BatchLine(b) for b in batches]
    open_ones = [b for b in batches if b.state in ("submitting", "open")]
    asked = {line.batch.id: line for line in asyncio.run(_each(study, open_ones, False))}
    return [asked.get(b.id, BatchLine(b)) for b in batches]


def cancel_batches(study: Study, ids: Sequence[str]) -> list[BatchLine]:
    """Ask the providers to cancel the open batches ``ids`` (every open batch when empty).
    What a cancelled batch answered is kept by the next run; the rest is sent again."""
    batches = stored_batches(study.store)
    if ids:
        known = {b.id: b for b in batches}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise HeartError(
                f"no open batch {', '.join(unknown)}; `heart batches` lists the open ones"
            )
        batches = [known[i] for i in ids]
    return asyncio.run(_each(study, batches, True))
