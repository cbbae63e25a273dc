"""Is a study ready to run? The study file, every path it names, every API key, the store's
schema and (when asked) one small call to every model: each problem with where it is and its
fix, found before any stage spends time or money.

    from heart.check import check_study
    report = check_study("my-study", probe=True)
    for problem in report.problems:
        print(problem)
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from heart.capability import index_path
from heart.config import (
    STUDY_FILE,
    ModelSpec,
    StudyConfig,
    load_study,
    setting_line,
    setting_lines,
    store_url,
)
from heart.errors import ConfigError, HeartError
from heart.models._errors import FIXES, Cause, ModelCallError
from heart.models._keys import key_variable, missing_key
from heart.types import SystemKind

if TYPE_CHECKING:
    from heart.models import ChatRequest
    from heart.study import Study

SDKS = {"openai": "openai", "anthropic": "anthropic"}
SDK_HINTS = {
    "openai": "pip install 'heart-bench[openai]'",
    "anthropic": "pip install 'heart-bench[anthropic]'",
}
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
PROBE_TOKENS = 16


@dataclass(frozen=True)
class Problem:
    """One thing that stops the study from running: where it is, what is wrong, the fix."""

    where: str
    problem: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}" + (f"; {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class ModelUse:
    """A model section the study calls, who calls it, and how (streamed, or asked for JSON)."""

    role: str  # system, judge, screener, rewriter, hostility rater, classifier, coder
    name: str
    spec: ModelSpec
    loc: tuple[str | int, ...]  # where the section is in the study file

    @property
    def who(self) -> str:
        return f"{self.role} {self.name}" if self.name else self.role

    @property
    def stream(self) -> bool:
        return self.role == "system"  # replies are streamed to time their first token

    @property
    def structured(self) -> bool:
        return self.role != "system"  # every other role asks for JSON under a schema


@dataclass(frozen=True)
class Probe:
    """One minimal call to a model at its endpoint: who uses it, and what came back."""

    users: tuple[str, ...]
    provider: str
    endpoint: str
    model: str
    seconds: float
    cause: Cause | None = None  # None: it answered
    reason: str = ""

    @property
    def answered(self) -> bool:
        return self.cause is None


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_study` found: the problems (none: ready), notes that need no action,
    what was checked, and the probes made (with ``probe``)."""

    study: Path
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    valid: bool = True  # the study file passed validation (else ``problems`` say why)

    @property
    def ok(self) -> bool:
        return not self.problems


class CheckFailed(HeartError):
    """A study that is not ready to run; ``problems`` holds one line each."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems


def models_in_use(config: StudyConfig) -> list[ModelUse]:
    """Every model section a `heart run` of this study would call."""
    uses = [
        ModelUse("system", s.name, s.model, ("systems", i, "model"))
        for i, s in enumerate(config.systems)
        if s.kind is SystemKind.MODEL and s.model is not None
    ]
    uses += [
        ModelUse("judge", j.name, j.model, ("judges", i, "model"))
        for i, j in enumerate(config.judges)
    ]
    items = config.items
    if items.screener is not None:
        uses.append(ModelUse("screener", "", items.screener, ("items", "screener")))
    if items.adversarial:
        uses.append(ModelUse("rewriter", "", items.rewriter, ("items", "rewriter")))
        if items.hostility_rater is not None:
            uses.append(
                ModelUse("hostility rater", "", items.hostility_rater, ("items", "hostility_rater"))
            )
    if config.strategies.classifier is not None:
        uses.append(
            ModelUse("classifier", "", config.strategies.classifier, ("strategies", "classifier"))
        )
    if config.rationales.coder is not None:
        uses.append(ModelUse("coder", "", config.rationales.coder, ("rationales", "coder")))
    return uses


class _Where:
    """Places in the study file: ``study.yaml line 12: 'items.esconv'``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        self.lines = setting_lines(text)

    def __call__(self, loc: tuple[str | int, ...]) -> str:
        line = setting_line(self.lines, loc)
        place = f"{self.path} line {line}" if line else str(self.path)
        return f"{place}: '{'.'.join(map(str, loc))}'"


def _config_problems(error: ConfigError) -> list[Problem]:
    """A study file's validation errors, one problem per line (each names its line)."""
    problems = []
    for line in str(error).splitlines():
        where, _, what = line.partition(": ")
        problems.append(Problem(where, what) if what else Problem(STUDY_FILE, where))
    return problems


