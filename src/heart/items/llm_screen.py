"""The optional LLM screener: a second pass that may veto couplets the rules found eligible.

Its answers go through the engine, so they are cached: a rebuild asks nothing new and selects
the same items. A build whose screener calls did not all succeed stops instead of choosing
differently.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.orm import Session

from heart.config import ModelSpec
from heart.engine import Call, CallsFailed, ProgressFn, Recorder, RunSummary, run_calls
from heart.items._select import Candidate
from heart.models import ChatRequest, ChatResponse, make_chat_model
from heart.study import Study
from heart.transcript import render_transcript

SCREENER_PROMPT = "llm-screener"
SCREEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "keep": {"type": "boolean"},
        "reason": {"type": "string", "maxLength": 160},
    },
    "required": ["keep", "reason"],
    "additionalProperties": False,
}


class ScreenVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    keep: bool
    reason: str = Field(max_length=1000)


def screener_request(candidate: Candidate, system: str, spec: ModelSpec) -> ChatRequest:
    """The question for one couplet: the context up to the seeker turn it would end on."""
    context = candidate.conversation.turns[: candidate.turn_index]
    user = (
        f"Problem: {candidate.conversation.problem_type}\n\n"
        f"{render_transcript(context)}\n\n"
        "Should this moment, ending with the seeker's last message, be kept?"
    )
    return ChatRequest.prompted(system, user, spec, json_schema=SCREEN_SCHEMA)


class LlmScreen:
    """A second pass that asks ``spec``'s model about every eligible couplet; ``calls`` holds
    what its calls did once it has run."""

    def __init__(self, study: Study, spec: ModelSpec, progress: ProgressFn | None = None) -> None:
        self.study, self.spec, self.progress = study, spec, progress
        self.calls = RunSummary()

    def __call__(self, candidates: list[Candidate]) -> dict[tuple[str, int], tuple[bool, str]]:
        study, spec = self.study, self.spec
        prompt = study.use_prompt(SCREENER_PROMPT)
        model = make_chat_model(spec)
        verdicts: dict[tuple[str, int], tuple[bool, str]] = {}

        def recorder(candidate: Candidate) -> Recorder:
            def record(
                _session: Session, response: ChatResponse | None, error: str | None
            ) -> str | None:
                if response is not None:
                    try:
                        verdict = ScreenVerdict.model_validate(
                            json.loads(response.text, strict=False)
                        )
                    except (ValueError, ValidationError) as exc:
                        error = f"invalid screener answer {response.text[:80]!r}: {exc}"
                    else:
                        verdicts[candidate.key] = (verdict.keep, f"screener: {verdict.reason}")
                return error

            return record

        calls = [
            Call(
                model=model,
                request=screener_request(c, prompt.text, spec),
                group=f"{c.conversation.id}/{c.turn_index:04d}",
                on_result=recorder(c),
                price=spec.price,
            )
            for c in candidates
        ]
        self.calls = asyncio.run(
            run_calls(calls, study.store, label="screen", progress=self.progress,
                      spec=study.config.engine)
        )  # fmt: skip
        if not self.calls.complete:
            first = self.calls.errors[0] if self.calls.errors else "the budget stopped the run"
            raise CallsFailed(
                f"the LLM screener gave no valid answer for "
                f"{self.calls.failed + self.calls.not_started} of {len(calls)} couplets (first: "
                f"{first}); the items were not changed. Rerun `heart items build`: answers "
                "already given are reused",
                self.calls,
            )
        return verdicts


def llm_second_pass(study: Study, spec: ModelSpec, progress: ProgressFn | None = None) -> LlmScreen:
    """A second pass that asks ``spec``'s model about every eligible couplet; it raises
    CallsFailed (changing nothing) unless every couplet gets a valid answer."""
    return LlmScreen(study, spec, progress)
