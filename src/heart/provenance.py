"""Where a study's numbers come from: which heart (version, and git commit when it runs from a
checkout), when, from which study file, with which prompts and which models at which endpoints,
and at what token count and cost per stage.

One :class:`Provenance`, built from the study and its store, is written beside the report
(``provenance.json`` and a part of its Study section) and into every bundle. It never holds a
secret: a model is named by its provider, model and base URL, with the URL's query left out,
never by its key or the variable holding it. A bundle's provenance, once imported, is kept
apart and listed under ``imported``: it never stands for the importing study's own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

import heart
from heart.config import STUDY_FILE, ModelSpec, Price, StudyConfig
from heart.errors import ConfigError, ImportRefused
from heart.import_checks import parse_json, text_problem
from heart.models import ChatResponse, billed
from heart.store import (
    BundleProvenanceRow,
    CallRow,
    ClassificationRow,
    CompletionRow,
    JudgmentRow,
    PromptRow,
    RationaleCodingRow,
    RewriteRow,
    Store,
    now_iso,
)
from heart.strategies import DEFAULT_CLASSIFIER, classifier_id
from heart.types import Status
from heart.version import git_commit

if TYPE_CHECKING:
    from heart.study import Study

PROVENANCE_FILE = "provenance.json"
PROVENANCE_FORMAT: Literal["heart-provenance"] = "heart-provenance"
STAGES = ("adversarial", "generate", "judge", "strategies", "rationales")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelUse(_Record):
    """A model the study calls: its ``role`` (system, judge, classifier, coder, screener,
    rewriter, hostility rater), the system's or judge's name (the setting's path for the
    others), and where it is reached."""

    role: str
    name: str
    provider: str
    model: str
    endpoint: str


class PromptUse(_Record):
    """A prompt template the store's outputs were made with."""

    name: str
    version: str
    hash: str


class StageUse(_Record):
    """What one stage's model calls cost, from the answers the store holds: ``answers`` stored
    from model calls (``failed`` of them failed), the distinct ``calls`` behind them (answers
    asking the very same thing share one), and those calls' tokens in and out (a re-asked
    answer counts every ask) and cost at the study file's prices."""

    stage: str
    answers: int
    failed: int
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    cached_tokens_in: int = Field(
        0, description="prompt tokens a provider's cache served (in tokens_in)"
    )
    list_cost_usd: float | None = Field(
        None,
        description="what the same calls cost live at list price, without a prompt cache "
        "(None: not recorded, as in provenance written before heart kept it)",
    )

    @property
    def saved_usd(self) -> float | None:
        """What batch prices and the prompt cache saved against list price."""
        return None if self.list_cost_usd is None else self.list_cost_usd - self.cost_usd


class Provenance(_Record):
    """Which heart made a study's report or bundle, when, from what, with which models, and at
    what cost; ``imported`` holds the provenance of every bundle imported into the study."""

    format: Literal["heart-provenance"] = PROVENANCE_FORMAT
    version: Literal[1] = 1
    heart_version: str
    git_commit: str | None
    written_at: str
    study: str
    study_file_sha256: str | None
    prompts: list[PromptUse]
    models: list[ModelUse]
    stages: list[StageUse]
    imported: list[Provenance] = []

    def to_json(self) -> str:
        """The provenance as the indented JSON of ``provenance.json``."""
        return self.model_dump_json(indent=2) + "\n"

    @property
    def digest(self) -> str:
        """The sha256 of its canonical JSON, its own imports left out: one imported bundle's
        key in the store."""
        record = self.model_copy(update={"imported": []}).model_dump(mode="json")
        text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- what the study used -------------------------------------------------------------------


def _endpoint(spec: ModelSpec) -> str:
    """The model's endpoint without the base URL's query (which may carry a key)."""
    try:
        url = spec.endpoint
    except ConfigError:
        return "unknown: the base URL in the environment is not valid"
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")) if parts.scheme else url


def _use(role: str, name: str, spec: ModelSpec) -> ModelUse:
    return ModelUse(role=role, name=name, provider=spec.provider, model=spec.model,
                    endpoint=_endpoint(spec))  # fmt: skip


