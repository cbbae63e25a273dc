"""The study file (study.yaml) → validated objects, with errors that name the line and field."""

from __future__ import annotations

import math
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from heart.endpoints import BadBaseUrl, endpoint_of, normalise_base_url
from heart.errors import ConfigError
from heart.types import Axis, SystemKind
from heart.utf8 import NotUtf8, decode_utf8
from heart.yaml_reader import check_yaml_size, compose_yaml, construct_yaml

ProviderName = Literal["embedded", "openai", "anthropic"]
RaterFlagName = Literal["attention", "position", "speed", "run", "agreement", "gold"]
"""The quality flags a rater can get (heart.people); ``people.exclude_flags`` picks those that
exclude."""
EXCLUDING_BY_DEFAULT: tuple[RaterFlagName, ...] = ("attention", "position", "speed")
STUDY_FILE = "study.yaml"
DEFAULT_STORE = "heart.db"


NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""A system's or judge's name: a letter or digit, then letters, digits, '.', '_' or '-'."""
VERSION = r"^v[0-9]+$"
"""A version of something heart ships: v1, v2, ..."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldProblem(ValueError):
    """A check across settings that failed, placed at the setting to change (for its line)."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


class EntryProblem(ValueError):
    """A list setting whose entry ``index`` is wrong, placed at that entry (for its line)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


class Price(Strict):
    """US dollars per million tokens, at list price; a batch call is billed ``batch_share`` of it.

    Unset cache prices bill cached tokens like any other prompt token, so a study that names
    none never counts a saving it cannot show.
    """

    input_per_mtok: float = Field(
        0.0, ge=0, description="US dollars per million prompt tokens sent to the model"
    )
    output_per_mtok: float = Field(
        0.0, ge=0, description="US dollars per million tokens the model writes"
    )
    cached_input_per_mtok: float | None = Field(
        None,
        ge=0,
        description="US dollars per million prompt tokens read from the provider's prompt "
        "cache (unset: the input price)",
    )
    cache_write_per_mtok: float | None = Field(
        None,
        ge=0,
        description="US dollars per million prompt tokens written to the provider's cache "
        "for its short (5-minute) lifetime (unset: the input price)",
    )
    cache_write_1h_per_mtok: float | None = Field(
        None,
        ge=0,
        description="US dollars per million prompt tokens written to the cache for an hour, "
        "where the provider prices that apart (unset: cache_write_per_mtok)",
    )
    batch_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="the share of these prices a call answered through a batch API is "
        "billed (OpenAI and Anthropic: 0.5)",
    )

    def cost(
        self,
        tokens_in: int | None,
        tokens_out: int | None,
        *,
        cache_read: int = 0,
        cache_write: int = 0,
        cache_write_1h: int = 0,
        batch: bool = False,
    ) -> float:
        """The price of one call in US dollars (unknown token counts count as zero).
        ``tokens_in`` counts every prompt token, the cache's reads and writes among them."""
        plain = max((tokens_in or 0) - cache_read - cache_write - cache_write_1h, 0)
        write = (
            self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        )
        dollars = (
            plain * self.input_per_mtok
            + cache_read * _or(self.cached_input_per_mtok, self.input_per_mtok)
            + cache_write * write
            + cache_write_1h * _or(self.cache_write_1h_per_mtok, write)
            + (tokens_out or 0) * self.output_per_mtok
        ) / 1e6
        return dollars * (self.batch_share if batch else 1.0)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


class ModelSpec(Strict):
    """How to reach a model: provider, model name, and decoding parameters."""

    provider: ProviderName = Field(
        "embedded",
        description="'openai' (any OpenAI-compatible endpoint: vLLM, a llama.cpp server, a "
        "hosted API), 'anthropic', or 'embedded' (SmolLM2-135M in-process, offline)",
    )
    model: str = Field(
        "smollm2-135m-instruct-q4_1", description="the model name the provider knows it by"
    )
    base_url: str | list[str] | None = Field(
        None,
        description="the endpoint's URL, as in http://127.0.0.1:8000/v1 (unset: the "
        "provider's public API); or a list of URLs, one per replica serving the same model, "
        "over which calls are spread (the first URL names the model in call keys and records)",
    )
    api_key_env: str | None = Field(
        None, description="name of the environment variable holding the API key"
    )
    max_tokens: int = Field(128, gt=0, le=8192, description="the most tokens one answer may have")
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature (0: greedy)")
    top_p: float = Field(
        1.0, gt=0, le=1, description="nucleus sampling: the share of probability mass kept"
    )
    n_ctx: int = Field(
        4096, gt=0, description="the embedded model's context window in tokens (others ignore it)"
    )
    structured_output: Literal["json_schema", "json_object_schema", "json_object", "off"] = Field(
        "json_schema",
        description="how an OpenAI-compatible endpoint is asked for JSON: 'json_schema' "
        "(OpenAI, vLLM), 'json_object_schema' (llama.cpp server), 'json_object', or 'off'",
    )
    price: Price = Field(Price(), description="what calls cost, for budgets and dry runs")
    prompt_cache: Literal["5m", "1h", "off"] = Field(
        "5m",
        description="how long a provider keeps a shared prompt prefix: '5m' or '1h' (Anthropic "
        "marks the prefix with cache_control for that long; OpenAI requests carry a "
        "prompt_cache_key per item), or 'off' to send neither",
    )

    @field_validator("base_url", mode="before")
    @classmethod
    def _callable_urls(cls, url: object) -> object:
        if url is None or isinstance(url, str):
            if url is not None:
                _callable(url)
            return url
        if not isinstance(url, list | tuple):
            raise ValueError("expected a URL, or a list of URLs (one per replica)")
        if not url:
            raise ValueError("the list of replicas is empty; give at least one URL")
        seen: dict[str, int] = {}
        for index, entry in enumerate(url):
            if not isinstance(entry, str):
                raise EntryProblem(index, f"expected a URL, got {entry!r}")
            try:
                key = _callable(entry)
            except ValueError as exc:
                raise EntryProblem(index, str(exc)) from None
            if key in seen:
                raise EntryProblem(
                    index, f"names the replica of entry {seen[key]} again ({key}); keep one"
                )
            seen[key] = index
        return list(url)

    @property
    def endpoint(self) -> str:
        """The normalised endpoint this model is reached at (``in-process`` when embedded); for
        a list of replicas, the first, which names the model in call keys and records."""
        first = self.base_url[0] if isinstance(self.base_url, list) else self.base_url
        return endpoint_of(self.provider, first)

    @property
    def replicas(self) -> tuple[str, ...]:
        """The normalised URLs of the servers that answer for this model: the endpoint alone,
        or every URL of a ``base_url`` list, in its order."""
        if isinstance(self.base_url, list):
            return tuple(normalise_base_url(url) for url in self.base_url)
        return (self.endpoint,)

    def at(self, replica: str) -> ModelSpec:
        """This model section reaching only ``replica`` (one of ``replicas``)."""
        return self.model_copy(update={"base_url": replica})


