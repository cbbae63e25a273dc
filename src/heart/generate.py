"""The generation stage: one completion per system per item, skipping what is already stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import SystemSpec
from heart.engine import Call, ProgressFn, RunSummary, run_calls
from heart.ids import completion_id
from heart.items import item_from_row
from heart.models import ChatRequest, ChatResponse, call_key, make_chat_model, usage_columns
from heart.prompts import Prompt
from heart.store import CompletionRow, ItemRow, now_iso, row_for
from heart.study import Study
from heart.text_policy import refused_character
from heart.transcript import render_transcript
from heart.types import Item, Status, Subset, SystemKind

GENERATION_PROMPT = "generation"


def generation_request(item: Item, prompt: Prompt, spec: SystemSpec) -> ChatRequest:
    """The request a model system gets for ``item``: our system prompt, then the transcript."""
    assert spec.model is not None
    user = (
        "Here is the conversation so far.\n\n"
        f"{render_transcript(item.context)}\n\n"
        "Write the supporter's next message."
    )
    return ChatRequest.prompted(prompt.text, user, spec.model, stream=True)


def clean_reply(text: str) -> str:
    """Strip whitespace and a wrapping pair of quotes the model may add."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def reply_fault(text: str, finish_reason: str | None) -> str | None:
    """Why a model's reply cannot be stored as valid, or None: it is empty, or it holds a
    character the text policy refuses in any text from outside (judges, raters and bundles
    would otherwise get it, and the study's own bundle could not be imported)."""
    if not text:
        return f"empty reply (finish reason {finish_reason})"
    found = refused_character(text)
    return f"the reply holds {found}, which no stored text may hold" if found else None


@dataclass
class GenerationSummary:
    fixed: int
    model_calls: RunSummary
    already_done: int


def fixed_reply(item: Item, system: SystemSpec) -> str:
    """The reply of a system that calls no model: the ESConv original's, or a control's."""
    return item.reference if system.kind is SystemKind.DATASET else (system.reply or "")


def _store_fixed(session: Session, item: Item, system: SystemSpec) -> None:
    """The ESConv original or a control's reply (over any row it replaces)."""
    text = fixed_reply(item, system)
    session.merge(
        CompletionRow(
            id=completion_id(item.id, system.name),
            item_id=item.id,
            system=system.name,
            contributor="",
            status=Status.OK,
            text=text,
            created_at=now_iso(),
        )
    )


def _recorder(
    item: Item, system: SystemSpec, prompt: Prompt, key: str
) -> Callable[[Session, ChatResponse | None, str | None], str | None]:
    assert system.model is not None
    price = system.model.price

    def record(session: Session, response: ChatResponse | None, error: str | None) -> str | None:
        cid = completion_id(item.id, system.name)
        row = row_for(session, CompletionRow, cid, item_id=item.id, system=system.name,
                      contributor="")  # fmt: skip
        row.prompt_hash, row.call_hash, row.created_at = prompt.hash, key, now_iso()
        text = clean_reply(response.text) if response else ""
        if response is not None:
            row.ttft_ms, row.latency_ms = response.ttft_ms, response.latency_ms
            row.finish_reason = response.finish_reason
            for column, value in usage_columns(price, response).items():
                setattr(row, column, value)
            error = error or reply_fault(text, response.finish_reason)
        row.status, row.text, row.error = (
            (Status.FAILED, "", error) if error else (Status.OK, text, None)
        )
        return error

    return record


@dataclass
class GenerationPlan:
    """What generation still has to do: fixed replies to store and model calls to make."""

    fixed: list[tuple[Item, SystemSpec]]
    calls: list[Call]
    already_done: int
    asks: list[tuple[Item, SystemSpec]] = field(default_factory=list)  # each call's item, system


def plan_generation(study: Study, items: Sequence[Item] | None = None) -> GenerationPlan:
    """Every completion of a non-human system that is missing or failed, as work to do, for
    the stored items (or ``items``: a dry run's projection)."""
    prompt = study.use_prompt(GENERATION_PROMPT)
    with study.store.session() as session:
        if items is None:
            items = [
                item_from_row(r) for r in session.scalars(select(ItemRow).order_by(ItemRow.id))
            ]
        done = {
            (r.item_id, r.system)
            for r in session.scalars(select(CompletionRow).where(CompletionRow.status == Status.OK))
        }
    plan = GenerationPlan(fixed=[], calls=[], already_done=len(done))
    for system in study.config.systems:
        todo = [item for item in items if (item.id, system.name) not in done]
        if system.kind is SystemKind.DATASET:
            # ESConv's reply answered the calm seeker of the source, not the rewritten one
            todo = [item for item in todo if item.subset is Subset.REGULAR]
        if system.kind in (SystemKind.DATASET, SystemKind.CONTROL):
            plan.fixed += [(item, system) for item in todo]
        if system.kind is not SystemKind.MODEL or not todo:
            continue
        assert system.model is not None
        model = make_chat_model(system.model)
        for item in todo:
            request = generation_request(item, prompt, system)
            plan.calls.append(
                Call(
                    model=model,
                    request=request,
                    group=f"{system.name}/{item.id}",
                    on_result=_recorder(item, system, prompt, call_key(model, request)),
                    price=system.model.price,
                )
            )
            plan.asks.append((item, system))
    return plan


def generate(study: Study, progress: ProgressFn | None = None) -> GenerationSummary:
    """Fill in every missing or failed completion of every non-human system."""
    plan = plan_generation(study)
    with study.store.session() as session:
        for item, system in plan.fixed:
            _store_fixed(session, item, system)
    summary = asyncio.run(
        run_calls(plan.calls, study.store, label="generate", progress=progress,
                  spec=study.config.engine)
    )  # fmt: skip
    return GenerationSummary(
        fixed=len(plan.fixed), model_calls=summary, already_done=plan.already_done
    )
