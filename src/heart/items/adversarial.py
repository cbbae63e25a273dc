"""The adversarial items stage: rewrite the seeker turns of chosen conversations to an escalation
profile, rate the hostility of each rewritten turn, and keep only rewrites that pass every check.

Each try is a round of rewriter calls, then hostility-rater calls, through the engine: cached,
resumable after a kill, counted in dry runs and the budget. A rewrite that fails a check is asked
again with the reasons (``items.rewrite_retries`` times), then rejected with them; a rejected
rewrite is never an item.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from heart.config import ModelSpec
from heart.corpus import Corpus, load_corpus
from heart.engine import Call, CallsFailed, Check, ProgressFn, Recorder, RunSummary, run_calls
from heart.errors import HeartError
from heart.items._build import item_to_row, store_conversations
from heart.items._profiles import Profile
from heart.items._rewrite_rules import (
    MIN_TURNS,
    Problem,
    Source,
    adversarial_item,
    rating_problems,
    rewritten_turns,
    select_sources,
    structure_problems,
)
from heart.models import ChatModel, ChatRequest, ChatResponse, call_key, make_chat_model
from heart.prompts import Prompt
from heart.store import CompletionRow, ItemRow, RewriteRow, now_iso
from heart.study import Study
from heart.types import Item, Role, Subset

REWRITER_PROMPT = "adversarial-rewriter"
RATER_PROMPT = "hostility-rater"
RETRY_PROMPT = "rewrite-retry"
REASK_PROMPT = "reask"
KEPT, REJECTED = "kept", "rejected"
__all__ = [
    "MIN_TURNS",
    "AdversarialSummary",
    "ProfileCounts",
    "build_adversarial",
    "plan_adversarial",
    "projected_items",
]
TEXT_CHARS = 400  # the longest rewritten seeker turn
TURN_KEY = re.compile(r"turn_([0-9]{1,3})")


def rewrite_schema(source: Source) -> dict[str, Any]:
    """Every turn of the chat in order, as ``turn_1``, ``turn_2``, ...: a supporter turn held to
    its exact words (where a server enforces schemas, it cannot change them), a seeker turn free
    text of at most TEXT_CHARS characters."""
    properties = {}
    for n, turn in enumerate(source.turns, 1):
        text: dict[str, Any] = (
            {"type": "string", "enum": [turn.text]}
            if turn.role is Role.SUPPORTER
            else {"type": "string", "maxLength": TEXT_CHARS}
        )
        properties[f"turn_{n}"] = {
            "type": "object",
            "properties": {"speaker": {"type": "string", "enum": [turn.role.value]}, "text": text},
            "required": ["speaker", "text"],
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def rating_schema(seeker_turns: int) -> dict[str, Any]:
    scores = {"type": "integer", "enum": list(range(11))}
    return {
        "type": "object",
        "properties": {
            "hostility": {
                "type": "array",
                "items": scores,
                "minItems": seeker_turns,
                "maxItems": seeker_turns,
            }
        },
        "required": ["hostility"],
        "additionalProperties": False,
    }


def rewrite_request(source: Source, prompt: Prompt, spec: ModelSpec) -> ChatRequest:
    """The chat to rewrite, each seeker turn with its target hostility."""
    lines, k = [], 0
    for n, turn in enumerate(source.turns, 1):
        if turn.role is Role.SEEKER:
            lines.append(f"{n}. Seeker (target hostility {source.targets[k]}): {turn.text}")
            k += 1
        else:
            lines.append(f"{n}. Supporter: {turn.text}")
    user = (
        f"Situation: {source.conversation.situation}\n"
        f"Problem: {source.conversation.problem_type}\n\n"
        "Chat:\n" + "\n".join(lines) + "\n\nRewrite the seeker turns to their targets."
    )
    return ChatRequest.prompted(prompt.text, user, spec, json_schema=rewrite_schema(source))


def rating_request(turns: list[tuple[str, str]], prompt: Prompt, spec: ModelSpec) -> ChatRequest:
    """The rewritten chat, seeker turns numbered, for the hostility rater."""
    lines, k = [], 0
    for speaker, text in turns:
        if speaker == Role.SEEKER.value:
            k += 1
            lines.append(f"Seeker turn {k}: {text}")
        else:
            lines.append(f"Supporter: {text}")
    user = "Chat:\n" + "\n".join(lines) + f"\n\nRate the {k} seeker turns."
    return ChatRequest.prompted(prompt.text, user, spec, json_schema=rating_schema(k))


def parse_rewrite(text: str) -> list[tuple[str, str]]:
    """The rewrite's turns as (speaker, text), in the order of their numbers; ValueError saying
    what is wrong."""
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError('not a JSON object of "turn_1", "turn_2", ...')
    numbered = {}
    for key, turn in value.items():
        found = TURN_KEY.fullmatch(key)
        if found is None:
            raise ValueError(f'unexpected field "{key[:40]}"; use "turn_1", "turn_2", ...')
        speaker = turn.get("speaker") if isinstance(turn, dict) else None
        said = turn.get("text") if isinstance(turn, dict) else None
        if speaker not in (Role.SUPPORTER.value, Role.SEEKER.value) or not isinstance(said, str):
            raise ValueError(f'"{key}" needs "speaker" (supporter or seeker) and "text"')
        numbered[int(found.group(1))] = (speaker, said.strip())
    return [numbered[n] for n in sorted(numbered)]


def parse_ratings(text: str, seeker_turns: int) -> list[int]:
    """The hostility of each seeker turn; ValueError saying what is wrong."""
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    scores = value.get("hostility") if isinstance(value, dict) else None
    if not isinstance(scores, list) or len(scores) != seeker_turns:
        raise ValueError(f'"hostility" must list {seeker_turns} whole numbers from 0 to 10')
    if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 10 for s in scores):
        raise ValueError('every "hostility" score must be a whole number from 0 to 10')
    return scores


def _rating_problem(seeker_turns: int) -> Any:
    def problem(text: str) -> str | None:
        try:
            parse_ratings(text, seeker_turns)
        except ValueError as exc:
            return str(exc)
        return None

    return problem


@dataclass
class _Try:
    """One source through its tries: the request of the current try and what came back."""

    source: Source
    request: ChatRequest
    tries: int = 0
    answer: str | None = None  # the rewriter's answer to the current try
    turns: list[tuple[str, str]] = field(default_factory=list)
    ratings: list[int] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    status: str = ""


@dataclass(frozen=True)
class ProfileCounts:
    """Per escalation profile: conversations rewritten, kept, and rejected by reason."""

    requested: int = 0
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class AdversarialSummary:
    """What the stage did: items asked for, conversations found to rewrite, per-profile
    outcomes, the model calls, and whether the stored adversarial items changed. When some
    calls got no answer (``model_calls.complete`` is false) nothing was stored and no
    profile has counts."""

    requested: int
    by_profile: dict[str, ProfileCounts]
    model_calls: RunSummary
    changed: bool

    @property
    def kept(self) -> int:
        return sum(c.kept for c in self.by_profile.values())

    @property
    def sources(self) -> int:
        return sum(c.requested for c in self.by_profile.values())


def _recorder(state: _Try) -> Recorder:
    """Keep the rewriter's answer on the try; every answer is cached, since a refused rewrite is
    asked again as a follow-up of it (a failed call is reported by the engine)."""

    def record(_session: Session, response: ChatResponse | None, error: str | None) -> str | None:
        if response is None:
            return error
        state.answer, state.tries = response.text, state.tries + 1
        return None

    return record


class _Stage:
    """The rounds of one build: rewrite, check, rate, check; retry or settle."""

    def __init__(self, study: Study, progress: ProgressFn | None) -> None:
        spec = study.config.items
        self.study, self.progress, self.spec = study, progress, spec
        self.rewriter_prompt = study.use_prompt(REWRITER_PROMPT)
        self.rater_prompt = study.use_prompt(RATER_PROMPT)
        self.retry_text = study.use_prompt(RETRY_PROMPT).text
        self.reask_text = study.use_prompt(REASK_PROMPT).text
        self.rewriter: ChatModel = make_chat_model(spec.rewriter)
        self.rater: ChatModel = (
            self.rewriter if spec.hostility_rater is None else make_chat_model(spec.rater)
        )
        self.total = RunSummary()

    def _run(self, calls: list[Call], label: str) -> None:
        summary = asyncio.run(
            run_calls(calls, self.study.store, label=label, progress=self.progress,
                      spec=self.study.config.engine)
        )  # fmt: skip
        self.total.add(summary)
        if not summary.complete:
            first = summary.errors[0] if summary.errors else "the budget stopped the run"
            raise CallsFailed(
                f"{label}: no answer for {summary.failed + summary.not_started} of {len(calls)} "
                f"calls (first: {first}); the adversarial items were not changed. Rerun "
                "`heart items adversarial`: answers already given are reused",
                self.total,
            )

    def _rewrite_round(self, pending: list[_Try], round_no: int) -> None:
        calls = []
        for state in pending:
            calls.append(
                Call(model=self.rewriter, request=state.request, group=f"rw/{state.source.key}",
                     on_result=_recorder(state), price=self.spec.rewriter.price)
            )  # fmt: skip
            state.calls.append(call_key(self.rewriter, state.request))
        self._run(calls, f"rewrite (try {round_no})")
        for state in pending:
            state.ratings, state.turns = [], []
            try:
                state.turns = parse_rewrite(state.answer or "")
            except ValueError as exc:
                state.problems = [Problem("not_json", str(exc))]
                continue
            state.problems = structure_problems(state.source, state.turns)

    def _rate(self, chats: dict[str, list[tuple[str, str]]], label: str) -> dict[str, str]:
        """The hostility rater's answer on each chat (key → its JSON text)."""
        answers: dict[str, str] = {}

        def keep(key: str) -> Recorder:
            def record(_s: Session, response: ChatResponse | None, error: str | None) -> str | None:
                if response is None:
                    return error
                answers[key] = response.text
                return None

            return record

        calls = []
        for key, turns in chats.items():
            n = sum(speaker == Role.SEEKER.value for speaker, _ in turns)
            request = rating_request(turns, self.rater_prompt, self.spec.rater)
            check = Check(
                problem=_rating_problem(n),
                message=lambda problem: self.reask_text.replace("{problem}", problem),
            )
            calls.append(
                Call(model=self.rater, request=request, group=f"rate/{key}", on_result=keep(key),
                     price=self.spec.rater.price, check=check)
            )  # fmt: skip
        self._run(calls, label)
        return answers

    def _rating_round(self, rated: list[_Try], round_no: int) -> None:
        chats = {state.source.key: state.turns for state in rated}
        answers = self._rate(chats, f"rate hostility (try {round_no})")
        for state in rated:
            request = rating_request(state.turns, self.rater_prompt, self.spec.rater)
            state.calls.append(call_key(self.rater, request))
            try:
                state.ratings = parse_ratings(answers[state.source.key], state.source.seeker_turns)
            except ValueError as exc:
                state.problems = [Problem("rating_invalid", str(exc))]
                continue
            tolerance = self.spec.hostility_tolerance
            state.problems = rating_problems(state.source, state.ratings, tolerance)

    def rate_sources(self, sources: list[Source]) -> dict[str, list[int]]:
        """The rater on the original, calm seeker turns: a check that it tells them apart."""
        chats = {s.key: [(t.role.value, t.text) for t in s.turns] for s in sources}
        answers = self._rate(chats, "rate the original seeker turns")
        out = {}
        for source in sources:
            try:
                out[source.key] = parse_ratings(answers[source.key], source.seeker_turns)
            except ValueError:
                out[source.key] = []  # an invalid answer rates nothing
        return out

    def run(self, sources: list[Source]) -> list[_Try]:
        """Every source through its tries, each ending kept or rejected."""
        states = [
            _Try(s, rewrite_request(s, self.rewriter_prompt, self.spec.rewriter)) for s in sources
        ]
        pending = list(states)
        for round_no in range(1, self.spec.rewrite_retries + 2):
            self._rewrite_round(pending, round_no)
            self._rating_round([s for s in pending if not s.problems], round_no)
            still = []
            for state in pending:
                if not state.problems:
                    state.status = KEPT
                elif round_no <= self.spec.rewrite_retries:
                    reasons = "; ".join(map(str, state.problems))
                    message = self.retry_text.replace("{problems}", reasons)
                    state.request = state.request.follow_up(state.answer or "", message)
                    still.append(state)
                else:
                    state.status = REJECTED
            pending = still
            if not pending:
                break
        return states