def _callable(url: str) -> str:
    """``url`` normalised; a ValueError saying why heart cannot call it."""
    try:
        return normalise_base_url(url)
    except BadBaseUrl as exc:
        raise ValueError(str(exc)) from None


LIMITS = {
    "concurrency": "calls in flight at once",
    "requests_per_minute": "most calls started in any minute (unset: no limit)",
    "tokens_per_minute": "most tokens, sent and written, in any minute (unset: no limit)",
    "timeout_s": "seconds one try may take before it is abandoned and retried",
    "max_retries": "tries after the first for a call that failed in a way worth retrying",
    "backoff_base_s": "the first wait before a retry, in seconds; it doubles on each retry",
    "backoff_cap_s": "the longest wait before a retry, in seconds",
    "batch": "send this provider's (or endpoint's) calls through its batch API, at the batch "
    "price, instead of live (OpenAI and Anthropic; unset: engine.batch.enabled)",
}
"""What each engine limit means, for providers and endpoints alike."""


class ProviderSettings(Strict):
    """How the engine treats one provider: parallel calls, rate limits, timeouts, retries."""

    concurrency: int = Field(4, gt=0, le=1024, description=LIMITS["concurrency"])
    requests_per_minute: int | None = Field(None, gt=0, description=LIMITS["requests_per_minute"])
    tokens_per_minute: int | None = Field(None, gt=0, description=LIMITS["tokens_per_minute"])
    timeout_s: float = Field(120.0, gt=0, description=LIMITS["timeout_s"])
    max_retries: int = Field(5, ge=0, le=50, description=LIMITS["max_retries"])
    backoff_base_s: float = Field(0.5, ge=0, description=LIMITS["backoff_base_s"])
    backoff_cap_s: float = Field(60.0, gt=0, description=LIMITS["backoff_cap_s"])
    batch: bool | None = Field(None, description=LIMITS["batch"])


class EndpointSettings(Strict):
    """Limits for one endpoint; what is not set comes from its provider's settings."""

    concurrency: int | None = Field(None, gt=0, le=1024, description=LIMITS["concurrency"])
    requests_per_minute: int | None = Field(None, gt=0, description=LIMITS["requests_per_minute"])
    tokens_per_minute: int | None = Field(None, gt=0, description=LIMITS["tokens_per_minute"])
    timeout_s: float | None = Field(None, gt=0, description=LIMITS["timeout_s"])
    max_retries: int | None = Field(None, ge=0, le=50, description=LIMITS["max_retries"])
    backoff_base_s: float | None = Field(None, ge=0, description=LIMITS["backoff_base_s"])
    backoff_cap_s: float | None = Field(None, gt=0, description=LIMITS["backoff_cap_s"])
    batch: bool | None = Field(None, description=LIMITS["batch"])


class BatchSettings(Strict):
    """Provider batch APIs: half the price, answers within a day, and a run that resumes by
    polling the batches it already submitted."""

    enabled: bool = Field(
        False,
        description="send the calls of every OpenAI and Anthropic endpoint through its batch "
        "API unless its own 'batch' setting says otherwise (heart run --batch turns this on "
        "for one run)",
    )
    size: int = Field(1000, gt=0, le=50000, description="the most requests one batch holds")
    poll_s: float = Field(
        60.0, gt=0, description="seconds between two checks on the batches still open"
    )
    failed_calls: Literal["batch", "live"] = Field(
        "batch",
        description="where a request a batch failed (in a way worth retrying) or left "
        "unanswered goes: 'batch' (the next batch) or 'live' (a live call at list price)",
    )


def default_providers() -> dict[ProviderName, ProviderSettings]:
    """The embedded model runs one call at a time in-process; remote APIs get a few in flight."""
    return {
        "embedded": ProviderSettings(concurrency=1, timeout_s=600),
        "openai": ProviderSettings(),
        "anthropic": ProviderSettings(),
    }