def model_uses(config: StudyConfig, store: Store) -> list[ModelUse]:
    """Every model the study calls, by role: systems and judges; the strategy classifier when
    it is set (or the default one has labelled something), the LLM rationale coder and the
    screener when set, and the rewriter and hostility rater when adversarial items are asked
    for."""
    uses = [_use("system", s.name, s.model) for s in config.systems if s.model is not None]
    uses += [_use("judge", j.name, j.model) for j in config.judges]
    classifier = config.strategies.classifier
    if classifier is None:
        with store.session() as s:
            default = classifier_id(DEFAULT_CLASSIFIER)
            used = select(ClassificationRow.id).where(ClassificationRow.classifier == default)
            if s.scalar(used.limit(1)) is not None:
                classifier = DEFAULT_CLASSIFIER
    if classifier is not None:
        uses.append(_use("classifier", "strategies.classifier", classifier))
    if config.rationales.coder is not None:
        uses.append(_use("coder", "rationales.coder", config.rationales.coder))
    items = config.items
    if items.screener is not None:
        uses.append(_use("screener", "items.screener", items.screener))
    if items.adversarial:
        uses.append(_use("rewriter", "items.rewriter", items.rewriter))
        rater = "items.hostility_rater" if items.hostility_rater else "items.rewriter"
        uses.append(_use("hostility rater", rater, items.rater))
    return uses


def prompt_uses(store: Store) -> list[PromptUse]:
    """Every prompt template the store's outputs name, by name and version."""
    with store.session() as s:
        rows = s.execute(
            select(PromptRow.name, PromptRow.version, PromptRow.hash).order_by(
                PromptRow.name, PromptRow.version, PromptRow.hash
            )
        ).all()
    return [PromptUse(name=n, version=v, hash=h) for n, v, h in rows]


STAGE_ROWS: tuple[tuple[str, Any], ...] = (
    ("generate", CompletionRow),
    ("judge", JudgmentRow),
    ("strategies", ClassificationRow),
    ("rationales", RationaleCodingRow),
)
"""The stages whose rows hold their own calls' tokens and cost (a row from a model call has a
call hash; the rule-based coder's, people's and fixed replies have none)."""


def _stage_rows(session: Session, stage: str, table: Any) -> StageUse:
    made: ColumnElement[bool] = table.call_hash.is_not(None)
    answers, failed = session.execute(
        select(func.count(), func.count().filter(table.status == Status.FAILED)).where(made)
    ).one()
    per_call = (
        select(
            func.max(table.tokens_in).label("tokens_in"),
            func.max(table.tokens_out).label("tokens_out"),
            func.max(table.cost_usd).label("cost_usd"),
            func.max(table.cached_tokens_in).label("cached_tokens_in"),
            # an answer stored before list prices were kept was billed at list price
            func.max(func.coalesce(table.list_cost_usd, table.cost_usd)).label("list_cost_usd"),
        )
        .where(made)
        .group_by(table.call_hash)
        .subquery()
    )
    calls, tokens_in, tokens_out, cost, cached, listed = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(per_call.c.tokens_in), 0),
            func.coalesce(func.sum(per_call.c.tokens_out), 0),
            func.coalesce(func.sum(per_call.c.cost_usd), 0.0),
            func.coalesce(func.sum(per_call.c.cached_tokens_in), 0),
            func.coalesce(func.sum(per_call.c.list_cost_usd), 0.0),
        )
    ).one()
    return StageUse(stage=stage, answers=answers, failed=failed, calls=calls,
                    tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=float(cost),
                    cached_tokens_in=cached, list_cost_usd=float(listed))  # fmt: skip