def _meta(state: _Try, stage: _Stage) -> dict[str, object]:
    source = state.source
    return {
        "profile": source.profile.value,
        "targets": list(source.targets),
        "ratings": state.ratings,
        "source_conversation": source.conversation.id,
        "source_turns": [source.start, source.end],
        "prompts": {"rewriter": stage.rewriter_prompt.hash, "rater": stage.rater_prompt.hash},
        "calls": state.calls,
        "tries": state.tries,
    }


def _save(
    study: Study,
    corpus: Corpus,
    states: list[_Try],
    stage: _Stage,
    source_ratings: dict[str, list[int]],
) -> bool:
    """Replace the stored adversarial items and rewrites with this build's, refusing to drop
    items that already have completions; returns whether the items changed."""
    items = {
        s.source.key: adversarial_item(
            s.source, rewritten_turns(s.source, s.turns), _meta(s, stage)
        )
        for s in states
        if s.status == KEPT
    }
    new_ids = {item.id for item in items.values()}
    stamp = now_iso()
    with study.store.session() as session:
        adversarial = ItemRow.subset == Subset.ADVERSARIAL.value
        old_ids = set(session.scalars(select(ItemRow.id).where(adversarial)))
        dropped = old_ids - new_ids
        if dropped:
            used = session.scalar(
                select(func.count())
                .select_from(CompletionRow)
                .where(CompletionRow.item_id.in_(dropped))
            )
            if used:
                raise HeartError(
                    f"this study has {len(old_ids)} adversarial items with {used} completions "
                    "that this build would drop; build them in a new study (`heart init DIR`) or "
                    "keep the corpus, seed, rewriter and adversarial settings unchanged"
                )
            session.execute(delete(ItemRow).where(ItemRow.id.in_(dropped)))
        store_conversations(session, corpus, {s.source.conversation.id for s in states})
        for item in items.values():
            if item.id not in old_ids:
                session.add(item_to_row(item))
        session.execute(delete(RewriteRow))
        for s in states:
            kept = items.get(s.source.key)
            session.add(
                RewriteRow(
                    id=s.source.key, conversation_id=s.source.conversation.id,
                    start=s.source.start, end=s.source.end, profile=s.source.profile.value,
                    targets=list(s.source.targets), status=s.status, attempts=s.tries,
                    reasons=[str(p) for p in s.problems], turns=[list(t) for t in s.turns],
                    ratings=s.ratings, source_ratings=source_ratings.get(s.source.key, []),
                    item_id=kept.id if kept else None, calls=s.calls,
                    created_at=stamp,
                )
            )  # fmt: skip
    return old_ids != new_ids