class EngineSpec(Strict):
    """Settings of the engine that runs every model call."""

    budget_usd: float | None = Field(
        None, gt=0, description="stop starting new calls once this much has been spent"
    )
    providers: dict[ProviderName, ProviderSettings] = Field(
        default_factory=default_providers,
        description="limits per provider, for every endpoint of it that has none of its own",
    )
    endpoints: dict[str, EndpointSettings] = Field(
        default_factory=dict,
        description="limits per endpoint, keyed by base URL; unset fields come from providers",
    )
    batch: BatchSettings = Field(
        default_factory=BatchSettings, description="provider batch APIs (off by default)"
    )

    @field_validator("endpoints")
    @classmethod
    def _normalised_endpoints(
        cls, endpoints: dict[str, EndpointSettings]
    ) -> dict[str, EndpointSettings]:
        out: dict[str, EndpointSettings] = {}
        for url, settings in endpoints.items():
            try:
                key = normalise_base_url(url)
            except BadBaseUrl as exc:
                raise ValueError(f"engine.endpoints key {exc}") from None
            if key in out:
                raise ValueError(f"two engine.endpoints keys name the endpoint {key}; keep one")
            out[key] = settings
        return out

    def settings(
        self, provider: ProviderName, endpoint: str | None = None, replica: str | None = None
    ) -> ProviderSettings:
        """The limits of ``endpoint`` (a normalised base URL): its own settings over its
        provider's, over the defaults; for one ``replica`` of a model named by ``endpoint``,
        the replica's own settings over those."""
        settings = self.providers.get(provider) or default_providers()[provider]
        for url in (endpoint, replica):
            own = self.endpoints.get(url) if url else None
            if own is not None:
                settings = settings.model_copy(update=own.model_dump(exclude_none=True))
        return settings

    def batches(self, provider: ProviderName, endpoint: str | None = None) -> bool:
        """Whether calls to ``endpoint`` go through its provider's batch API."""
        if provider == "embedded":
            return False
        own = self.settings(provider, endpoint).batch
        return self.batch.enabled if own is None else own


class SystemSpec(Strict):
    """A contestant: a model, the human pool, the ESConv original, or a fixed control reply."""

    name: str = Field(
        min_length=1, max_length=80, pattern=NAME, description="the system's name in every table"
    )
    kind: SystemKind = Field(
        description="'model' (an LLM), 'human' (people's replies from the web app), 'dataset' "
        "(the ESConv supporter's own reply) or 'control' (one fixed reply)"
    )
    family: str = Field(
        min_length=1,
        description="who made it, as in openai or meta; a judge never rates its own family's "
        "replies unless judging.own_family is 'allow'",
    )
    model: ModelSpec | None = Field(
        None, description="the model section of a system of kind 'model'"
    )
    reply: str | None = Field(None, description="the fixed reply of a control system")

    @model_validator(mode="after")
    def _kind_fields(self) -> SystemSpec:
        if self.kind is SystemKind.MODEL and self.model is None:
            raise ValueError(f"system '{self.name}' has kind 'model' but no 'model' section")
        if self.kind is SystemKind.CONTROL and not self.reply:
            raise ValueError(f"system '{self.name}' has kind 'control' but no 'reply'")
        return self


class JudgeSpec(Strict):
    """An LLM judge of the ensemble."""

    name: str = Field(
        min_length=1, max_length=80, pattern=NAME, description="the judge's name in every table"
    )
    family: str = Field(
        min_length=1, description="who made the judge's model, matched against systems' families"
    )
    model: ModelSpec = Field(description="the model that gives the verdicts")


class PairDesign(StrEnum):
    ALL = "all"
    BASELINE = "baseline"
    SAMPLED = "sampled"
    ADAPTIVE = "adaptive"


class PairsSpec(Strict):
    """Which completions of an item are compared, and in how many orders."""

    design: PairDesign = Field(
        PairDesign.ALL,
        description="'all' pairs per item (the paper's), pairs against a 'baseline' system, "
        "'sampled': per_item pairs per item with balanced coverage, or 'adaptive': rounds of "
        "the pairs that make the ranking most certain, until pairs.budget or pairs.stop",
    )
    baseline: str | None = Field(None, description="the baseline system of design 'baseline'")
    per_item: int | None = Field(None, gt=0, description="pairs per item of design 'sampled'")
    budget: int | None = Field(
        None,
        gt=0,
        description="design 'adaptive': the most verdicts any LLM judge gives (a study without "
        "LLM judges: the most pairs people judge)",
    )
    stop: float | Literal["stable"] | None = Field(
        None,
        description="design 'adaptive': stop once every Elo interval (at ratings.level, 95% by "
        "default) is at most this wide in Elo points, or 'stable': once a round leaves the "
        "ranking unchanged",
    )
    round_size: int | None = Field(
        None,
        gt=0,
        description="design 'adaptive': pairs added per round (default: 2 per pair of systems)",
    )
    both_orders: bool = Field(
        False, description="LLM judges see every pair in both A/B orders (measures flip rate)"
    )

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_width_or_stable(cls, value: object) -> object:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if value is None or value == "stable" or (number and value > 0):  # type: ignore[operator]
            return value
        raise ValueError(f"must be a positive width in Elo or 'stable', got {value!r}")


class JudgingSpec(Strict):
    """How the LLM judge ensemble is scheduled and held to its output format."""

    judges_per_pair: int | None = Field(
        None, gt=0, description="judges per pair, loads balanced; default: every eligible judge"
    )
    own_family: Literal["exclude", "allow"] = Field(
        "exclude",
        description="'exclude': a judge never rates a pair holding its own family's reply; "
        "'allow' only for studies with a single model family (self-preference then shows "
        "in the audit)",
    )
    reasks: int = Field(
        1, ge=0, le=5, description="times an invalid verdict is asked again with its error"
    )
    prompt_version: str = Field(
        "v2", pattern=VERSION, description="the version of the judge prompt heart ships"
    )


