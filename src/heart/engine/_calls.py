"""What a stage hands the engine (calls, and the checks on their answers) and what it gets
back (a summary of what the calls did, and progress reports on the way)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from heart.config import Price, ProviderName
from heart.errors import HeartError
from heart.models import ChatModel, ChatRequest, ChatResponse, call_key
from heart.models._errors import Cause


def estimated_tokens_in(request: ChatRequest) -> int:
    """About four characters a token: good enough for limits, budgets and dry runs."""
    return sum(len(m.content) for m in request.messages) // 4 + 8


Recorder = Callable[[Session, ChatResponse | None, str | None], str | None]


@dataclass(frozen=True)
class Check:
    """A stage's test of an answer, and how often a refused answer is asked again.

    ``problem`` returns what is wrong with an answer's text (None when it is usable);
    ``message`` turns that problem into the follow-up message sent with the refused answer.
    """

    problem: Callable[[str], str | None]
    message: Callable[[str], str]
    reasks: int = 1

    @classmethod
    def parses(
        cls, parse: Callable[[str], object], refusal: type[Exception], template: str, reasks: int
    ) -> Check:
        """An answer is usable when ``parse`` accepts it; when ``parse`` raises ``refusal`` its
        message is the problem, sent back as ``template`` with the message at ``{problem}``."""

        def problem(text: str) -> str | None:
            try:
                parse(text)
            except refusal as exc:
                return str(exc)
            return None

        return cls(problem, lambda found: template.replace("{problem}", found), reasks)


@dataclass(frozen=True)
class Call:
    """One model call a stage needs, and where its result goes.

    ``on_result`` writes the stage's row in the transaction that caches the answer; it returns
    the reason when the stage could not use the answer (an empty reply, an invalid verdict).
    An answer is cached only when the stage used it, so a refused one is asked for again next
    run. With a ``check``, a refused answer is first asked again within the run.
    """

    model: ChatModel
    request: ChatRequest
    group: str
    on_result: Recorder
    price: Price = field(default_factory=Price)
    check: Check | None = None

    @cached_property
    def key(self) -> str:
        return call_key(self.model, self.request)

    @property
    def endpoint(self) -> tuple[ProviderName, str]:
        """The (provider, endpoint) whose limits this call passes."""
        return (self.model.provider, self.model.endpoint)

    @cached_property
    def estimated_tokens_in(self) -> int:
        return estimated_tokens_in(self.request)

    def usable(self, response: ChatResponse) -> bool:
        """Whether the stage's check (if any) accepts ``response``."""
        return self.check is None or self.check.problem(response.text) is None


@dataclass(frozen=True)
class CallFailure:
    """A call that failed for good: why (its cause), the stored reason, and where it went."""

    cause: Cause
    reason: str
    provider: str
    endpoint: str
    model: str


@dataclass(frozen=True)
class ReplicaLoad:
    """What one replica of a model did in a run: the calls it ``answered`` and how often it
    was ``rested`` after failing. Information only: answers are the model's, whichever
    replica gave them."""

    model: str
    replica: str
    answered: int = 0
    rested: int = 0


def replica_labels(urls: Sequence[str]) -> list[str]:
    """Short names that tell replicas apart: ``:8001`` when only their ports differ, else
    ``host:port``, else the whole URL."""
    parts = [urlsplit(url) for url in urls]
    if len({p.hostname for p in parts}) == 1 and len({p.port for p in parts}) == len(parts):
        return [f":{p.port or ''}" for p in parts]
    if len({p.netloc for p in parts}) == len(parts):
        return [p.netloc for p in parts]
    return list(urls)


def replica_lines(loads: Sequence[ReplicaLoad]) -> list[str]:
    """One line per model served by replicas: ``judge-x: 412 on :8001, 398 on :8002, 12 on
    :8003 (rested 2x)``."""
    models: dict[str, list[ReplicaLoad]] = {}
    for load in loads:
        models.setdefault(load.model, []).append(load)
    lines = []
    for model, its in models.items():
        labels = replica_labels([load.replica for load in its])
        shown = [
            f"{load.answered} on {label}" + (f" (rested {load.rested}x)" if load.rested else "")
            for load, label in zip(its, labels, strict=True)
        ]
        lines.append(f"{model}: {', '.join(shown)}")
    return lines


@dataclass
class RunSummary:
    """What a stage's calls did. ``failed`` calls are stored with their reason (never counted)
    and asked again by the next run of the stage, as are the ``not_started`` ones the budget
    stopped."""

    calls: int = 0
    cached: int = 0
    failed: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    not_started: int = 0
    reasks: int = 0
    failures: list[CallFailure] = field(default_factory=list)
    replicas: list[ReplicaLoad] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """The failed calls' reasons, in the order they were stored."""
        return [f.reason for f in self.failures]

    @property
    def complete(self) -> bool:
        """Every call has a usable answer: none failed and the budget stopped none."""
        return not self.failed and not self.not_started

    def by_cause(self) -> Counter[Cause]:
        """Failed calls per cause, most common first when iterated with ``most_common``."""
        return Counter(f.cause for f in self.failures)

    def add(self, other: RunSummary) -> None:
        """Count ``other``'s calls in with these (a stage that runs the engine several times)."""
        for name in ("calls", "cached", "failed", "retries", "tokens_in", "tokens_out",
                     "not_started", "reasks"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost_usd += other.cost_usd
        self.failures.extend(other.failures)
        self.replicas = added(self.replicas, other.replicas)


def added(loads: Sequence[ReplicaLoad], more: Sequence[ReplicaLoad]) -> list[ReplicaLoad]:
    """``loads`` and ``more`` together, one per model and replica, in the order first seen."""
    total: dict[tuple[str, str], ReplicaLoad] = {}
    for load in (*loads, *more):
        key = (load.model, load.replica)
        old = total.get(key, ReplicaLoad(*key))
        total[key] = ReplicaLoad(*key, old.answered + load.answered, old.rested + load.rested)
    return list(total.values())


class CallsFailed(HeartError):
    """A stage that keeps nothing unless every call is answered stopped; ``calls`` says what
    its calls did (failures by cause included), and the message what was left unchanged."""

    def __init__(self, message: str, calls: RunSummary) -> None:
        super().__init__(message)
        self.calls = calls


@dataclass(frozen=True)
class Progress:
    """Where a stage's calls stand: ``done`` of ``total`` recorded, ``fresh`` of them answered
    by a model in this run (the rest from the cache), and what those cost; ``batches_open``
    provider batches the run is waiting on; ``replicas`` what each replica of a model served by
    several did so far. The engine reports on the thread that runs it, once at the start, after
    every stored batch of results, at each check on open provider batches, and once
    ``finished``."""

    stage: str
    done: int
    total: int
    fresh: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    finished: bool = False
    batches_open: int = 0
    replicas: tuple[ReplicaLoad, ...] = ()


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class PlannedModel:
    """What a dry run expects to spend on one model at one endpoint; ``estimated`` of the new
    calls ask about work not done yet (their prompts, and so tokens in, are estimates);
    ``batch``: priced at the batch price, as the calls go through the provider's batch API;
    ``replicas``: the URLs of the servers the calls are spread over, when the model's base_url
    lists several (the first is ``endpoint``)."""

    provider: str
    endpoint: str
    model: str
    calls: int
    cached: int
    tokens_in: int
    max_tokens_out: int
    max_cost_usd: float
    estimated: int = 0
    batch: bool = False
    replicas: tuple[str, ...] = ()
