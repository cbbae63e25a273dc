"""The LLM judging stage: each scheduled judge gives a strict-JSON verdict on its pairs.

An answer that fails validation is asked again with the validation error; one still invalid is
stored as failed with its raw text and never counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import JudgeSpec
from heart.engine import Call, Check, ProgressFn, RunSummary, run_calls
from heart.ids import Presentation, judgment_id
from heart.items import item_from_row
from heart.judging._assign import EnsembleJudge, PairFamilies, Schedule, schedule_judges
from heart.judging._schema import VERDICT_SCHEMA, InvalidVerdict, parse_verdict
from heart.models import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    call_key,
    make_chat_model,
    prefix_cache_key,
    usage_columns,
)
from heart.prompts import Prompt, load_prompt
from heart.store import (
    CompletionRow,
    ItemRow,
    JudgmentRow,
    PairRow,
    Store,
    SystemRow,
    now_iso,
    row_for,
)
from heart.study import Study
from heart.transcript import render_transcript
from heart.types import Item, Order, Status

JUDGE_PROMPT = "judge-heart"
REASK_PROMPT = "reask"


def judge_request(
    item: Item, first: str, second: str, prompt: Prompt, spec: JudgeSpec
) -> ChatRequest:
    """The judge's request: the rubric, then the transcript (shared by all pairs of the item),
    then the two replies in the order shown."""
    shared = f"Conversation so far:\n\n{render_transcript(item.context)}\n\n"
    user = (
        f"{shared}Reply A: {first}\n\n"
        f"Reply B: {second}\n\n"
        "Which reply is the better next supporter message? Answer with the JSON object only."
    )
    return ChatRequest.prompted(
        prompt.text, user, spec.model, json_schema=VERDICT_SCHEMA,
        shared_chars=len(shared), cache_key=prefix_cache_key(prompt.hash, item.id),
    )  # fmt: skip


def verdict_problem(text: str) -> str | None:
    """What makes ``text`` an invalid verdict, or None when it is valid."""
    return verdict_check(0).problem(text)


def verdict_check(reasks: int) -> Check:
    """Validate every verdict; ask again ``reasks`` times with the validation error."""
    return Check.parses(parse_verdict, InvalidVerdict, load_prompt(REASK_PROMPT).text, reasks)


def _recorder(
    pair: PairRow, judge: JudgeSpec, shown: Presentation, prompt: Prompt, key: str
) -> Callable[[Session, ChatResponse | None, str | None], str | None]:
    def record(session: Session, response: ChatResponse | None, error: str | None) -> str | None:
        jid = judgment_id(pair.id, judge.name, shown.order)
        row = row_for(session, JudgmentRow, jid, pair_id=pair.id, judge=judge.name,
                      order=shown.order)  # fmt: skip
        row.prompt_hash, row.call_hash, row.created_at = prompt.hash, key, now_iso()
        row.raw = response.text if response else None
        row.refused = [{"answer": a, "problem": p} for a, p in response.earlier] if response else []
        row.winner, row.strength, row.axes, row.rationale = None, None, {}, ""
        if response is not None:
            row.latency_ms = response.latency_ms
            for column, value in usage_columns(judge.model.price, response).items():
                setattr(row, column, value)
            try:
                verdict = parse_verdict(response.text)
            except InvalidVerdict as exc:
                asks = 1 + len(response.earlier)
                error = f"invalid verdict after {asks} ask{'s' * (asks > 1)}: {exc}"
            else:
                row.winner = shown.to_pair(verdict.winner)
                row.strength = verdict.strength
                row.axes = {
                    axis.value: {"winner": shown.to_pair(v.winner), "strength": v.strength}
                    for axis, v in verdict.axes.items()
                }
                row.rationale = verdict.rationale.strip()
        row.status, row.error = (Status.FAILED, error) if error else (Status.OK, None)
        return error

    return record


@dataclass
class JudgingPlan:
    """The calls still missing (with the pair, judge and shown order each asks about), and
    what the schedule could not cover."""

    calls: list[Call]
    already_done: int
    schedule: Schedule
    orders: tuple[Order, ...]
    loads: dict[str, int] = field(default_factory=dict)
    asks: list[tuple[PairRow, JudgeSpec, Presentation]] = field(default_factory=list)


@dataclass(frozen=True)
class JudgingSummary:
    """What judging did: its calls, its plan (schedule and loads), the pairs it added and, for
    the adaptive design, the rounds it added them in."""

    model_calls: RunSummary
    plan: JudgingPlan
    new_pairs: int = 0
    rounds: int = 0

    @property
    def already_done(self) -> int:
        return self.plan.already_done


@dataclass
class JudgingInputs:
    """What judging is planned from: the pairs, every reply's system and text, the items, the
    systems' families, and the valid verdicts given so far."""

    pairs: list[PairRow]
    systems: dict[str, str]  # completion id -> system
    texts: dict[str, str]  # completion id -> text
    items: dict[str, Item]
    families: dict[str, str]  # system -> family
    done: set[tuple[str, str, Order]]  # (pair, judge, order) with a valid verdict

    @classmethod
    def stored(cls, store: Store) -> JudgingInputs:
        """The inputs as the store holds them."""
        with store.session() as session:
            pairs = list(session.scalars(select(PairRow).order_by(PairRow.item_id, PairRow.id)))
            replies = session.execute(
                select(CompletionRow.id, CompletionRow.system, CompletionRow.text)
            ).all()
            items = {r.id: item_from_row(r) for r in session.scalars(select(ItemRow))}
            families = dict(session.execute(select(SystemRow.name, SystemRow.family)).all())
            done = {
                (r.pair_id, r.judge, Order(r.order))
                for r in session.scalars(select(JudgmentRow).where(JudgmentRow.status == Status.OK))
            }
        return cls(
            pairs,
            {cid: system for cid, system, _ in replies},
            {cid: text for cid, _, text in replies},
            items,
            families,
            done,
        )