def _sources(study: Study) -> tuple[Corpus, list[Source]]:
    spec = study.config.items
    corpus = load_corpus(study.esconv_path())
    return corpus, select_sources(
        corpus.conversations, spec.adversarial, study.config.seed, spec.adversarial_max_turns
    )


def plan_adversarial(study: Study) -> list[Call]:
    """The first try's rewriter calls (for a dry run; ratings and retries come on top)."""
    spec = study.config.items
    if not spec.adversarial:
        return []
    prompt = study.use_prompt(REWRITER_PROMPT)
    model = make_chat_model(spec.rewriter)
    return [
        Call(model=model, request=rewrite_request(s, prompt, spec.rewriter),
             group=f"rw/{s.key}", on_result=lambda _s, _r, e: e, price=spec.rewriter.price)
        for s in _sources(study)[1]
    ]  # fmt: skip


def projected_items(study: Study) -> list[Item]:
    """The adversarial items a build would make if every rewrite were kept with its source's
    turns: a dry run's stand-ins (the rewrites, and which are kept, come only from a build)."""
    if not study.config.items.adversarial:
        return []
    return [adversarial_item(s, s.turns, {}) for s in _sources(study)[1]]


def build_adversarial(study: Study, progress: ProgressFn | None = None) -> AdversarialSummary:
    """Choose ``items.adversarial`` conversations, rewrite and validate them, and store the
    kept ones as adversarial items with what became of every one."""
    spec = study.config.items
    corpus, sources = _sources(study) if spec.adversarial else (Corpus(), [])
    stage = _Stage(study, progress)
    by_profile: dict[str, ProfileCounts] = {p.value: ProfileCounts() for p in Profile}
    try:
        states = stage.run(sources) if sources else []
        controls = stage.rate_sources(sources) if sources else {}
    except CallsFailed as stopped:  # nothing is stored; the next build reuses the answers
        return AdversarialSummary(spec.adversarial, by_profile, stopped.calls, changed=False)
    changed = _save(study, corpus, states, stage, controls)
    for s in states:
        counts = by_profile[s.source.profile.value]
        rejected = counts.rejected + Counter(p.reason for p in s.problems if s.status == REJECTED)
        by_profile[s.source.profile.value] = ProfileCounts(
            counts.requested + 1, counts.kept + (s.status == KEPT), rejected
        )
    return AdversarialSummary(spec.adversarial, by_profile, stage.total, changed)