def _sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite store URL (None for other stores, in-memory ones and a
    setting that is no URL at all, which the store's own check names)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _unreachable(path: Path) -> str | None:
    """Why the system cannot look ``path`` up at all (a name too long, a NUL in it, no
    permission), or None when it can say whether the path exists."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"{path} cannot be looked up ({exc.strerror})"
    except ValueError as exc:
        return f"{str(path)!r} cannot be looked up ({exc})"
    return None


def _path_problems(
    config: StudyConfig, root: Path, where: _Where, corpus_needed: bool
) -> tuple[list[Problem], list[str]]:
    """Every file or folder the study names must exist (the corpus only while a stage still
    needs it: no items stored yet, or adversarial items still to build); also returns the
    paths found."""
    problems: list[Problem] = []
    found: list[str] = []
    esconv = config.items.esconv
    corpus = "set it to an ESConv file or folder (relative to the study folder)"
    if esconv is None and corpus_needed:
        problems.append(
            Problem(
                where(("items",)), "'esconv' is not set and no items are stored to run on", corpus
            )
        )
    elif esconv is not None:
        path = Path(esconv) if Path(esconv).is_absolute() else root / esconv
        unreachable = _unreachable(path)
        if not unreachable and path.exists():
            found.append(f"corpus {path}")
        elif corpus_needed:
            missing = unreachable or f"{path} does not exist"
            problems.append(Problem(where(("items", "esconv")), missing, corpus))
    index = index_path(root, config.ratings.capability_index)
    unreachable = _unreachable(index) if index is not None else None
    if index is not None and not unreachable and index.is_file():
        found.append(f"capability index {index}")
    elif index is not None:
        problems.append(
            Problem(
                where(("ratings", "capability_index")),
                unreachable or f"{index} is not a file",
                "set it to a CSV of columns system and value, or remove it",
            )
        )
    database = _sqlite_file(store_url(config, root))
    if database is not None and _unreachable(database):
        pass  # the store's own check names it
    elif database is not None and not database.parent.is_dir():
        problems.append(
            Problem(
                where(("store",)),
                f"the folder {database.parent} of the SQLite store does not exist",
                "create it, or change store",
            )
        )
    return problems, found


def _version_problems(config: StudyConfig, where: _Where) -> list[Problem]:
    """The prompt, taxonomy and codebook versions the study names must ship with heart."""
    from heart.judging._llm import JUDGE_PROMPT
    from heart.prompts import load_prompt
    from heart.rationales._codebook import load_codebook
    from heart.strategies._taxonomy import load_taxonomy

    problems = []
    for loc, load in (
        (("judging", "prompt_version"), lambda v: load_prompt(JUDGE_PROMPT, v)),
        (("strategies", "taxonomy"), load_taxonomy),
        (("rationales", "codebook"), load_codebook),
    ):
        section, name = loc
        try:
            load(getattr(getattr(config, section), name))
        except ConfigError as exc:
            problems.append(Problem(where(loc), str(exc), "name a version this release ships"))
    return problems


def _model_problems(uses: list[ModelUse], where: _Where) -> list[Problem]:
    """Every API key set (one problem per missing variable, naming who needs it), every SDK
    and the embedded model installed."""
    problems: list[Problem] = []
    needs: dict[str, list[ModelUse]] = {}
    for use in uses:
        variable = missing_key(use.spec)
        if variable is not None:
            needs.setdefault(variable, []).append(use)
    for variable, users in needs.items():
        first = users[0]
        loc = (*first.loc, "api_key_env") if first.spec.api_key_env else first.loc
        problems.append(
            Problem(
                where(loc),
                f"the environment variable {variable} is not set (needed by "
                f"{_names(u.who for u in users)})",
                f"export {variable}=<your key> before running heart; keys never go in {STUDY_FILE}",
            )
        )
    for provider, module in SDKS.items():
        users = [u for u in uses if u.spec.provider == provider]
        if users and importlib.util.find_spec(module) is None:
            problems.append(
                Problem(
                    where(users[0].loc),
                    f"the {module} SDK is not installed (needed by {_names(u.who for u in users)})",
                    SDK_HINTS[provider],
                )
            )
    embedded = [u for u in uses if u.spec.provider == "embedded"]
    if embedded:
        problem = _embedded_problem()
        if problem is not None:
            who = _names(u.who for u in embedded)
            problems.append(Problem(where(embedded[0].loc), f"{problem} (needed by {who})"))
    return problems


def _embedded_problem() -> str | None:
    """Why the embedded model cannot run here, with the fix; None when it can."""
    from heart.models.embedded import INSTALL_HINT, embedded_model_path

    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama-cpp-python is not installed; {INSTALL_HINT}"
    try:
        embedded_model_path()
    except HeartError as exc:
        return str(exc)
    return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _names(names: Iterable[str]) -> str:
    listed = list(dict.fromkeys(names))
    shown = ", ".join(listed[:4])
    return shown + (f" and {len(listed) - 4} more" if len(listed) > 4 else "")


@dataclass
class _StoreFindings:
    """What reading the store found, and whether a stage still needs the corpus (no items
    stored yet, or adversarial items still to build)."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    corpus_needed: bool = True


def _store_findings(config: StudyConfig, root: Path) -> _StoreFindings:
    """The store read as it is: never created, never migrated."""
    from heart.items import count_items, count_rewrites
    from heart.store import open_store, schema_state

    url = store_url(config, root)
    try:
        where = f"store {make_url(url).render_as_string(hide_password=True)}"
    except ArgumentError:
        fix = (
            "give a SQLAlchemy URL such as sqlite:///heart.db or postgresql+psycopg://user@host/db"
        )
        return _StoreFindings([Problem(f"store {url!r}", "is not a database URL", fix)])
    database = _sqlite_file(url)
    unreachable = _unreachable(database) if database is not None else None
    if unreachable:
        return _StoreFindings([Problem(where, unreachable, "check the store setting")])
    if database is not None and not database.exists():
        return _StoreFindings(notes=[f"{where} does not exist yet; the first command creates it"])
    try:
        store = open_store(url, migrate=False)
    except HeartError as exc:
        return _StoreFindings([Problem(where, str(exc), "check the store setting")])
    try:
        state = schema_state(store.engine)
        if state.revision is None and state.tables:
            problem = f"holds tables ({_names(sorted(state.tables))}) but no heart schema"
            fix = "point store at this study's database or an empty one"
            return _StoreFindings([Problem(where, problem, fix)])
        if state.revision is None:
            return _StoreFindings(notes=[f"{where} is empty; the first command writes its schema"])
        if state.revision not in state.known:
            problem = (
                f"has schema revision {state.revision}, which this heart does not know (its "
                f"newest is {state.head}): a newer heart-bench wrote it"
            )
            fix = "upgrade heart-bench, or point store at this study's own database"
            return _StoreFindings([Problem(where, problem, fix)])
        found = _StoreFindings()
        if not state.current:
            found.notes.append(
                f"{where} has schema {state.revision}; the next command upgrades it to "
                f"{state.head} (back it up first if an older heart must still read it)"
            )
        stored = sum(count_items(store).values())
        due = config.items.adversarial > 0 and not count_rewrites(store)
        found.checked.append(f"{where} at schema {state.revision}, {_count(stored, 'item')}")
        found.corpus_needed = not stored or due
        return found
    except SQLAlchemyError as exc:
        said = " ".join(str(getattr(exc, "orig", None) or exc).split())
        problem = f"cannot be read: {said}"
        return _StoreFindings([Problem(where, problem, "check the store setting")])
    finally:
        store.close()


def probe_request(use: ModelUse) -> ChatRequest:
    """The smallest request that calls ``use``'s model the way its stage does."""
    from heart.models import ChatRequest, Message

    question = 'Answer with the JSON {"ok": true}.' if use.structured else "Say OK."
    return ChatRequest(
        messages=(Message(role="user", content=question),),
        max_tokens=PROBE_TOKENS,
        json_schema=PROBE_SCHEMA if use.structured else None,
        stream=use.stream,
    )


async def _probe(uses: list[ModelUse], timeout_s: float) -> Probe:
    from heart.models import make_chat_model

    use = uses[0]
    model = make_chat_model(use.spec)
    start = time.perf_counter()
    cause: Cause | None = None
    reason = ""
    try:
        async with asyncio.timeout(timeout_s):
            await model.complete(probe_request(use))
    except TimeoutError:
        cause, reason = Cause.TIMEOUT, f"no answer within {timeout_s:g} s"
    except ModelCallError as exc:
        cause, reason = exc.cause, str(exc)
    except Exception as exc:  # a provider bug is a finding, not a crash of the check
        cause, reason = Cause.OTHER, f"{type(exc).__name__}: {exc}"
    finally:
        await model.aclose()
    return Probe(
        tuple(u.who for u in uses),
        model.provider,
        model.endpoint,
        model.model,
        time.perf_counter() - start,
        cause,
        reason,
    )


def probe_models(config: StudyConfig, uses: list[ModelUse]) -> list[Probe]:
    """One minimal call per model, endpoint (each replica of a model that lists several) and
    way of asking (streamed, or for JSON), all at once, each within its endpoint's timeout and
    without retries."""
    groups: dict[tuple[str, str, str, bool, bool], list[ModelUse]] = {}
    for each in uses:
        replicas = each.spec.replicas
        for url in replicas:
            use = replace(each, spec=each.spec.at(url)) if len(replicas) > 1 else each
            spec = use.spec
            key = (spec.provider, spec.endpoint, spec.model, use.stream, use.structured)
            groups.setdefault(key, []).append(use)

    def timeout(use: ModelUse) -> float:
        return config.engine.settings(use.spec.provider, use.spec.endpoint).timeout_s

    async def all_probes() -> list[Probe]:
        return await asyncio.gather(*(_probe(g, timeout(g[0])) for g in groups.values()))

    return asyncio.run(all_probes())


def _probe_problem(probe: Probe) -> Problem:
    where = f"{_names(probe.users)} ({probe.provider} {probe.model} at {probe.endpoint})"
    assert probe.cause is not None
    return Problem(where, f"the probe failed ({probe.cause}): {probe.reason}", FIXES[probe.cause])


def check_config(config: StudyConfig, root: Path, *, corpus_needed: bool = True) -> list[Problem]:
    """The problems of a valid study file: missing paths, unknown versions, unset keys,
    missing SDKs or embedded model."""
    where = _Where(root / STUDY_FILE)
    problems, _ = _path_problems(config, root, where, corpus_needed)
    problems += _version_problems(config, where)
    return problems + _model_problems(models_in_use(config), where)


def check_study(root: str | Path, *, probe: bool = False) -> CheckReport:
    """Check the study at ``root`` without changing anything (the store is neither created nor
    migrated); with ``probe``, call every model once (a few tokens each)."""
    root = Path(root)
    try:
        config = load_study(root)
    except ConfigError as exc:
        return CheckReport(root, _config_problems(exc), valid=False)
    where = _Where(root / STUDY_FILE)
    counts = f"{_count(len(config.systems), 'system')}, {_count(len(config.judges), 'judge')}"
    report = CheckReport(root, checked=[f"{root / STUDY_FILE} valid ({counts})"])
    store = _store_findings(config, root)
    paths, found = _path_problems(config, root, where, store.corpus_needed)
    uses = models_in_use(config)
    report.problems.extend(
        store.problems + paths + _version_problems(config, where) + _model_problems(uses, where)
    )
    report.notes.extend(store.notes)
    report.checked.extend(store.checked + found)
    models = {(u.spec.provider, u.spec.endpoint, u.spec.model) for u in uses}
    endpoints = {url for u in uses for url in u.spec.replicas}
    keys = {v for v in (key_variable(u.spec) for u in uses) if v is not None}
    report.checked.append(
        f"{_count(len(models), 'model')} at {_count(len(endpoints), 'endpoint')}, "
        f"{_count(len(keys), 'API key variable')} checked"
    )
    if probe:
        unavailable = _unavailable_providers(uses)
        ready = [
            u for u in uses if missing_key(u.spec) is None and u.spec.provider not in unavailable
        ]
        report.probes.extend(probe_models(config, ready))
        report.problems.extend(_probe_problem(p) for p in report.probes if not p.answered)
    return report


def _unavailable_providers(uses: list[ModelUse]) -> set[str]:
    """Providers whose SDK (or embedded model) is missing: a probe would only repeat that."""
    missing = {p for p, module in SDKS.items() if importlib.util.find_spec(module) is None}
    if any(u.spec.provider == "embedded" for u in uses) and _embedded_problem() is not None:
        missing.add("embedded")
    return missing


def require_ready(study: Study) -> None:
    """Raise CheckFailed when an open study is not ready for `heart run`."""
    from heart.items import count_items, count_rewrites

    config = study.config
    stored = sum(count_items(study.store).values())
    due = config.items.adversarial > 0 and not count_rewrites(study.store)
    problems = check_config(config, study.root, corpus_needed=not stored or due)
    if problems:
        raise CheckFailed(problems)


__all__ = [
    "CheckFailed",
    "CheckReport",
    "ModelUse",
    "Probe",
    "Problem",
    "check_config",
    "check_study",
    "models_in_use",
    "probe_models",
    "require_ready",
]