def schedule_for(
    study: Study, inputs: JudgingInputs | None = None
) -> tuple[Schedule, list[PairRow]]:
    """The ensemble's schedule over every pair (stored, unless ``inputs`` says otherwise),
    keeping judges that already rated one."""
    config = study.config
    inputs = inputs or JudgingInputs.stored(study.store)
    rated: dict[str, set[str]] = {}
    for pid, judge, _ in inputs.done:
        rated.setdefault(pid, set()).add(judge)
    families, system_of = inputs.families, inputs.systems
    schedule = schedule_judges(
        [
            PairFamilies(p.id, (families[system_of[p.a_id]], families[system_of[p.b_id]]))
            for p in inputs.pairs
        ],
        [EnsembleJudge(j.name, j.family) for j in config.judges],
        per_pair=config.judging.judges_per_pair,
        own_family=config.judging.own_family,
        seed=config.seed,
        kept=rated,
    )
    return schedule, inputs.pairs


def plan_judging(study: Study, inputs: JudgingInputs | None = None) -> JudgingPlan:
    """The judge calls still missing (a valid verdict per scheduled pair, judge and order), over
    the stored pairs and replies unless ``inputs`` gives others (a dry run's projection)."""
    config = study.config
    prompt = study.use_prompt(JUDGE_PROMPT, config.judging.prompt_version)
    study.use_prompt(REASK_PROMPT)
    check = verdict_check(config.judging.reasks)
    orders = (Order.AB, Order.BA) if config.pairs.both_orders else (Order.AB,)
    inputs = inputs or JudgingInputs.stored(study.store)
    schedule, pairs = schedule_for(study, inputs)
    items, texts, done = inputs.items, inputs.texts, inputs.done
    plan = JudgingPlan([], len(done), schedule, orders, {judge.name: 0 for judge in config.judges})
    for judge in config.judges:
        model: ChatModel | None = None
        for pair in pairs:
            if judge.name not in schedule.judges.get(pair.id, ()):
                continue
            for order in orders:
                plan.loads[judge.name] += 1
                if (pair.id, judge.name, order) in done:
                    continue
                model = model or make_chat_model(judge.model)
                shown = Presentation(pair.a_id, pair.b_id, order)
                first, second = texts[shown.first], texts[shown.second]
                request = judge_request(items[pair.item_id], first, second, prompt, judge)
                key = call_key(model, request)
                plan.calls.append(
                    Call(
                        model=model,
                        request=request,
                        group=f"{judge.name}/{pair.item_id}/{shown.first}/{pair.id}/{order}",
                        on_result=_recorder(pair, judge, shown, prompt, key),
                        price=judge.model.price,
                        check=check,
                    )
                )
                plan.asks.append((pair, judge, shown))
    return plan


def judge_pairs(study: Study, progress: ProgressFn | None = None) -> JudgingSummary:
    """Ask every scheduled LLM judge for every pair (and order) it has no valid verdict on."""
    plan = plan_judging(study)
    summary = asyncio.run(
        run_calls(
            plan.calls, study.store, label="judge", progress=progress, spec=study.config.engine
        )
    )
    return JudgingSummary(model_calls=summary, plan=plan)
