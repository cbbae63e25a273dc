"""The LLM judging stage: each judge gives a strict-JSON verdict on every pair it has not judged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import JudgeSpec
from heart.engine import Call, RunSummary, run_calls
from heart.items import item_from_row
from heart.judging._schema import VERDICT_SCHEMA, InvalidVerdict, parse_verdict
from heart.models import ChatModel, ChatRequest, ChatResponse, make_chat_model
from heart.prompts import Prompt
from heart.store import CompletionRow, ItemRow, JudgmentRow, PairRow, now_iso
from heart.study import Study
from heart.transcript import render_transcript
from heart.types import Item, stable_id

JUDGE_PROMPT = "judge-heart"


def judgment_id(pair_id: str, judge: str, order: str) -> str:
    return stable_id("jd-", pair_id, judge, order)


def judge_request(
    item: Item, first: str, second: str, prompt: Prompt, spec: JudgeSpec
) -> ChatRequest:
    """The judge's request: the rubric, then the transcript (shared by all pairs of the item),
    then the two replies in the order shown."""
    user = (
        "Conversation so far:\n\n"
        f"{render_transcript(item.context)}\n\n"
        f"Reply A: {first}\n\n"
        f"Reply B: {second}\n\n"
        "Which reply is the better next supporter message? Answer with the JSON object only."
    )
    return ChatRequest.prompted(prompt.text, user, spec.model, json_schema=VERDICT_SCHEMA)


def _to_pair_terms(shown: str, order: str) -> str:
    """A/B as shown → a/b of the pair; ``none`` stays."""
    if shown == "none":
        return "none"
    first_is_a = order == "ab"
    return ("a" if first_is_a else "b") if shown == "A" else ("b" if first_is_a else "a")


def _recorder(
    pair: PairRow, judge: JudgeSpec, order: str, prompt: Prompt, key: str
) -> Callable[[Session, ChatResponse | None, str | None], str | None]:
    def record(session: Session, response: ChatResponse | None, error: str | None) -> str | None:
        jid = judgment_id(pair.id, judge.name, order)
        row = session.get(JudgmentRow, jid) or JudgmentRow(
            id=jid, pair_id=pair.id, judge=judge.name, order=order
        )
        row.prompt_hash, row.call_hash, row.created_at = prompt.hash, key, now_iso()
        row.raw = response.text if response else None
        row.winner, row.strength, row.axes, row.rationale = None, None, {}, ""
        if response is not None:
            row.latency_ms = response.latency_ms
            row.tokens_in, row.tokens_out = response.tokens_in, response.tokens_out
            row.cost_usd = judge.model.price.cost(response.tokens_in, response.tokens_out)
            try:
                verdict = parse_verdict(response.text)
            except InvalidVerdict as exc:
                error = f"invalid verdict: {exc}"
            else:
                row.winner = _to_pair_terms(verdict.winner, order)
                row.strength = verdict.strength
                row.axes = {
                    axis.value: {"winner": _to_pair_terms(v.winner, order), "strength": v.strength}
                    for axis, v in verdict.axes.items()
                }
                row.rationale = verdict.rationale.strip()
        row.status, row.error = ("failed", error) if error else ("ok", None)
        session.merge(row)
        return error

    return record


@dataclass
class JudgingSummary:
    model_calls: RunSummary
    already_done: int


def plan_judging(study: Study) -> tuple[list[Call], int]:
    """The judge calls still missing (a valid verdict per pair, judge and order), and how many
    verdicts are already stored."""
    prompt = study.use_prompt(JUDGE_PROMPT)
    orders = ("ab", "ba") if study.config.pairs.both_orders else ("ab",)
    with study.store.session() as session:
        items = {r.id: item_from_row(r) for r in session.scalars(select(ItemRow))}
        texts = {r.id: r.text for r in session.scalars(select(CompletionRow))}
        pairs = list(session.scalars(select(PairRow).order_by(PairRow.item_id, PairRow.id)))
        done = {
            (r.pair_id, r.judge, r.order)
            for r in session.scalars(select(JudgmentRow).where(JudgmentRow.status == "ok"))
        }
    calls: list[Call] = []
    for judge in study.config.judges:
        model: ChatModel | None = None
        for pair in pairs:
            for order in orders:
                if (pair.id, judge.name, order) in done:
                    continue
                model = model or make_chat_model(judge.model)
                a, b = texts[pair.a_id], texts[pair.b_id]
                first, second = (a, b) if order == "ab" else (b, a)
                request = judge_request(items[pair.item_id], first, second, prompt, judge)
                key = request.call_hash(model.provider, model.model)
                calls.append(
                    Call(
                        model=model,
                        request=request,
                        group=f"{judge.name}/{pair.item_id}/{pair.id}/{order}",
                        on_result=_recorder(pair, judge, order, prompt, key),
                        price=judge.model.price,
                    )
                )
    return calls, len(done)


def judge_pairs(study: Study, console: Console | None = None) -> JudgingSummary:
    """Ask every configured LLM judge for every pair (and order) it has no valid verdict on."""
    calls, already_done = plan_judging(study)
    summary = asyncio.run(
        run_calls(calls, study.store, label="judge", console=console, spec=study.config.engine)
    )
    return JudgingSummary(model_calls=summary, already_done=already_done)
