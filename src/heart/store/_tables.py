"""The store's tables. Ids are deterministic strings, so reruns and imports never duplicate rows."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from heart.types import Order


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class ConversationRow(Base):
    """A normalised source conversation (turns as JSON)."""

    __tablename__ = "conversations"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    problem_type: Mapped[str] = mapped_column(String(120))
    emotion_type: Mapped[str] = mapped_column(String(120))
    experience_type: Mapped[str] = mapped_column(String(120), default="")
    situation: Mapped[str] = mapped_column(Text, default="")
    survey: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    turns: Mapped[list[Any]] = mapped_column(JSON)
    origin: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class ItemRow(Base):
    """A benchmark context: turns before the original reply, and the reply itself."""

    __tablename__ = "items"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64), unique=True)
    subset: Mapped[str] = mapped_column(String(20), index=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), index=True)
    turn_index: Mapped[int] = mapped_column(Integer)
    context: Mapped[list[Any]] = mapped_column(JSON)
    reference: Mapped[str] = mapped_column(Text)
    problem_type: Mapped[str] = mapped_column(String(120), index=True)
    emotion_type: Mapped[str] = mapped_column(String(120))
    situation: Mapped[str] = mapped_column(Text, default="")
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class ScreeningRow(Base):
    """Why a candidate couplet was kept or dropped: one row per couplet seen by the screen."""

    __tablename__ = "screening"
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), primary_key=True)
    turn_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    kept: Mapped[bool] = mapped_column(Boolean)
    rule: Mapped[str] = mapped_column(String(60), index=True)
    detail: Mapped[str] = mapped_column(Text, default="")
    item_id: Mapped[str | None] = mapped_column(String(40), nullable=True)


class SystemRow(Base):
    __tablename__ = "systems"
    name: Mapped[str] = mapped_column(String(80), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    family: Mapped[str] = mapped_column(String(80))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class JudgeRow(Base):
    __tablename__ = "judges"
    name: Mapped[str] = mapped_column(String(80), primary_key=True)
    source: Mapped[str] = mapped_column(String(10))  # llm | human
    family: Mapped[str] = mapped_column(String(80))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class RaterRow(Base):
    """A person who writes completions or judges pairs (de-identified)."""

    __tablename__ = "raters"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    excluded_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[str] = mapped_column(String(32))


class CompletionRow(Base):
    """One system's reply to one item (humans: one row per contributor)."""

    __tablename__ = "completions"
    __table_args__ = (UniqueConstraint("item_id", "system", "contributor"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    item_id: Mapped[str] = mapped_column(ForeignKey("items.id"), index=True)
    system: Mapped[str] = mapped_column(ForeignKey("systems.name"), index=True)
    contributor: Mapped[str] = mapped_column(String(40), default="")
    status: Mapped[str] = mapped_column(String(10))  # ok | failed
    text: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    prompt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    call_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    ttft_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_out: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    cached_tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    list_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    finish_reason: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[str] = mapped_column(String(32))


class PairRow(Base):
    """Two completions of the same item, in the A/B order shown to judges."""

    __tablename__ = "pairs"
    __table_args__ = (UniqueConstraint("item_id", "a_id", "b_id"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    item_id: Mapped[str] = mapped_column(ForeignKey("items.id"), index=True)
    a_id: Mapped[str] = mapped_column(ForeignKey("completions.id"))
    b_id: Mapped[str] = mapped_column(ForeignKey("completions.id"))
    design: Mapped[str] = mapped_column(String(20))
    # the chance it was drawn with for people to judge (people.judge_pairs); NULL: not drawn,
    # every pair is people's to judge
    people_chance: Mapped[float | None] = mapped_column(Float, nullable=True)


class JudgmentRow(Base):
    """One judge's verdict on one pair in one presentation order.

    ``order`` is ``ab`` when the judge saw the pair's A first, ``ba`` when swapped; ``winner`` is
    always in the pair's own terms (``a``, ``b`` or ``tie``).
    """

    __tablename__ = "judgments"
    __table_args__ = (UniqueConstraint("pair_id", "judge", "order"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    pair_id: Mapped[str] = mapped_column(ForeignKey("pairs.id"), index=True)
    judge: Mapped[str] = mapped_column(ForeignKey("judges.name"), index=True)
    order: Mapped[str] = mapped_column(String(2))
    status: Mapped[str] = mapped_column(String(10))  # ok | failed
    winner: Mapped[str | None] = mapped_column(String(4), nullable=True)
    strength: Mapped[int | None] = mapped_column(Integer, nullable=True)
    axes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    rationale: Mapped[str] = mapped_column(Text, default="")
    raw: Mapped[str | None] = mapped_column(Text, nullable=True)
    refused: Mapped[list[Any]] = mapped_column(JSON, default=list)  # [{answer, problem}] re-asked
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    prompt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    call_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_out: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    cached_tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    list_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[str] = mapped_column(String(32))


class PromptRow(Base):
    """A prompt template as used, by content hash, so every output can name its exact prompt."""

    __tablename__ = "prompts"
    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    version: Mapped[str] = mapped_column(String(20))
    text: Mapped[str] = mapped_column(Text)


class CallRow(Base):
    """The model-call cache: the answer to a request, keyed by the hash of what determines it
    (``heart.models.call_key``). Rows cached before keys covered the endpoint have none, and no
    key of today's matches them."""

    __tablename__ = "calls"
    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    provider: Mapped[str] = mapped_column(String(40))
    endpoint: Mapped[str | None] = mapped_column(String(300), nullable=True)
    model: Mapped[str] = mapped_column(String(200))
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[str] = mapped_column(String(32))


class BatchRow(Base):
    """A batch of model calls sent to a provider's batch API, recorded before it is submitted:
    ``id`` is heart's own (sent as the batch's metadata where the provider keeps some),
    ``remote_id`` the provider's once it answered. ``state`` is ``submitting`` until then,
    ``open`` while the provider works, and how it finished after (ended, expired, cancelled,
    failed); the counts are as the provider last reported them."""

    __tablename__ = "batches"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    provider: Mapped[str] = mapped_column(String(40))
    endpoint: Mapped[str] = mapped_column(String(300))
    model: Mapped[str] = mapped_column(String(200))
    stage: Mapped[str] = mapped_column(String(40))
    remote_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    state: Mapped[str] = mapped_column(String(16))
    total: Mapped[int] = mapped_column(Integer)
    succeeded: Mapped[int] = mapped_column(Integer, default=0)
    errored: Mapped[int] = mapped_column(Integer, default=0)
    detail: Mapped[str] = mapped_column(Text, default="")
    submitted_at: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[str] = mapped_column(String(32))


class BatchCallRow(Base):
    """One call in a batch, by its call key: ``open`` until the batch finishes, then
    ``answered`` (the answer kept in ``response``), ``failed`` (``error``, its ``cause``, and
    whether asking again can help) or ``missing`` (the batch did not answer it); ``used`` once
    a stage has taken the outcome. A key is never submitted while a batch holds it open or
    answered."""

    __tablename__ = "batch_calls"
    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.id"), primary_key=True)
    call_key: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)
    state: Mapped[str] = mapped_column(String(16))
    response: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    cause: Mapped[str | None] = mapped_column(String(40), nullable=True)
    retryable: Mapped[bool] = mapped_column(Boolean, default=False)


class TaskRow(Base):
    """One seat of human work: a writer for an item, a rater for a pair, or a labeller for a
    completion. Unique seats make over-filling impossible; a rater holds at most one seat per
    target, so nobody writes, judges or labels the same thing twice.

    A claim is the rater and its expiry (epoch seconds); an expired claim returns to the pool.
    ``check`` marks quality-control tasks ("gold" or "attention") with their ``expected``
    answer; ``shown`` is the A/B order a judge task is served in, decided on the server.
    """

    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("kind", "target", "seat"),
        UniqueConstraint("kind", "target", "rater_id"),
        Index("ix_tasks_kind_seat", "kind", "seat", "id"),  # the order claims take seats in
    )
    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10), index=True)  # write | judge | label
    target: Mapped[str] = mapped_column(String(60))  # item, pair or completion id
    item_id: Mapped[str] = mapped_column(ForeignKey("items.id"), index=True)
    seat: Mapped[int] = mapped_column(Integer)
    shown: Mapped[str] = mapped_column(String(2), default=Order.AB.value)
    check: Mapped[str | None] = mapped_column(String(10), nullable=True)
    expected: Mapped[str | None] = mapped_column(String(20), nullable=True)
    rater_id: Mapped[str | None] = mapped_column(ForeignKey("raters.id"), nullable=True, index=True)
    expires_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    served_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    submitted_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    done: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)  # checks only


class LabelRow(Base):
    """A person's strategy labels for one completion (which of the 15 strategies it uses)."""

    __tablename__ = "strategy_labels"
    __table_args__ = (UniqueConstraint("completion_id", "rater_id"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    completion_id: Mapped[str] = mapped_column(ForeignKey("completions.id"), index=True)
    rater_id: Mapped[str] = mapped_column(ForeignKey("raters.id"), index=True)
    strategies: Mapped[list[Any]] = mapped_column(JSON, default=list)
    taxonomy_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[str] = mapped_column(String(32))


class RewriteRow(Base):
    """A conversation chosen for an adversarial item: its escalation profile and targets, the
    last rewrite and its hostility ratings, the rater's ratings of the original seeker turns (a
    check on the rater), every call made for it, and whether it became an item (``status``
    kept, with ``item_id``) or was rejected (with the reasons of its last try)."""

    __tablename__ = "rewrites"
    id: Mapped[str] = mapped_column(String(80), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"), index=True)
    start: Mapped[int] = mapped_column(Integer)
    end: Mapped[int] = mapped_column(Integer)
    profile: Mapped[str] = mapped_column(String(20))
    targets: Mapped[list[Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(10))  # kept | rejected
    attempts: Mapped[int] = mapped_column(Integer)
    reasons: Mapped[list[Any]] = mapped_column(JSON, default=list)
    turns: Mapped[list[Any]] = mapped_column(JSON, default=list)  # [[speaker, text], ...]
    ratings: Mapped[list[Any]] = mapped_column(JSON, default=list)
    source_ratings: Mapped[list[Any]] = mapped_column(JSON, default=list)  # the calm originals
    item_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    calls: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[str] = mapped_column(String(32))


class ClassificationRow(Base):
    """The strategy classifier's answer on one completion: for every strategy of the taxonomy
    (``taxonomy_hash``), present, absent or uncertain, a probability and an evidence snippet
    quoted from the completion. ``classifier`` names the model (provider, model, endpoint)."""

    __tablename__ = "strategy_classifications"
    __table_args__ = (UniqueConstraint("completion_id", "classifier", "taxonomy_hash"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    completion_id: Mapped[str] = mapped_column(ForeignKey("completions.id"), index=True)
    classifier: Mapped[str] = mapped_column(String(300))
    taxonomy_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(10))  # ok | failed
    # {strategy: {"status": present|absent|uncertain, "probability": float, "evidence": str}}
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    raw: Mapped[str | None] = mapped_column(Text, nullable=True)
    refused: Mapped[list[Any]] = mapped_column(JSON, default=list)  # [{answer, problem}] re-asked
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    prompt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    call_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_out: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    cached_tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    list_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[str] = mapped_column(String(32))


class RationaleCodingRow(Base):
    """One coder's reading of one judgment's rationale under one codebook (``codebook_hash``):
    ok with its codes (``rationale_codes``, possibly none), or failed with its reason. ``coder``
    is the rule coder's name or an LLM coder's model (provider, model, endpoint)."""

    __tablename__ = "rationale_codings"
    __table_args__ = (UniqueConstraint("judgment_id", "coder", "codebook_hash"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    judgment_id: Mapped[str] = mapped_column(ForeignKey("judgments.id"), index=True)
    coder: Mapped[str] = mapped_column(String(300))
    codebook_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(10))  # ok | failed
    raw: Mapped[str | None] = mapped_column(Text, nullable=True)
    refused: Mapped[list[Any]] = mapped_column(JSON, default=list)  # [{answer, problem}] re-asked
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    prompt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    call_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_out: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    cached_tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    list_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[str] = mapped_column(String(32))


class RationaleCodeRow(Base):
    """One theme a coder found in a rationale: the words that show it (``evidence``, at
    ``span_start``–``span_end`` of the rationale when known), the reply it is about in the pair's
    terms (``side`` a, b, or none when the rationale does not say), the words that placed the
    side (``cue``), and ``negated`` when the rationale denies the theme of that reply."""

    __tablename__ = "rationale_codes"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    coding_id: Mapped[str] = mapped_column(ForeignKey("rationale_codings.id"), index=True)
    judgment_id: Mapped[str] = mapped_column(ForeignKey("judgments.id"), index=True)
    coder: Mapped[str] = mapped_column(String(300))
    codebook_hash: Mapped[str] = mapped_column(String(64))
    theme: Mapped[str] = mapped_column(String(60))
    side: Mapped[str] = mapped_column(String(4))  # a | b | none
    negated: Mapped[bool] = mapped_column(Boolean, default=False)
    evidence: Mapped[str] = mapped_column(Text)
    span_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    span_end: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cue: Mapped[str] = mapped_column(Text, default="")


class BundleProvenanceRow(Base):
    """The provenance of a bundle imported into the study, and of each bundle imported into that
    one, kept as it came (``heart.provenance.Provenance`` as JSON, without its own imports),
    keyed by the sha256 of that JSON. The study's own provenance never comes from here."""

    __tablename__ = "bundle_provenance"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[str] = mapped_column(String(32))


class ConsentRow(Base):
    """A person's acceptance of the study's information and consent page: when, and the sha256
    of the text they were shown. Kept in the study only: bundles never carry it."""

    __tablename__ = "consents"
    rater_id: Mapped[str] = mapped_column(ForeignKey("raters.id"), primary_key=True)
    text_hash: Mapped[str] = mapped_column(String(64))
    consented_at: Mapped[str] = mapped_column(String(32))


class PracticeRow(Base):
    """A person's answer to the practice pair shown after the instructions: apart from every
    seat and judgment, so it is never counted; kept to know it was done, and how. The latest
    answer, and how many times they answered (``people.practice_tries`` at most)."""

    __tablename__ = "practice_answers"
    rater_id: Mapped[str] = mapped_column(ForeignKey("raters.id"), primary_key=True)
    choice: Mapped[str] = mapped_column(String(4))
    rationale: Mapped[str] = mapped_column(Text, default="")
    correct: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[str] = mapped_column(String(32))
    tries: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