class StrategiesSpec(Strict):
    """The strategy classifier: which model labels completions, and how many it labels."""

    classifier: ModelSpec | None = Field(
        None,
        description="the model that labels completions with the 15 strategies (heart run "
        "labels only when it is set; heart strategies uses the embedded model when not)",
    )
    completions: int | None = Field(
        None, gt=0, description="completions to label, spread evenly over systems (unset: all)"
    )
    reasks: int = Field(
        1, ge=0, le=5, description="times an invalid answer is asked again with its error"
    )
    taxonomy: str = Field(
        "v1", pattern=VERSION, description="the version of the 15-strategy taxonomy heart ships"
    )


class RationalesSpec(Strict):
    """Coding judges' and raters' rationales with the codebook's themes: the rule-based coder
    always runs; an LLM coder runs as well when ``coder`` is set."""

    coder: ModelSpec | None = Field(
        None,
        description="an LLM that codes every rationale with the codebook's themes, beside the "
        "rule-based coder (unset: the rule-based coder alone)",
    )
    reasks: int = Field(
        1, ge=0, le=5, description="times an invalid answer is asked again with its error"
    )
    codebook: str = Field(
        "v1", pattern=VERSION, description="the version of the rationale codebook heart ships"
    )


WorkKind = Literal["write", "judge", "label"]
WORK_KINDS: tuple[WorkKind, ...] = ("write", "judge", "label")


class FlowStep(Strict):
    """One step of a session's flow: a kind of work, and the share of the session's tasks it
    takes (unset: an even part of what the steps with a share leave)."""

    kind: WorkKind = Field(description="the kind of work: write, judge or label")
    share: float | None = Field(
        None,
        gt=0,
        le=1,
        description="the share of tasks_per_person this step takes (unset: an even part of "
        "what the steps with a share leave)",
    )


def flow_steps(value: Any) -> Any:
    """A flow as written (``[judge]``, ``[write, judge]``, ``[{write: 0.25}, judge]`` or
    ``[{kind: write, share: 0.25}]``) as the entries of FlowStep."""
    if not isinstance(value, list):
        return value
    steps: list[Any] = []
    for entry in value:
        if isinstance(entry, str):
            steps.append({"kind": entry})
        elif isinstance(entry, dict) and len(entry) == 1 and next(iter(entry)) in WORK_KINDS:
            ((kind, share),) = entry.items()
            steps.append({"kind": kind, "share": share})
        else:
            steps.append(entry)
    return steps


