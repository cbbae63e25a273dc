"""The optional LLM coder: a model reads one rationale (with the two replies as the judge saw
them) and lists the codebook's themes it brings up, each with the reply it is about, whether it
is denied, and evidence that must be words of the rationale. Runs through the engine: cached,
resumable, in the dry run and the budget; an invalid answer is asked again, then stored failed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy.orm import Session

from heart.config import ModelSpec
from heart.engine import Call, Check, ProgressFn, Recorder, RunSummary, run_calls
from heart.models import (
    ChatRequest,
    ChatResponse,
    call_key,
    make_chat_model,
    prefix_cache_key,
    usage_columns,
)
from heart.plain import PlainText
from heart.prompts import Prompt
from heart.rationales._codebook import Codebook, load_codebook
from heart.rationales._identity import llm_coder_id
from heart.rationales._rules import Code
from heart.rationales._store import (
    Rationale,
    code_rows,
    coding_id,
    rationales_to_code,
    replace_codes,
)
from heart.store import RationaleCodingRow, now_iso
from heart.study import Study
from heart.types import Shown, Status

CODER_PROMPT = "rationale-coder"
REASK_PROMPT = "reask"
REPLIES = ("A", "B", "none")
EVIDENCE_CHARS = 200
MAX_CODES = 30
FIELDS = ("theme", "reply", "denied", "evidence")


class InvalidCoding(ValueError):
    """An answer that is not a usable coding; the message says why."""


def coding_schema(codebook: Codebook) -> dict[str, Any]:
    code = {
        "type": "object",
        "properties": {
            "theme": {"type": "string", "enum": codebook.ids},
            "reply": {"type": "string", "enum": list(REPLIES)},
            "denied": {"type": "boolean"},
            "evidence": {"type": "string", "maxLength": EVIDENCE_CHARS},
        },
        "required": ["theme", "reply", "denied", "evidence"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"codes": {"type": "array", "items": code, "maxItems": MAX_CODES}},
        "required": ["codes"],
        "additionalProperties": False,
    }


def render_codebook(codebook: Codebook) -> str:
    return "\n".join(
        f"- {t.id} ({t.name}; axis {t.axis}): {t.description}" for t in codebook.themes
    )


def coding_request(
    rationale: Rationale, prompt: Prompt, codebook: Codebook, spec: ModelSpec
) -> ChatRequest:
    """The codebook in the system prompt; the two replies as shown and the rationale to code."""
    system = prompt.text.replace("{themes}", render_codebook(codebook))
    user = (
        f"Reply A (shown first):\n{rationale.first}\n\nReply B (shown second):\n{rationale.second}"
        f"\n\nThe judge's reason:\n{rationale.text}\n\nCode the reason."
    )
    return ChatRequest.prompted(
        system, user, spec, json_schema=coding_schema(codebook),
        cache_key=prefix_cache_key(prompt.hash),
    )  # fmt: skip


def parse_coding(text: str, rationale: str, codebook: Codebook) -> list[Code]:
    """The codes of an answer; InvalidCoding saying what is wrong."""
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise InvalidCoding(f"not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict) or set(value) != {"codes"}:
        raise InvalidCoding('not a JSON object with the one key "codes"')
    if not isinstance(value["codes"], list) or len(value["codes"]) > MAX_CODES:
        raise InvalidCoding(f'"codes" must be a list of at most {MAX_CODES} codes')
    codes: list[Code] = []
    source = PlainText(rationale)
    for n, entry in enumerate(value["codes"], 1):
        if not isinstance(entry, dict) or set(entry) != set(FIELDS):
            raise InvalidCoding(f"code {n} must have exactly theme, reply, denied and evidence")
        theme, reply, denied, evidence = (entry[k] for k in FIELDS)
        if theme not in codebook.ids:
            raise InvalidCoding(f"code {n}: {str(theme)[:40]!r} is not a theme id of the list")
        if reply not in REPLIES or not isinstance(denied, bool):
            raise InvalidCoding(f'code {n}: reply must be "A", "B" or "none" and denied true/false')
        if not isinstance(evidence, str) or not evidence.strip():
            raise InvalidCoding(f"code {n} ({theme}) quotes no evidence")
        found = source.span(evidence)
        if found is None:
            raise InvalidCoding(
                f"code {n} ({theme}): the evidence {evidence[:40]!r} is not words of the reason; "
                "copy them"
            )
        shown = {"A": Shown.FIRST, "B": Shown.SECOND}.get(reply, Shown.NONE)
        code = Code(theme, shown, denied, evidence.strip(), *found)
        if code not in codes:
            codes.append(code)
    return codes


@dataclass(frozen=True)
class LlmCodingPlan:
    """The calls still to make, for how many rationales, and how many are coded already."""

    calls: list[Call]
    coder: str
    to_code: int
    already_done: int
    asks: list[Rationale] = field(default_factory=list)  # the rationale each call codes


@dataclass(frozen=True)
class LlmCodingSummary:
    plan: LlmCodingPlan
    model_calls: RunSummary


def _recorder(
    rationale: Rationale, coder: str, codebook: Codebook, prompt: Prompt, key: str,
    spec: ModelSpec,
) -> Recorder:  # fmt: skip
    def record(session: Session, response: ChatResponse | None, error: str | None) -> str | None:
        row = RationaleCodingRow(
            id=coding_id(rationale.judgment_id, coder, codebook.hash),
            judgment_id=rationale.judgment_id, coder=coder, codebook_hash=codebook.hash,
            prompt_hash=prompt.hash, call_hash=key, created_at=now_iso(),
            raw=response.text if response else None,
            refused=[{"answer": a, "problem": p} for a, p in response.earlier] if response else [],
        )  # fmt: skip
        codes: list[Code] = []
        if response is not None:
            row.latency_ms = response.latency_ms
            for column, value in usage_columns(spec.price, response).items():
                setattr(row, column, value)
            try:
                codes = parse_coding(response.text, rationale.text, codebook)
            except InvalidCoding as exc:
                asks = 1 + len(response.earlier)
                error = f"invalid coding after {asks} ask{'s' * (asks > 1)}: {exc}"
        row.status, row.error = (Status.FAILED, error) if error else (Status.OK, None)
        replace_codes(session, row, code_rows(rationale, coder, codebook.hash, codes))
        return error

    return record


def plan_llm_coding(
    study: Study, spec: ModelSpec, extra: Sequence[Rationale] = ()
) -> LlmCodingPlan:
    """The calls for every counted rationale without a valid coding by ``spec``'s model, and
    for the ``extra`` ones (a dry run's rationales of verdicts not given yet)."""
    config = study.config.rationales
    codebook = load_codebook(config.codebook)
    coder = llm_coder_id(spec)
    todo, already = rationales_to_code(study.store, coder, codebook.hash, redo_failed=True)
    todo = [*todo, *extra]
    prompt = study.use_prompt(CODER_PROMPT)
    template = study.use_prompt(REASK_PROMPT).text
    model = make_chat_model(spec)
    calls = []
    for rationale in todo:
        request = coding_request(rationale, prompt, codebook, spec)
        key = call_key(model, request)
        parse = partial(parse_coding, rationale=rationale.text, codebook=codebook)
        check = Check.parses(parse, InvalidCoding, template, config.reasks)
        calls.append(
            Call(model=model, request=request, group=f"{rationale.item_id}/{rationale.judgment_id}",
                 on_result=_recorder(rationale, coder, codebook, prompt, key, spec),
                 price=spec.price, check=check)
        )  # fmt: skip
    return LlmCodingPlan(calls, coder, len(todo), already, todo)


def code_with_llm(
    study: Study, spec: ModelSpec, progress: ProgressFn | None = None
) -> LlmCodingSummary:
    """Code every counted rationale that has no valid coding by ``spec``'s model yet."""
    plan = plan_llm_coding(study, spec)
    summary = asyncio.run(
        run_calls(plan.calls, study.store, label="rationales", progress=progress,
                  spec=study.config.engine)
    )  # fmt: skip
    return LlmCodingSummary(plan, summary)
