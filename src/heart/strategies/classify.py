"""The strategy classifier stage: an LLM reads one completion (with its context) and says, for
every strategy of the taxonomy, present, absent or uncertain, with a probability and an evidence
snippet that must be a substring of the completion. Runs through the engine: cached, resumable,
in the dry run and the budget; an invalid answer is asked again, then stored as failed."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import ModelSpec
from heart.engine import Call, Check, ProgressFn, Recorder, RunSummary, run_calls
from heart.items import item_from_row
from heart.models import (
    ChatRequest,
    ChatResponse,
    call_key,
    make_chat_model,
    prefix_cache_key,
    usage_columns,
)
from heart.plain import quotes
from heart.prompts import Prompt
from heart.sample import spread_sample
from heart.store import ClassificationRow, CompletionRow, ItemRow, now_iso, row_for
from heart.strategies._identity import DEFAULT_CLASSIFIER, classifier_id
from heart.strategies._taxonomy import Taxonomy, load_taxonomy
from heart.study import Study
from heart.transcript import render_transcript
from heart.types import Item, Status, stable_id

CLASSIFIER_PROMPT = "strategy-classifier"
REASK_PROMPT = "reask"
STATUSES = ("present", "absent", "uncertain")
PROBABILITIES = [k / 10 for k in range(11)]
EVIDENCE_CHARS = 80


class InvalidClassification(ValueError):
    """An answer that is not a usable classification; the message says why."""


def classification_schema(taxonomy: Taxonomy) -> dict[str, Any]:
    """Every strategy as a key, each with a status, a probability and an evidence snippet: an
    absent strategy quotes nothing, a present or uncertain one quotes words of the reply."""

    def answer(statuses: list[str], evidence: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": statuses},
                "probability": {"type": "number", "enum": PROBABILITIES},
                "evidence": evidence,
            },
            "required": ["status", "probability", "evidence"],
            "additionalProperties": False,
        }

    either = {
        "anyOf": [
            answer(["absent"], {"type": "string", "enum": [""]}),
            answer(
                ["present", "uncertain"],
                {"type": "string", "minLength": 1, "maxLength": EVIDENCE_CHARS},
            ),
        ]
    }
    return {
        "type": "object",
        "properties": dict.fromkeys(taxonomy.names, either),
        "required": taxonomy.names,
        "additionalProperties": False,
    }


def render_taxonomy(taxonomy: Taxonomy) -> str:
    return "\n".join(
        f'- {s.name}: {s.definition} (e.g. "{s.examples[0]}"; "{s.examples[1]}")'
        for s in taxonomy.strategies
    )


def classification_request(
    item: Item, reply: str, prompt: Prompt, taxonomy: Taxonomy, spec: ModelSpec
) -> ChatRequest:
    """The taxonomy in the system prompt; the chat so far and the reply to label."""
    system = prompt.text.replace("{strategies}", render_taxonomy(taxonomy))
    shared = f"The chat so far:\n\n{render_transcript(item.context)}\n\n"
    user = f"{shared}The reply to label:\n{reply}\n\nLabel the reply with every strategy."
    return ChatRequest.prompted(
        system, user, spec, json_schema=classification_schema(taxonomy),
        shared_chars=len(shared), cache_key=prefix_cache_key(prompt.hash, item.id),
    )  # fmt: skip


def parse_classification(text: str, reply: str, taxonomy: Taxonomy) -> dict[str, dict[str, Any]]:
    """The labels of an answer, by strategy; InvalidClassification saying what is wrong."""
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise InvalidClassification(f"not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise InvalidClassification("not a JSON object with a key per strategy")
    missing = [name for name in taxonomy.names if name not in value]
    unknown = [key for key in value if key not in taxonomy.names]
    if missing or unknown:
        raise InvalidClassification(
            f"the keys must be the {len(taxonomy.names)} strategies exactly"
            + (f"; missing {missing[:3]}" if missing else "")
            + (f"; unknown {unknown[:3]}" if unknown else "")
        )
    labels = {}
    for name in taxonomy.names:
        answer = value[name]
        if not isinstance(answer, dict):
            raise InvalidClassification(f'"{name}" must be an object')
        status, probability = answer.get("status"), answer.get("probability")
        evidence = answer.get("evidence", "")
        if status not in STATUSES:
            raise InvalidClassification(f'"{name}": status must be present, absent or uncertain')
        if isinstance(probability, bool) or not isinstance(probability, int | float):
            raise InvalidClassification(f'"{name}": probability must be a number from 0 to 1')
        if not 0 <= probability <= 1 or not isinstance(evidence, str):
            raise InvalidClassification(f'"{name}": probability 0 to 1 and text evidence')
        if status != "absent" and not evidence.strip():
            raise InvalidClassification(f'"{name}" is {status} but quotes no evidence')
        if evidence.strip() and not quotes(reply, evidence):
            raise InvalidClassification(
                f'"{name}": the evidence {evidence[:40]!r} is not words of the reply; copy them'
            )
        labels[name] = {"status": status, "probability": float(probability),
                        "evidence": evidence.strip()}  # fmt: skip
    return labels


def classification_id(completion: str, classifier: str, taxonomy_hash: str) -> str:
    return stable_id("sc-", completion, classifier, taxonomy_hash)


@dataclass(frozen=True)
class ClassificationPlan:
    """The calls still to make, and the sample they complete."""

    calls: list[Call]
    classifier: str
    sampled: int  # completions in the sample (labelled or to label)
    already_done: int
    asks: list[CompletionRow] = field(default_factory=list)  # the completion each call labels


@dataclass(frozen=True)
class ClassificationSummary:
    plan: ClassificationPlan
    model_calls: RunSummary


def _recorder(
    completion: CompletionRow, classifier: str, taxonomy: Taxonomy, prompt: Prompt, key: str,
    spec: ModelSpec,
) -> Recorder:  # fmt: skip
    def record(session: Session, response: ChatResponse | None, error: str | None) -> str | None:
        sid = classification_id(completion.id, classifier, taxonomy.hash)
        row = row_for(session, ClassificationRow, sid, completion_id=completion.id,
                      classifier=classifier, taxonomy_hash=taxonomy.hash)  # fmt: skip
        row.prompt_hash, row.call_hash, row.created_at = prompt.hash, key, now_iso()
        row.labels, row.raw = {}, response.text if response else None
        row.refused = [{"answer": a, "problem": p} for a, p in response.earlier] if response else []
        if response is not None:
            row.latency_ms = response.latency_ms
            for column, value in usage_columns(spec.price, response).items():
                setattr(row, column, value)
            try:
                row.labels = parse_classification(response.text, completion.text, taxonomy)
            except InvalidClassification as exc:
                asks = 1 + len(response.earlier)
                error = f"invalid classification after {asks} ask{'s' * (asks > 1)}: {exc}"
        row.status, row.error = (Status.FAILED, error) if error else (Status.OK, None)
        return error

    return record


def plan_classification(
    study: Study,
    spec: ModelSpec | None = None,
    replies: tuple[list[CompletionRow], dict[str, Item]] | None = None,
) -> ClassificationPlan:
    """The completions to label (``strategies.completions`` of them, spread over systems, or
    all) and the calls for those without a valid classification by this classifier; over the
    stored usable replies and their items, unless ``replies`` gives others (a dry run's)."""
    config = study.config.strategies
    spec = spec or config.classifier or DEFAULT_CLASSIFIER
    taxonomy = load_taxonomy(config.taxonomy)
    classifier = classifier_id(spec)
    prompt = study.use_prompt(CLASSIFIER_PROMPT)
    template = study.use_prompt(REASK_PROMPT).text
    with study.store.session() as session:
        if replies is None:
            ok = select(CompletionRow).where(CompletionRow.status == Status.OK)
            items = {r.id: item_from_row(r) for r in session.scalars(select(ItemRow))}
            replies = (list(session.scalars(ok)), items)
        rows = session.execute(
            select(ClassificationRow.completion_id, ClassificationRow.status).where(
                ClassificationRow.classifier == classifier,
                ClassificationRow.taxonomy_hash == taxonomy.hash,
            )
        ).all()
    completions, items = replies
    seen = {cid for cid, _ in rows}
    done = {cid for cid, status in rows if status == Status.OK}
    if config.completions is None:
        sampled = {c.id for c in completions}
    else:
        members = [(c.id, c.system) for c in sorted(completions, key=lambda c: c.id)]
        kept = seen & {c.id for c in completions}
        sampled = kept | set(spread_sample(members, kept, config.completions, study.config.seed,
                                           "strategies"))  # fmt: skip
    model = make_chat_model(spec)
    calls, asks = [], []
    for completion in sorted(completions, key=lambda c: (c.item_id, c.id)):
        if completion.id not in sampled or completion.id in done:
            continue
        item = items[completion.item_id]
        request = classification_request(item, completion.text, prompt, taxonomy, spec)
        key = call_key(model, request)
        parse = partial(parse_classification, reply=completion.text, taxonomy=taxonomy)
        check = Check.parses(parse, InvalidClassification, template, config.reasks)
        calls.append(
            Call(model=model, request=request, group=f"{completion.item_id}/{completion.id}",
                 on_result=_recorder(completion, classifier, taxonomy, prompt, key, spec),
                 price=spec.price, check=check)
        )  # fmt: skip
        asks.append(completion)
    return ClassificationPlan(calls, classifier, len(sampled), len(done & sampled), asks)


def classify(
    study: Study, progress: ProgressFn | None = None, spec: ModelSpec | None = None
) -> ClassificationSummary:
    """Label every sampled completion that has no valid classification yet."""
    plan = plan_classification(study, spec)
    summary = asyncio.run(
        run_calls(plan.calls, study.store, label="strategies", progress=progress,
                  spec=study.config.engine)
    )  # fmt: skip
    return ClassificationSummary(plan, summary)