class PeopleSpec(Strict):
    """Human work collected in the web app: how many people per context, pair and completion,
    how long a claim lasts, and how often quality checks are mixed in."""

    human_system: str = Field(
        "human", description="the system (kind 'human') that people's completions belong to"
    )
    writers_per_item: int = Field(
        3, gt=0, le=20, description="people who write a reply to each context"
    )
    raters_per_pair: int = Field(5, gt=0, le=20, description="people who judge each pair")
    judge_pairs: int | None = Field(
        None,
        gt=0,
        description="how many pairs people judge, in expectation: each pair is drawn once, "
        "with a chance kept with it, and only drawn pairs get seats (unset: every pair)",
    )
    assist: Literal["uniform", "active"] = Field(
        "uniform",
        description="how judge_pairs are drawn: 'uniform' (every pair the same chance) or "
        "'active' (more often where the LLM judges are unsure or disagree; the judge-assisted "
        "board weighs each verdict by one over its pair's chance, so it stays unbiased)",
    )
    assist_floor: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="with assist: active, the least chance of a pair, as a share of the "
        "uniform chance judge_pairs / pairs",
    )
    labellers_per_completion: int = Field(
        2, gt=0, le=10, description="people who label the strategies of each sampled completion"
    )
    label_completions: int = Field(
        0, ge=0, description="completions sampled (evenly over systems) for strategy labels"
    )
    claim_minutes: float = Field(
        30.0,
        gt=0,
        le=24 * 60,
        description="minutes a task stays held for the person who opened it before another "
        "may take it",
    )
    check_every: int = Field(
        8, ge=0, description="one gold or attention check per this many judge tasks (0: none)"
    )
    min_words: int = Field(3, gt=0, description="the fewest words a person's reply may have")
    max_words: int = Field(80, gt=0, description="the most words a person's reply may have")
    completion_code: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="the code shown to Prolific participants once their session is done (its "
        "tasks_per_person submitted, or no work left for them)",
    )
    prolific_study: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        description="the Prolific STUDY_ID entry links must carry (unset: any study id)",
    )
    tasks_per_person: int | None = Field(
        None,
        gt=0,
        description="most tasks one person may submit, checks included (unset: no limit)",
    )
    consent: str | None = Field(
        None,
        min_length=1,
        max_length=20_000,
        description="the information and consent text a person accepts before any task, "
        "paragraphs separated by blank lines (unset: heart's own text, which names what is "
        "collected and how it is used)",
    )
    show_rubric: bool = Field(
        False,
        description="show raters the five HEART axes before they judge (off: as in the HEART "
        "design, people judge without the rubric, so their verdicts are an independent check "
        "on the rubric-led LLM judges; the report says which)",
    )
    checks_to_exclude: int = Field(
        2,
        ge=1,
        le=20,
        description="failed attention checks that exclude a rater (Prolific asks for at least "
        "two before a participant may be asked to return a submission)",
    )
    exclude_flags: list[RaterFlagName] = Field(
        default_factory=lambda: list(EXCLUDING_BY_DEFAULT),
        description="which quality flags exclude a rater from the analyses (the others are "
        "shown, not acted on): attention, position, speed, run, agreement, gold",
    )
    flow: list[FlowStep] = Field(
        default_factory=list,
        description="what one session holds, in order: kinds of work (write, judge, label), "
        "each alone or with its share of tasks_per_person, as [judge], [write, judge] or "
        "[{write: 0.25}, judge]; a person is led from step to step and a step with no work "
        "left hands its tasks on (empty: write, judge, label)",
    )
    exclusion_code: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="the Prolific code shown when quality control ends a person's session "
        "(unset: they are asked to return the study on Prolific)",
    )
    practice_code: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="the Prolific code shown when the practice pair is still answered wrong "
        "after practice_tries (unset: they are asked to return the study on Prolific)",
    )
    practice_tries: int = Field(
        2, ge=1, le=10, description="answers to the practice pair before a session ends on it"
    )
    break_every: int = Field(
        10, ge=0, description="tasks between two suggestions to take a break (0: none)"
    )
    support_url: str | None = Field(
        None,
        pattern=r"^https?://\S+$",
        max_length=500,
        description="a page of support or helplines, linked on every page and the finish page",
    )
    researcher: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="who runs the study and how to reach them, named on the default consent page",
    )
    ethics_approval: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="the ethics approval (board and reference), named on the default consent page",
    )
    min_age: int = Field(
        18, ge=13, le=99, description="the youngest age that may take part (default consent page)"
    )
    seconds_per_task: float = Field(
        60.0,
        gt=0,
        description="seconds one task is expected to take, for time estimates and prices until "
        "the study's own median is known",
    )
    pay_per_hour: float | None = Field(
        None,
        gt=0,
        description="what a participant is paid per hour, in the study's currency (prices the "
        "people's side in heart run --dry-run, and names the pay on the default consent page)",
    )
    currency: str = Field("£", min_length=1, max_length=8, description="the currency of the pay")
    platform_fee: float = Field(
        1 / 3,
        ge=0,
        le=2,
        description="the recruiting platform's service fee as a share of the pay (Prolific: a "
        "third)",
    )

    @field_validator("flow", mode="before")
    @classmethod
    def _flow_entries(cls, value: Any) -> Any:
        return flow_steps(value)

    @field_validator("flow")
    @classmethod
    def _flow_adds_up(cls, steps: list[FlowStep]) -> list[FlowStep]:
        kinds = [step.kind for step in steps]
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"name each kind of work once in the flow (it has {kinds})")
        shares = [step.share for step in steps if step.share is not None]
        if sum(shares) > 1 + 1e-9:
            raise ValueError(f"the flow's shares add up to {sum(shares):g}; make them 1 or less")
        if steps and len(shares) == len(steps) and abs(sum(shares) - 1) > 1e-9:
            raise ValueError(
                f"the flow's shares add up to {sum(shares):g}; make them 1, or leave one step "
                "without a share to take the rest"
            )
        return steps

    @property
    def steps(self) -> tuple[FlowStep, ...]:
        """The flow, or every kind of work in turn when the study names none."""
        return tuple(self.flow) or tuple(FlowStep(kind=kind) for kind in WORK_KINDS)


class ItemsSpec(Strict):
    """Which contexts the benchmark asks for a reply to: regular items chosen from ESConv, and
    adversarial ones rewritten from it."""

    esconv: str | None = Field(
        None,
        description="the ESConv corpus: a file or folder, absolute or relative to the study folder",
    )
    regular: int = Field(
        280, gt=0, description="regular items to choose, spread over problem types like the corpus"
    )
    max_per_dialogue: int = Field(2, gt=0, description="the most items taken from one conversation")
    min_context_turns: int = Field(
        3, gt=0, description="the fewest turns that must come before the reply to be written"
    )
    screener: ModelSpec | None = Field(
        None, description="an LLM that may veto couplets the rules found eligible (second pass)"
    )
    adversarial: int = Field(
        0,
        ge=0,
        le=1000,
        description="adversarial items to build by rewriting seeker turns (20 in a full study)",
    )
    adversarial_max_turns: int = Field(
        10, ge=4, le=40, description="the longest context an adversarial item keeps, in turns"
    )
    rewriter: ModelSpec = Field(
        default_factory=lambda: ModelSpec(max_tokens=600),
        description="the model that rewrites seeker turns to an escalation profile",
    )
    hostility_rater: ModelSpec | None = Field(
        None,
        description="the model that rates each rewritten seeker turn 0-10 (unset: the rewriter)",
    )
    hostility_tolerance: int = Field(
        2, ge=0, le=10, description="how far a rated seeker turn may be from its target"
    )
    rewrite_retries: int = Field(
        2, ge=0, le=10, description="times a rewrite that fails validation is asked again"
    )

    @property
    def rater(self) -> ModelSpec:
        """The hostility rater: its own model section, else the rewriter."""
        return self.hostility_rater or self.rewriter


class PreliminarySpec(Strict):
    """Below either count a system's standing is marked preliminary."""

    conversations: int = Field(
        10, ge=1, le=100_000, description="the fewest conversations behind a firm standing"
    )
    comparisons: int = Field(
        50, ge=1, le=10_000_000, description="the fewest comparisons behind a firm standing"
    )