def _adversarial(session: Session, config: StudyConfig | None) -> StageUse:
    """The rewriter's and the hostility rater's calls: those of the call keys each rewrite keeps
    whose answer the store's call cache holds, priced at the model's price in the study file. A
    call that failed or was refused leaves no answer, and a bundle carries no cache, so such
    calls are not counted (and none is counted as failed)."""
    keys = sorted({k for calls in session.scalars(select(RewriteRow.calls)) for k in calls or []})
    prices: dict[tuple[str, str, str], Price] = {}
    for spec in (config.items.rater, config.items.rewriter) if config is not None else ():
        with suppress(ConfigError):  # a base URL in the environment heart cannot call
            prices[spec.provider, spec.endpoint, spec.model] = spec.price
    answered = tokens_in = tokens_out = cached = 0
    cost = listed = 0.0
    for start in range(0, len(keys), 500):
        for row in session.scalars(
            select(CallRow).where(CallRow.hash.in_(keys[start : start + 500]))
        ):
            answered += 1
            answer = ChatResponse.model_validate(row.response)
            tokens_in += answer.tokens_in or 0
            tokens_out += answer.tokens_out or 0
            cached += answer.cached_tokens_in
            price = prices.get((row.provider, row.endpoint or "", row.model))
            if price is not None:
                cost += billed(price, answer)
                listed += price.cost(answer.tokens_in, answer.tokens_out)
    return StageUse(stage="adversarial", answers=answered, failed=0, calls=answered,
                    tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost,
                    cached_tokens_in=cached, list_cost_usd=listed)  # fmt: skip


def stage_uses(store: Store, config: StudyConfig | None = None) -> list[StageUse]:
    """Tokens and cost per stage (adversarial, generate, judge, strategies, rationales), from
    the answers in the store, imported ones included; ``config`` prices the adversarial stage,
    whose answers keep no cost."""
    with store.session() as s:
        rows = {stage: _stage_rows(s, stage, table) for stage, table in STAGE_ROWS}
        rows["adversarial"] = _adversarial(s, config)
    return [rows[stage] for stage in STAGES]


def imported_provenance(store: Store) -> list[Provenance]:
    """The provenance of every bundle imported into the study, oldest first."""
    with store.session() as s:
        rows = list(s.scalars(select(BundleProvenanceRow)))
    found = [Provenance.model_validate(r.provenance) for r in rows]
    return sorted(found, key=lambda p: (p.written_at, p.digest))


def build_provenance(
    store: Store, study_file: Path | None, config: StudyConfig | None
) -> Provenance:
    """The provenance now of the study with this ``store``, study file and ``config`` (without a
    config, as for a study file that does not parse, no models are named and the adversarial
    stage is not priced)."""
    digest = None
    if study_file is not None and study_file.is_file():
        digest = hashlib.sha256(study_file.read_bytes()).hexdigest()
    return Provenance(
        heart_version=heart.__version__,
        git_commit=git_commit(),
        written_at=now_iso(),
        study=config.name if config is not None else "",
        study_file_sha256=digest,
        prompts=prompt_uses(store),
        models=model_uses(config, store) if config is not None else [],
        stages=stage_uses(store, config),
        imported=imported_provenance(store),
    )


def study_provenance(study: Study) -> Provenance:
    """The study's provenance now: which heart, its study file, its prompts, models and costs."""
    return build_provenance(study.store, study.root / STUDY_FILE, study.config)


# --- bundles -------------------------------------------------------------------------------


def parse_provenance(text: str, where: str) -> Provenance:
    """A bundle's ``provenance.json``, checked; a bad one is refused naming ``where`` and the
    field."""
    fix = "export the bundle again"
    data = parse_json(text, where, fix)
    odd = text_problem(data)
    if odd:
        raise ImportRefused(f"{where}: the provenance {odd}; {fix}")
    try:
        return Provenance.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "the provenance"
        raise ImportRefused(f"{where}: '{field}': {error['msg']}; {fix}") from None


def _flattened(provenance: Provenance) -> Iterable[Provenance]:
    yield provenance.model_copy(update={"imported": []})
    for earlier in provenance.imported:
        yield from _flattened(earlier)


def record_imported(session: Session, provenance: Provenance) -> tuple[int, int]:
    """Keep an imported bundle's provenance, and that of every bundle imported into its study,
    beside the importing study's (never in its place); returns (added, already stored)."""
    added = unchanged = 0
    for one in _flattened(provenance):
        key = one.digest
        if session.get(BundleProvenanceRow, key) is not None:
            unchanged += 1
            continue
        session.add(BundleProvenanceRow(id=key, provenance=one.model_dump(mode="json"),
                                        created_at=now_iso()))  # fmt: skip
        session.flush()
        added += 1
    return added, unchanged
