"""The LLM judging stage: each scheduled judge gives a strict-JSON verdict on its pairs.

An answer that fails validation is asked again with the validation error; one still invalid is
stored as failed with its raw text and never counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import JudgeSpec
from heart.engine import Call, Check, RunSummary, run_calls
from heart.items import item_from_row
from heart.judging._assign import EnsembleJudge, PairFamilies, Schedule, schedule_judges
from heart.judging._schema import VERDICT_SCHEMA, InvalidVerdict, parse_verdict
from heart.models import ChatModel, ChatRequest, ChatResponse, make_chat_model
from heart.prompts import Prompt, load_prompt
from heart.store import CompletionRow, ItemRow, JudgmentRow, PairRow, SystemRow, now_iso
from heart.study import Study
from heart.transcript import render_transcript
from heart.types import Item, stable_id

JUDGE_PROMPT = "judge-heart"
REASK_PROMPT = "reask"


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


def verdict_problem(text: str) -> str | None:
    """What makes ``text`` an invalid verdict, or None when it is valid."""
    try:
        parse_verdict(text)
    except InvalidVerdict as exc:
        return str(exc)
    return None


def verdict_check(reasks: int) -> Check:
    """Validate every verdict; ask again ``reasks`` times with the validation error."""
    template = load_prompt(REASK_PROMPT).text
    return Check(
        problem=verdict_problem,
        message=lambda problem: template.replace("{problem}", problem),
        reasks=reasks,
    )


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
        row.refused = [{"answer": a, "problem": p} for a, p in response.earlier] if response else []
        row.winner, row.strength, row.axes, row.rationale = None, None, {}, ""
        if response is not None:
            row.latency_ms = response.latency_ms
            row.tokens_in, row.tokens_out = response.tokens_in, response.tokens_out
            row.cost_usd = judge.model.price.cost(response.tokens_in, response.tokens_out)
            try:
                verdict = parse_verdict(response.text)
            except InvalidVerdict as exc:
                asks = 1 + len(response.earlier)
                error = f"invalid verdict after {asks} ask{'s' * (asks > 1)}: {exc}"
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
class JudgingPlan:
    """The calls still missing, and what the schedule could not cover."""

    calls: list[Call]
    already_done: int
    schedule: Schedule
    orders: tuple[str, ...]
    loads: dict[str, int] = field(default_factory=dict)


@dataclass
class JudgingSummary:
    model_calls: RunSummary
    plan: JudgingPlan

    @property
    def already_done(self) -> int:
        return self.plan.already_done


def schedule_for(study: Study) -> tuple[Schedule, list[PairRow]]:
    """The ensemble's schedule over every stored pair, keeping judges that already rated one."""
    config = study.config
    with study.store.session() as session:
        families = dict(session.execute(select(SystemRow.name, SystemRow.family)).all())
        system_of = dict(session.execute(select(CompletionRow.id, CompletionRow.system)).all())
        pairs = list(session.scalars(select(PairRow).order_by(PairRow.item_id, PairRow.id)))
        rated: dict[str, set[str]] = {}
        for pid, judge in session.execute(
            select(JudgmentRow.pair_id, JudgmentRow.judge).where(JudgmentRow.status == "ok")
        ):
            rated.setdefault(pid, set()).add(judge)
    schedule = schedule_judges(
        [
            PairFamilies(p.id, (families[system_of[p.a_id]], families[system_of[p.b_id]]))
            for p in pairs
        ],
        [EnsembleJudge(j.name, j.family) for j in config.judges],
        per_pair=config.judging.judges_per_pair,
        own_family=config.judging.own_family,
        seed=config.seed,
        kept=rated,
    )
    return schedule, pairs


def plan_judging(study: Study) -> JudgingPlan:
    """The judge calls still missing (a valid verdict per scheduled pair, judge and order)."""
    config = study.config
    prompt = study.use_prompt(JUDGE_PROMPT, config.judging.prompt_version)
    study.use_prompt(REASK_PROMPT)
    check = verdict_check(config.judging.reasks)
    orders = ("ab", "ba") if config.pairs.both_orders else ("ab",)
    schedule, pairs = schedule_for(study)
    with study.store.session() as session:
        items = {r.id: item_from_row(r) for r in session.scalars(select(ItemRow))}
        texts = dict(session.execute(select(CompletionRow.id, CompletionRow.text)).all())
        done = {
            (r.pair_id, r.judge, r.order)
            for r in session.scalars(select(JudgmentRow).where(JudgmentRow.status == "ok"))
        }
    calls: list[Call] = []
    loads = {judge.name: 0 for judge in config.judges}
    for judge in config.judges:
        model: ChatModel | None = None
        for pair in pairs:
            if judge.name not in schedule.judges.get(pair.id, ()):
                continue
            for order in orders:
                loads[judge.name] += 1
                if (pair.id, judge.name, order) in done:
                    continue
                model = model or make_chat_model(judge.model)
                shown = (pair.a_id, pair.b_id) if order == "ab" else (pair.b_id, pair.a_id)
                first, second = texts[shown[0]], texts[shown[1]]
                request = judge_request(items[pair.item_id], first, second, prompt, judge)
                key = request.call_hash(model.provider, model.model)
                calls.append(
                    Call(
                        model=model,
                        request=request,
                        group=f"{judge.name}/{pair.item_id}/{shown[0]}/{pair.id}/{order}",
                        on_result=_recorder(pair, judge, order, prompt, key),
                        price=judge.model.price,
                        check=check,
                    )
                )
    return JudgingPlan(calls, len(done), schedule, orders, loads)


def judge_pairs(study: Study, console: Console | None = None) -> JudgingSummary:
    """Ask every scheduled LLM judge for every pair (and order) it has no valid verdict on."""
    plan = plan_judging(study)
    summary = asyncio.run(
        run_calls(plan.calls, study.store, label="judge", console=console, spec=study.config.engine)
    )
    return JudgingSummary(model_calls=summary, plan=plan)