class RatingsSpec(Strict):
    """How systems are rated and how sure the intervals are."""

    bootstrap_rounds: int = Field(
        1000, gt=0, le=100_000, description="resamples of conversations behind every interval"
    )
    level: float = Field(0.95, gt=0, lt=1, description="the confidence level of every interval")
    preliminary: PreliminarySpec = Field(
        PreliminarySpec(), description="below these counts a system's standing is preliminary"
    )
    capability_index: str | None = Field(
        None,
        min_length=1,
        description="a CSV of columns system and value (an external capability index), relative "
        "to the study folder; the report sets Elo and win rate against it",
    )
    style_control: bool = Field(
        True,
        description="also fit every board with style covariates (reply length in words, "
        "questions, markdown elements, overlap with generic warmth): a style-controlled Elo "
        "with its interval beside the plain one, the coefficients, and an ablation",
    )
    style_bootstrap: Literal["auto", "one-step", "refit"] = Field(
        "auto",
        description="how each conversation-bootstrap round of the style fit is fitted: refit "
        "(to convergence), one-step (one Newton step from the full fit; a fraction of an Elo "
        "point from refitting on large boards, and far cheaper), auto (one-step from 10 million "
        "rows × rounds, else refit)",
    )
    warmth_phrases: list[str] = Field(
        default_factory=list,
        description="the generic-warmth phrases style control measures overlap with (empty: the "
        "replies of the study's control systems, else a stock sorry-that-sounds-hard reply)",
    )
    weights: dict[str, float] | None = Field(
        None,
        description="weights of the five axes by letter (H, E, A, R, T; an axis left out weighs "
        "0), scaled to sum to 1: every board also shows the weighted composite of the per-axis "
        "Elo with its own bootstrap interval, beside the overall Elo, which stays the ranking "
        "(unset: no composite)",
    )

    @field_validator("weights", mode="before")
    @classmethod
    def _normalised_weights(cls, weights: object) -> object:
        """Known axis letters, non-negative numbers, not all zero; scaled to sum to one."""
        if weights is None:
            return None
        if not isinstance(weights, dict):
            raise ValueError(
                "expected a mapping of axis letters to weights, e.g. {E: 2, T: 2, H: 1}"
            )
        letters = [axis.value for axis in Axis]
        for key, value in weights.items():
            if key not in letters:
                raise ValueError(
                    f"unknown axis {key!r}; the axes are {', '.join(letters)} (capital letters)"
                )
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"the weight of {key} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(
                    f"the weight of {key} must be a non-negative number, got {value!r}"
                )
        total = sum(float(v) for v in weights.values())
        if total <= 0:
            raise ValueError("give at least one axis a positive weight")
        return {a: float(weights[a]) / total for a in letters if a in weights}


def _model_sections(node: object, loc: tuple[str | int, ...]) -> Iterator[
    tuple[tuple[str | int, ...], ModelSpec]
]:  # fmt: skip
    """Every model section under ``node`` (a settings object or list), with where it is."""
    if isinstance(node, ModelSpec):
        yield loc, node
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from _model_sections(getattr(node, name), (*loc, name))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _model_sections(value, (*loc, index))


class StudyConfig(Strict):
    """The whole study file."""

    name: str = Field(min_length=1, description="the study's name, shown in the report")
    seed: int = Field(
        0, description="seeds every random choice (items, pairs, judges, resamples) to repeat them"
    )
    store: str | None = Field(
        None,
        description="where the data is kept: a SQLAlchemy URL, a relative SQLite path read from "
        "the study folder (unset: heart.db, SQLite in the study folder)",
    )
    items: ItemsSpec = Field(
        ItemsSpec(), description="the contexts replies are written to: from ESConv, and rewritten"
    )
    systems: list[SystemSpec] = Field(
        min_length=1, description="the contestants whose replies are compared"
    )
    judges: list[JudgeSpec] = Field(
        default_factory=list, description="the LLM judges of the ensemble (none: people only)"
    )
    pairs: PairsSpec = Field(PairsSpec(), description="which replies to one context are compared")
    judging: JudgingSpec = Field(
        JudgingSpec(), description="how LLM judges are given pairs and held to the format"
    )
    ratings: RatingsSpec = Field(
        RatingsSpec(), description="how systems are rated and how wide the intervals are"
    )
    engine: EngineSpec = Field(
        EngineSpec(), description="budget, rate limits, timeouts and retries of model calls"
    )
    people: PeopleSpec = Field(PeopleSpec(), description="the work people do in the web app")
    strategies: StrategiesSpec = Field(
        StrategiesSpec(), description="labelling replies with the 15 support strategies"
    )
    rationales: RationalesSpec = Field(
        RationalesSpec(), description="coding rationales with the codebook's themes"
    )

    @field_validator("systems")
    @classmethod
    def _unique_systems(cls, systems: list[SystemSpec]) -> list[SystemSpec]:
        _require_unique([s.name for s in systems], "system")
        return systems

    @field_validator("judges")
    @classmethod
    def _unique_judges(cls, judges: list[JudgeSpec]) -> list[JudgeSpec]:
        _require_unique([j.name for j in judges], "judge")
        return judges

    @model_validator(mode="after")
    def _baseline_known(self) -> StudyConfig:
        if self.pairs.design is PairDesign.BASELINE:
            names = {s.name for s in self.systems}
            if self.pairs.baseline not in names:
                raise FieldProblem(
                    ("pairs", "baseline"),
                    f"pairs.baseline must name one of the systems {sorted(names)}, "
                    f"got {self.pairs.baseline!r}",
                )
        if self.pairs.design is PairDesign.SAMPLED and self.pairs.per_item is None:
            raise FieldProblem(("pairs", "design"), "pairs.design 'sampled' needs pairs.per_item")
        return self

    @model_validator(mode="after")
    def _adaptive_settings(self) -> StudyConfig:
        """Budget, stop and round size belong to the adaptive design, which needs one of the
        first two to end."""
        pairs = self.pairs
        if pairs.design is not PairDesign.ADAPTIVE:
            for name in ("budget", "stop", "round_size"):
                if getattr(pairs, name) is not None:
                    raise FieldProblem(
                        ("pairs", name),
                        f"pairs.{name} is a setting of pairs.design 'adaptive' (the design is "
                        f"'{pairs.design}'); set design: adaptive or remove it",
                    )
        elif pairs.budget is None and pairs.stop is None:
            raise FieldProblem(
                ("pairs", "design"),
                "pairs.design 'adaptive' needs pairs.budget (verdicts per judge) or pairs.stop "
                "(an interval width in Elo, or 'stable') to know when to end",
            )
        return self

    @model_validator(mode="after")
    def _human_system_is_human(self) -> StudyConfig:
        """People's replies belong to ``people.human_system``: a name the people section sets
        must be a system of kind 'human', and so must a system that holds the default name. A
        study without one still loads (it may never collect replies from people)."""
        name = self.people.human_system
        explicit = "human_system" in self.people.model_fields_set
        for index, spec in enumerate(self.systems):
            if spec.name == name and spec.kind is not SystemKind.HUMAN:
                if explicit:
                    raise FieldProblem(
                        ("people", "human_system"),
                        f"names system {name!r}, of kind '{spec.kind}', not 'human'; people's "
                        "replies need a system of kind 'human': add one and set "
                        "people.human_system to it",
                    )
                raise FieldProblem(
                    ("systems", index, "kind"),
                    f"system {name!r} has the name people's replies go to (people.human_system, "
                    f"default {name!r}) but kind '{spec.kind}'; rename the system, or add one of "
                    "kind 'human' and set people.human_system to it",
                )
        if explicit and not any(spec.name == name for spec in self.systems):
            raise FieldProblem(
                ("people", "human_system"),
                f"names no system of kind 'human' (got {name!r}; systems of kind 'human': "
                f"{self._human_systems() or 'none'}); add one, e.g. "
                f"{{name: {name}, kind: human, family: human}} under systems, or set "
                "people.human_system to one of them",
            )
        return self

    @model_validator(mode="after")
    def _replicas_run_live(self) -> StudyConfig:
        """A batch API is one server's: a model with several replicas runs live, so an
        endpoint setting that asks for its batch API is refused rather than silently ignored."""
        for loc, spec in _model_sections(self, ()):
            own = self.engine.endpoints.get(spec.endpoint)
            if len(spec.replicas) > 1 and own is not None and own.batch:
                raise FieldProblem(
                    (*loc, "base_url"),
                    f"lists {len(spec.replicas)} replicas, but engine.endpoints sets batch: true "
                    f"for {spec.endpoint}; a batch API reaches one server and replicas answer "
                    "live: set batch: false there, or give one base_url",
                )
        return self

    def _human_systems(self) -> list[str]:
        return [s.name for s in self.systems if s.kind is SystemKind.HUMAN]

    def system(self, name: str) -> SystemSpec:
        for spec in self.systems:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def human_system(self, source: str = STUDY_FILE) -> SystemSpec:
        """The system people's replies belong to; whatever collects them (the web app) cannot
        start without it."""
        name = self.people.human_system
        for spec in self.systems:
            if spec.name == name and spec.kind is SystemKind.HUMAN:
                return spec
        line = f"- {{name: {name}, kind: human, family: human}}"
        humans = self._human_systems()
        if humans:  # people.human_system left at its default, which names none of them
            raise ConfigError(
                f"{source}: people's replies go to system {name!r} (the default of "
                f"people.human_system), which the study lacks; set people.human_system to "
                f"{humans[0]}, or add this line under systems: {line}"
            )
        raise ConfigError(
            f"{source}: people's replies need a system of kind 'human', and the study has none; "
            f"add this line under systems: {line}"
        )


def _require_unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} name '{name}' appears twice; names must be unique")
        seen.add(name)


def _field_name(path: tuple[Any, ...]) -> str:
    """A setting's dotted name, a part that holds unprintable characters shown escaped."""
    return ".".join(str(p) if str(p).isprintable() else repr(p) for p in path)


def _line_index(
    node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int], source: str
) -> None:
    """Record the 1-based line of every mapping key and sequence entry under ``node``; a key
    given twice in one mapping is an error (YAML loaders would silently keep the last)."""
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                raise ConfigError(
                    f"{source} line {line}: a {kind} is used as a setting's name; "
                    "a name is plain text"
                )
            if key in seen:
                field = _field_name((*path, key))
                raise ConfigError(
                    f"{source} line {line}: '{field}' is set twice (first on line {seen[key]}); "
                    "keep one"
                )
            seen[key] = line
            out[(*path, key)] = line
            _line_index(value_node, (*path, key), out, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _line_index(child, (*path, i), out, source)


def _line_of(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def setting_lines(text: str) -> dict[tuple[Any, ...], int]:
    """The 1-based line of every setting in a study file's text, keyed by its path (as in
    ``("systems", 0, "model")``); empty when the text is not readable YAML."""
    lines: dict[tuple[Any, ...], int] = {}
    try:
        node = compose_yaml(text, STUDY_FILE)
        if node is not None:
            _line_index(node, (), lines, STUDY_FILE)
    except ConfigError:
        return {}
    return lines


def setting_line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int | None:
    """The line of the setting at ``loc``, else of its nearest parent that the file sets."""
    return _line_of(lines, loc)


def _study_text(text: str | bytes, source: str) -> str:
    """The study file's text; a byte that is not UTF-8 is refused with its line."""
    if isinstance(text, str):
        return text
    try:
        return decode_utf8(text)
    except NotUtf8 as bad:
        raise ConfigError(f"{source} line {bad.line}: {bad}; save the file as UTF-8") from None


def parse_study(text: str | bytes, source: str = STUDY_FILE) -> StudyConfig:
    """Validate a study file's text (or its bytes, which must be UTF-8); errors name the line
    and field and say what is expected."""
    text = _study_text(text, source)
    node = compose_yaml(text, source)
    if node is None or not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{source}: expected a mapping of study settings at the top level")
    lines: dict[tuple[Any, ...], int] = {}
    _line_index(node, (), lines, source)
    data = construct_yaml(node, source)
    try:
        return StudyConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            placed = err.get("ctx", {}).get("error")
            given = placed.loc if isinstance(placed, FieldProblem) else err["loc"]
            if isinstance(placed, EntryProblem):
                given = (*given, placed.index)
            loc = tuple(p for p in given if not (isinstance(p, str) and "[" in p))
            field = _field_name(loc) or "(top level)"
            line = _line_of(lines, loc)
            where = f"{source} line {line}" if line else source
            got = err.get("input")
            got_text = "" if isinstance(got, dict | list) or got is None else f", got {got!r}"
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown setting; check its spelling and indentation"
            problems.append(f"{where}: '{field}': {message}{got_text}")
        raise ConfigError("\n".join(problems)) from None


def without_store(text: str, source: str = STUDY_FILE) -> str:
    """A valid study file's text without its ``store`` setting, for a study whose data is to
    stay in its own folder: the line that sets it taken out (comments and all else kept), or,
    when it is not set on lines of its own, the file's settings written anew without it."""
    config = parse_study(text, source)
    if config.store is None:
        return text
    wanted = config.model_dump(mode="json", exclude={"store"})
    node = compose_yaml(text, source)
    assert isinstance(node, yaml.MappingNode)  # parse_study accepted it
    for key, value in node.value:
        if key.value == "store" and key.start_mark.column == 0:
            start = text.rfind("\n", 0, key.start_mark.index) + 1
            end = text.find("\n", value.end_mark.index)
            cut = text[:start] + ("" if end < 0 else text[end + 1 :])
            try:
                kept = parse_study(cut, source).model_dump(mode="json")
            except ConfigError:
                break
            if kept == {**wanted, "store": None}:
                return cut
    settings = config.model_dump(mode="json", exclude={"store"}, exclude_unset=True)
    return f"# {source} without its 'store' setting\n" + yaml.safe_dump(
        settings, sort_keys=False, allow_unicode=True
    )


ENDPOINT_SETTINGS = ("base_url", "api_key_env")
"""What a model section may say that a bundle's study file never carries into a study: where
calls go and which key goes with them."""


def _drop_endpoints(settings: Any, path: str = "") -> list[str]:
    """Take ENDPOINT_SETTINGS out of every model section in ``settings``; their paths, in order."""
    dropped: list[str] = []
    if isinstance(settings, dict):
        if "provider" in settings:
            dropped += [f"{path}{k}" for k in ENDPOINT_SETTINGS if settings.pop(k, None)]
        for key, value in settings.items():
            dropped += _drop_endpoints(value, f"{path}{key}.")
    elif isinstance(settings, list):
        for i, value in enumerate(settings):
            dropped += _drop_endpoints(value, f"{path}{i}.")
    return dropped


def bundle_study_file(text: str, source: str = STUDY_FILE) -> str:
    """A bundle's study file as the study file of a study made from it: without its ``store``
    (see `without_store`), and without any model's ``base_url`` or ``api_key_env``, so that a key
    of the importer's never goes to an address the bundle chose (with none set, a model is
    reached at its provider's own API with the provider's usual key variable)."""
    settings = parse_study(text, source).model_dump(
        mode="json", exclude={"store"}, exclude_unset=True
    )
    dropped = _drop_endpoints(settings)
    if not dropped:
        return without_store(text, source)
    return (
        f"# {source} without its store, endpoints and key variables ({', '.join(dropped)}):\n"
        "# set them again here only for endpoints you trust\n"
        + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True)
    )


def load_study(study_dir: Path) -> StudyConfig:
    """Read and validate ``study_dir/study.yaml``."""
    path = study_dir / STUDY_FILE
    if not path.is_file():
        raise ConfigError(
            f"{path}: no study file here; create one with `heart init {study_dir}` "
            "or pass --study DIR"
        )
    try:
        check_yaml_size(path.stat().st_size, str(path))
        data = path.read_bytes()
    except OSError as exc:
        problem = f"{path}: cannot be read ({exc.strerror}); check its permissions"
        raise ConfigError(problem) from None
    return parse_study(data, str(path))


def store_url(config: StudyConfig, study_dir: Path) -> str:
    """The store's SQLAlchemy URL: the configured one, else SQLite inside the study. A relative
    SQLite path is read from the study folder, as every other path of the study file is."""
    if config.store:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(config.store)
        except (ArgumentError, ValueError):
            return config.store  # the store's own check names what is wrong with it
        database = url.database
        if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
            return config.store
        try:
            if database.startswith("file:") or Path(database).is_absolute():
                return config.store
            path = (study_dir / database).resolve()
        except (OSError, ValueError):
            return config.store  # a path no file can have: the store's own check names it
        return url.set(database=str(path)).render_as_string(hide_password=False)
    return f"sqlite:///{(study_dir / DEFAULT_STORE).resolve()}"
