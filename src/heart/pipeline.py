"""The stages as a library: every command of `heart` is one of these calls on a :class:`Study`.

    from heart import open_study, pipeline
    study = open_study("demo-study")
    print(pipeline.run(study).board)

Each stage reads what earlier stages stored and skips finished work; long stages report to an
optional ``progress`` callback and return a small summary. Nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sqlalchemy import func, select

from heart.capability import CapabilityIndex, index_path, read_capability_index
from heart.config import STUDY_FILE, ModelSpec, PairDesign, bundle_study_file
from heart.engine import Call, CallsFailed, PlannedModel, ProgressFn, RunSummary, plan_calls
from heart.errors import HeartError
from heart.generate import GenerationSummary
from heart.generate import generate as _generate
from heart.items import Selection, count_items, count_rewrites
from heart.items.adversarial import AdversarialSummary, plan_adversarial
from heart.items.adversarial import build_adversarial as _build_adversarial
from heart.judging import (
    JudgingPlan,
    JudgingSummary,
    build_pairs,
    judge_in_rounds,
    judge_pairs,
    plan_judging,
)
from heart.provenance import study_provenance
from heart.rationales.code import RationaleCodingSummary
from heart.rationales.code import code_rationales as _code_rationales
from heart.rationales.llm_coder import plan_llm_coding
from heart.release import (
    ImportSummary,
    export_bundle,
    import_bundle,
    import_table,
    read_bundle,
    store_bundle,
)
from heart.store import JudgeRow, JudgmentRow, SystemRow, TaskRow
from heart.strategies.classify import ClassificationSummary, classify, plan_classification
from heart.study import Study, open_study, staged_study
from heart.types import SystemKind

if TYPE_CHECKING:  # the analyses and the report load only for the commands that need them
    from heart.analyses import (
        AgreementReport,
        Board,
        Boards,
        CapabilityReport,
        Comparisons,
        FactorStructure,
        GateVerdict,
        JudgeAudit,
        JudgeVsPeople,
        LatencyReport,
        Leaderboard,
        RationaleReport,
        Source,
        StrategyReport,
        StudyPlan,
    )
    from heart.frames import Rows
    from heart.people import PeoplePlan
    from heart.report import StudyFacts
    from heart.verdicts import VerdictTable

Stage = Literal["adversarial", "generate", "judge", "strategies", "rationales"]
RunStage = Literal["items", "adversarial", "generate", "judge", "strategies", "rationales"]


@dataclass(frozen=True)
class ItemsSummary:
    """The items stage: the items stored per subset, (when it ran) what the screen chose, and
    the LLM screener's calls when one is set (when some got no answer, nothing was chosen)."""

    stored: dict[str, int]
    selection: Selection | None = None  # None when the stage was skipped or the screener failed
    conversations: int = 0
    duplicates: int = 0
    changed: bool = False
    seconds: float = 0.0
    model_calls: RunSummary | None = None  # the LLM screener's, when one is set

    @property
    def complete(self) -> bool:
        return self.model_calls is None or self.model_calls.complete


@dataclass(frozen=True)
class ReportSummary:
    """The report stage: what it states, the warning a reader must see first, and the file."""

    facts: StudyFacts
    warning: str | None
    path: Path


@dataclass(frozen=True)
class StudyRun:
    """Every stage of one `run`, and how long it took.

    A run stops after the first stage whose calls did not all get an answer (failed for good,
    or not started for the budget): ``stopped`` names it, and the stages after it are None
    (not run), so judging never starts while replies are missing."""

    items: ItemsSummary
    seconds: float
    adversarial: AdversarialSummary | None = None  # None when none are asked for or are built
    generation: GenerationSummary | None = None
    judging: JudgingSummary | None = None
    strategies: ClassificationSummary | None = None  # None when no classifier is set
    rationales: RationaleCodingSummary | None = None  # the rule coder always, the LLM coder if set
    report: ReportSummary | None = None
    stopped: RunStage | None = None

    @property
    def board(self) -> Leaderboard | None:
        """The main leaderboard (LLM judges on all items when there are any)."""
        return self.report.facts.board if self.report is not None else None


@dataclass(frozen=True)
class StagePlan:
    """What a stage would call, per endpoint and model, without calling anything."""

    stage: Stage
    models: list[PlannedModel]
    fixed: int = 0  # fixed replies generation would store
    judging: JudgingPlan | None = None

    @property
    def max_cost_usd(self) -> float:
        return sum(m.max_cost_usd for m in self.models)


@dataclass(frozen=True)
class DryRun:
    """What each stage would call, and what was assumed about work not done yet."""

    stages: list[StagePlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    people: PeoplePlan | None = None  # the people's side, for a study with a human system

    @property
    def max_cost_usd(self) -> float:
        return sum(s.max_cost_usd for s in self.stages)

    @property
    def estimated(self) -> int:
        """New calls, over every stage, that read projected work."""
        return sum(m.estimated for s in self.stages for m in s.models)


def build_items(
    study: Study, esconv: Path | None = None, progress: ProgressFn | None = None
) -> ItemsSummary:
    """Screen every couplet of the corpus (``esconv`` or ``items.esconv``) and store the regular
    items; ``progress`` follows the optional LLM screener's calls."""
    from heart.corpus import load_corpus
    from heart.items import save_selection, select_study_items

    start = time.perf_counter()
    corpus = load_corpus(study.esconv_path(esconv))
    spec = study.config.items
    screen = None
    if spec.screener is not None:
        from heart.items.llm_screen import llm_second_pass

        screen = llm_second_pass(study, spec.screener, progress)
    try:
        selection = select_study_items(corpus.conversations, spec, study.config.seed, screen)
    except CallsFailed as stopped:  # the stored items stay as they were
        return ItemsSummary(
            stored=count_items(study.store),
            conversations=len(corpus.conversations),
            seconds=time.perf_counter() - start,
            model_calls=stopped.calls,
        )
    changed = save_selection(study.store, corpus, selection)
    return ItemsSummary(
        stored=count_items(study.store),
        selection=selection,
        conversations=len(corpus.conversations),
        duplicates=corpus.duplicates,
        changed=changed,
        seconds=time.perf_counter() - start,
        model_calls=screen.calls if screen is not None else None,
    )


def build_adversarial(study: Study, progress: ProgressFn | None = None) -> AdversarialSummary:
    """Rewrite ``items.adversarial`` conversations to their escalation profiles, rate and check
    every rewrite, and store the kept ones as adversarial items (replacing earlier ones)."""
    return _build_adversarial(study, progress)


def _adversarial_due(study: Study) -> bool:
    """Adversarial items are asked for and the stage has not settled them yet."""
    return study.config.items.adversarial > 0 and not count_rewrites(study.store)


def generate(study: Study, progress: ProgressFn | None = None) -> GenerationSummary:
    """Every missing or failed completion of every non-human system."""
    return _generate(study, progress)


def judge(study: Study, progress: ProgressFn | None = None) -> JudgingSummary:
    """Add the pairs the design asks for, then every missing LLM verdict (the adaptive design:
    in rounds, until its budget or stopping rule)."""
    if study.config.pairs.design is PairDesign.ADAPTIVE:
        return judge_in_rounds(study, progress)
    added = build_pairs(study.store, study.config.pairs, study.config.seed)
    return replace(judge_pairs(study, progress), new_pairs=added)


def classify_strategies(
    study: Study, progress: ProgressFn | None = None, classifier: ModelSpec | None = None
) -> ClassificationSummary:
    """Label the sampled completions (``strategies.completions``, or all) with the 15 support
    strategies: ``classifier``, else ``strategies.classifier``, else the embedded model."""
    return classify(study, progress, classifier)


def code_rationales(study: Study, progress: ProgressFn | None = None) -> RationaleCodingSummary:
    """Code every counted rationale not coded yet with the codebook's themes: the rule-based
    coder (no model calls), then the LLM coder when ``rationales.coder`` is set."""
    return _code_rationales(study, progress)


# --- reading: results as data, nothing written -----------------------------------------------


def audit(study: Study) -> Rows[JudgeAudit]:
    """Per judge and rater, LLM or person, made here or imported: flip rate, position, length,
    control and own-family shares (``.to_pandas()``: one row per judge)."""
    from heart.analyses import audit_every_judge
    from heart.frames import Rows

    return Rows(audit_every_judge(study.store, study.config.ratings.level))


def judges_vs_people(study: Study) -> list[JudgeVsPeople]:
    """Each LLM judge (and the judges together) against people, system by system, on the
    item-pairs both judged: both Elo, the gap with its paired conversation-bootstrap interval,
    Kendall τ between the orders (``.sentence()`` says it in words); empty without an overlap."""
    from heart.analyses import judges_against_people, load_comparisons

    ratings = study.config.ratings
    return judges_against_people(
        load_comparisons(study.store, source="all"), rounds=ratings.bootstrap_rounds,
        seed=study.config.seed, level=ratings.level, rule=study.evidence_rule(),
    )  # fmt: skip


def plan(
    study: Study,
    *,
    half_width: float | None = None,
    gap: float | None = None,
    systems: int | None = None,
    agreement: float = 0.8,
    spacing: float | None = None,
    studies: int = 200,
) -> StudyPlan:
    """The study's size before paying for it (``heart plan``): for every system's interval
    within ±``half_width`` Elo, or 80% power to tell apart two systems ``gap`` Elo apart, the
    conversations and items, LLM-judge and people's verdicts (with and without the judges'
    help), dollars of judging, rater hours and pay. Simulated from the study's own verdicts (a
    pilot); with none yet, or with ``systems`` given, from assumptions: ``systems`` systems
    (default: the study file's), ``spacing`` Elo apart in a row (default: ``gap``, else 50),
    the judges agreeing with people on ``agreement`` of the pairs. A HeartError says what is
    missing."""
    from heart.analyses import (
        PlanTarget,
        Prices,
        assumed_pilot,
        holdings,
        load_comparisons,
        plan_study,
    )
    from heart.people import task_time

    try:
        target = PlanTarget(half_width=half_width, gap=gap, level=study.config.ratings.level)
    except ValueError as error:
        raise HeartError(f"heart plan: {error} (give --half-width W or --gap G)") from None
    pilot = load_comparisons(study.store, source="all")
    have_pilot = len(pilot) > 0 and systems is None
    if have_pilot and len(pilot.systems) < 2:
        raise HeartError(
            "heart plan: the study's verdicts compare fewer than two systems; give --systems "
            "to plan from assumptions"
        )
    if not have_pilot:
        count = systems if systems is not None else len(study.config.systems)
        if count < 2:
            raise HeartError(
                "heart plan: no verdicts yet and fewer than two systems: give --systems K"
            )
        if not 0.5 <= agreement <= 1.0:
            raise HeartError(f"--agreement must lie between 0.5 and 1, got {agreement}")
        apart = spacing if spacing is not None else gap if gap is not None else 50.0
        comparisons = assumed_pilot(count, apart, agreement, seed=study.config.seed)
    else:
        comparisons = pilot
    with study.store.session() as s:
        cost = s.execute(
            select(func.avg(JudgmentRow.cost_usd))
            .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
            .where(JudgeRow.source == "llm", JudgmentRow.cost_usd.is_not(None))
        ).scalar()
    spec = study.config.people
    timing = task_time(study.store, spec)
    prices = Prices(
        usd_per_judge_verdict=float("nan") if cost is None else float(cost),
        seconds_per_task=timing.seconds, seconds_measured=timing.measured,
        pay_per_hour=spec.pay_per_hour, currency=spec.currency,
    )  # fmt: skip
    return plan_study(
        comparisons, target, prices, seed=study.config.seed, studies=studies,
        basis="pilot" if have_pilot else "assumptions", have=holdings(pilot),
    )  # fmt: skip


def verdicts(study: Study) -> VerdictTable:
    """Every valid verdict, one row each (the columns of ``heart.verdicts.VERDICT_COLUMNS``),
    counted or not; ``.to_pandas()`` and ``.to_arrow()`` for notebooks."""
    from heart.verdicts import verdict_rows

    return verdict_rows(study.store)


def boards(study: Study) -> Boards:
    """Every board the verdicts support, the main one first (as the report shows them):
    per judge source and subset; ``.to_pandas()`` stacks their rows."""
    from heart.analyses import build_boards, load_comparisons

    ratings = study.config.ratings
    comparisons = load_comparisons(study.store, source="all")
    return build_boards(
        comparisons,
        rounds=ratings.bootstrap_rounds,
        seed=study.config.seed,
        level=ratings.level,
        rule=study.evidence_rule(),
        style=study.style_inputs(comparisons.completions),
        weights=ratings.weights,
    )


JUDGE_SOURCES = ("llm", "human", "all")


def leaderboard(
    study: Study, judges: Source | Literal["assisted"] | Sequence[str] = "llm", subset: str = "all"
) -> Board:
    """One board: the verdicts of ``judges`` (``llm`` judges, ``human`` raters, ``all``,
    ``assisted``: people's with the LLM judges' help, or a list of judge and rater names) on
    ``subset`` items (``all``, ``regular``,
    ``adversarial``), fitted as the report fits its boards. ``.to_pandas()`` gives one row per
    system; ``.leaderboard`` the standings, head-to-head shares, differences and ablations.

    A HeartError names what the study has when no board can be fitted (no verdicts, or fewer
    than two systems compared)."""
    from heart.analyses import build_board, load_comparisons

    comparisons = load_comparisons(study.store, source="all")
    if judges == "assisted":
        return _assisted_board(study, comparisons, subset)
    if isinstance(judges, str):
        if judges not in JUDGE_SOURCES:
            raise HeartError(
                f"judges must be llm, human, all, assisted or a list of judge names; got {judges!r}"
            )
        chosen = comparisons.by_source(judges)  # type: ignore[arg-type]
        source: Source = judges  # type: ignore[assignment]
    else:
        names = set(judges)
        unknown = sorted(names - set(comparisons.judges))
        if unknown:
            have = ", ".join(comparisons.judges) or "none"
            raise HeartError(
                f"no counted verdicts by {', '.join(unknown)}; the judges with some are: {have}"
            )
        import numpy as np

        picked = np.asarray([j in names for j in comparisons.judges] + [False], dtype=bool)
        chosen = comparisons.select(picked[comparisons.judge])
        sources = set(chosen.judge_sources)
        source = sources.pop() if len(sources) == 1 else "all"  # type: ignore[assignment]
    _check_subset(comparisons, subset)
    rows = chosen.by_subset(subset)
    if len(rows.systems) < 2:
        raise HeartError(
            f"no board for judges {judges!r} on {subset} items: it needs verdicts comparing two "
            f"systems, and has {len(rows)} verdicts; run `heart judge` or import judgments"
        )
    ratings = study.config.ratings
    return build_board(
        rows, source, subset, rounds=ratings.bootstrap_rounds, seed=study.config.seed,
        level=ratings.level, rule=study.evidence_rule(),
        style=study.style_inputs(rows.completions), weights=ratings.weights,
    )  # fmt: skip


def _check_subset(comparisons: Comparisons, subset: str) -> None:
    """A HeartError naming the subsets judged when ``subset`` is none of them."""
    judged = ["all", *sorted(set(comparisons.item_subsets))]
    if subset not in judged:
        raise HeartError(
            f"no verdicts on {subset!r} items; the subsets judged are: {', '.join(judged)}"
        )


def _assisted_board(study: Study, comparisons: Comparisons, subset: str) -> Board:
    """The judge-assisted people's board on ``subset`` items, or a HeartError saying why there
    is none."""
    from heart.analyses import build_assisted_board

    _check_subset(comparisons, subset)
    ratings = study.config.ratings
    board = build_assisted_board(
        comparisons.by_subset(subset), subset, rounds=ratings.bootstrap_rounds,
        seed=study.config.seed, level=ratings.level, rule=study.evidence_rule(),
    )  # fmt: skip
    if board is None:
        raise HeartError(
            f"no judge-assisted board on {subset} items: it needs people's verdicts on item-pairs "
            "an LLM judge judged, and item-pairs only the judges judged"
        )
    return board


DEFAULT_MARGIN = 50.0
"""The gate's margin when none is given: a drop of 50 Elo (a 43/57 head-to-head share)."""


def gate(
    study: Study,
    candidate: str,
    baseline: str,
    *,
    axes: Sequence[str] | None = None,
    margin: float = DEFAULT_MARGIN,
    judges: Source = "llm",
) -> GateVerdict:
    """The regression gate: is ``candidate`` worse than ``baseline`` by more than ``margin`` Elo,
    overall or on any of ``axes`` (letters; default every axis the verdicts judged), on the
    items both were compared on, by the verdicts of ``judges``? ``.call`` and ``.exit_code``
    answer (``worse`` 1, ``not worse`` 0, ``cannot tell`` 2); ``.to_json()`` for CI systems.

    A HeartError names the study's systems for a name it does not have, or the axes for a
    letter that is not one."""
    from heart.analyses import audit_judges, load_comparisons, run_gate, verdict_counts
    from heart.types import Axis

    with study.store.session() as session:
        known = list(session.scalars(select(SystemRow.name).order_by(SystemRow.name)))
    for name, option in ((candidate, "candidate"), (baseline, "baseline")):
        if name not in known:
            raise HeartError(
                f"--{option} {name!r}: this study has no such system; it has: "
                f"{', '.join(known) or 'none yet'}"
            )
    if candidate == baseline:
        raise HeartError(f"--candidate and --baseline are both {candidate!r}: name two systems")
    if judges not in JUDGE_SOURCES:
        raise HeartError(f"--judges must be llm, human or all; got {judges!r}")
    letters = [a.value for a in Axis]
    wrong = [a for a in axes or () if a not in letters]
    if wrong:
        raise HeartError(
            f"--axes {','.join(axes or ())}: {', '.join(wrong)} is not an axis; the axes are "
            f"{','.join(letters)}"
        )
    everything = load_comparisons(study.store, source="all")
    ratings = study.config.ratings
    audits = audit_judges(everything, verdict_counts(study.store), ratings.level)
    return run_gate(
        everything.by_source(judges), candidate, baseline,
        axes=None if axes is None else [Axis(a) for a in dict.fromkeys(axes)],
        margin=margin, audits=audits, rule=study.evidence_rule(),
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
        source=judges,
    )  # fmt: skip


def agreement(study: Study) -> AgreementReport:
    """Human–LLM and inter-human agreement, agreement between judges, reliability (κ, α) and
    ranking stability, as the report states them (``.to_pandas()``: one row per share)."""
    from heart.analyses import analyse_agreement, load_comparisons

    ratings = study.config.ratings
    return analyse_agreement(
        load_comparisons(study.store, source="all"),
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
    )  # fmt: skip


def latency(study: Study) -> LatencyReport:
    """Every system's time to first token, set against the main board's Elo
    (``.to_pandas()``: one row per system)."""
    from heart.analyses import latency_report, system_latencies

    found = boards(study)
    ratings = study.config.ratings
    return latency_report(
        system_latencies(study.store), found[0] if found else None,
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
    )  # fmt: skip


def strategies(study: Study) -> StrategyReport:
    """Support strategies as the report states them: usage, diversity, humans against each
    model family, and the classifier against human consensus and ESConv's annotations.
    ``.to_pandas()``: one row per group and strategy; ``.tables()`` every table by the name of
    its CSV file. A HeartError says how to classify when nothing is classified yet."""
    from heart.report import strategy_report
    from heart.report._strategies import NO_CLASSIFICATION

    found = strategy_report(study)
    if found is None:
        raise HeartError(NO_CLASSIFICATION)
    return found


def rationales(study: Study) -> RationaleReport:
    """The themes judges and raters bring up, their co-mention where humans and LLM judges
    agree, themes with the verdict, and the LLM coder against the rule coder.
    ``.to_pandas()``: one row per coder, judge source and theme; ``.tables()`` every table by
    the name of its CSV file (empty until rationales are coded: `heart rationales`)."""
    from heart.analyses import load_comparisons
    from heart.report import rationale_report

    return rationale_report(study, load_comparisons(study.store, source="all"))


def factors(study: Study) -> FactorStructure:
    """The factor structure of the five HEART axes from the LLM judges' verdicts: loadings,
    eigenvalues against parallel analysis, α and the relation to the win rate.
    ``.to_pandas()``: one row per axis; ``.tables()`` every table by the name of its CSV file
    (empty until LLM judges have scored the axes)."""
    from heart.analyses import load_comparisons
    from heart.report import factor_report

    return factor_report(study, load_comparisons(study.store, source="all"))


def capability(study: Study, index: Path | None = None) -> CapabilityReport:
    """The main board against the capability index (``index``, else
    ``ratings.capability_index``): ``.to_pandas()`` one row per system with an index value;
    ``.tables()`` the correlations too. A HeartError says how to give an index when there is
    none; a bad index file raises IndexFileError."""
    from heart.report import capability_against

    found = capability_index(study, index)
    if found is None:
        raise HeartError(
            f"no capability index: set ratings.capability_index in {STUDY_FILE} to a CSV file "
            "with the columns system and value, or pass index=PATH"
        )
    main = boards(study)
    return capability_against(study, main[0] if main else None, found)


def facts(study: Study, index: Path | None = None) -> StudyFacts:
    """Everything the report states (counts, every board, agreement, the judge audit,
    strategies, rationales, factors, latency, provenance), read without writing anything."""
    from heart.report import gather_facts

    return gather_facts(study, capability_index(study, index))


def report(study: Study, index: Path | None = None) -> ReportSummary:
    """Fit the boards and write the report (HTML, Markdown, CSV) into the study's report/, put
    in place whole once written (a failure leaves the previous report); the capability index
    comes from ``index``, else ``ratings.capability_index`` (a bad file raises IndexFileError
    before anything is written). On a large study a worker process on the other core computes
    the rationale figures, then draws half of the report's figures."""
    from heart.report import board_warning, gather_facts, report_aside, write_report

    capability = capability_index(study, index)
    aside = report_aside(study.store)
    try:
        facts = gather_facts(study, capability, aside)
        html = write_report(facts, study.report_dir, aside)
    finally:
        if aside is not None:
            aside.close()
    return ReportSummary(facts, board_warning(facts), html)


def capability_index(study: Study, index: Path | None = None) -> CapabilityIndex | None:
    """The external capability index, read and checked against the study's systems: ``index``
    (as given), else ``ratings.capability_index`` (relative to the study folder), else None."""
    path = index_path(study.root, study.config.ratings.capability_index, index)
    if path is None:
        return None
    origin = "--index" if index is not None else f"ratings.capability_index in {STUDY_FILE}"
    with study.store.session() as session:
        systems = set(session.scalars(select(SystemRow.name)))
    return read_capability_index(path, systems, origin)


def run(study: Study, progress: ProgressFn | None = None) -> StudyRun:
    """Every stage in order (regular items unless some are stored, adversarial items unless
    they are settled, generate, judge, strategies when a classifier is set, rationale coding,
    report), after reading the capability index (a bad one raises IndexFileError) and the
    checks of :func:`heart.check.check_config` (a problem raises CheckFailed), before anything
    runs. The run stops after a stage whose calls did not all get an answer;
    ``StudyRun.stopped`` names it."""
    from heart.check import require_ready

    start = time.perf_counter()
    capability_index(study)  # a bad index file stops the run before any model is called
    require_ready(study)
    stored = count_items(study.store)
    items = ItemsSummary(stored) if sum(stored.values()) else build_items(study, progress=progress)
    done = StudyRun(items, seconds=0.0)

    def stop(stage: RunStage | None) -> StudyRun:
        return replace(done, seconds=time.perf_counter() - start, stopped=stage)

    if not items.complete:
        return stop("items")
    if _adversarial_due(study):
        done = replace(done, adversarial=build_adversarial(study, progress))
        if done.adversarial is not None and not done.adversarial.model_calls.complete:
            return stop("adversarial")
    generation = generate(study, progress)
    done = replace(done, generation=generation)
    if not generation.model_calls.complete:  # replies are missing: judge nothing
        return stop("generate")
    judging = judge(study, progress)
    done = replace(done, judging=judging)
    if not judging.model_calls.complete:
        return stop("judge")
    if study.config.strategies.classifier:
        labels = classify_strategies(study, progress)
        done = replace(done, strategies=labels)
        if not labels.model_calls.complete:
            return stop("strategies")
    rationales = code_rationales(study, progress)
    done = replace(done, rationales=rationales)
    if rationales.llm is not None and not rationales.llm.model_calls.complete:
        return stop("rationales")
    done = replace(done, report=report(study))
    return stop(None)


def dry_run(
    study: Study, stages: tuple[Stage, ...] | None = None, reply_tokens: int | None = None
) -> DryRun:
    """The calls, tokens and most cost each stage would spend (default: the stages `run` would
    do); nothing is called.

    Each stage is priced as it would run once the stages before it in `run` are done: work not
    done yet is projected (the items the rules choose, every reply not generated yet as long as
    ``reply_tokens``, else its system's ``max_tokens``, every verdict's rationale as long as its
    judge's ``max_tokens``), and the calls that read projected work are counted as estimates
    (``PlannedModel.estimated``); ``DryRun.notes`` say what was assumed. The adversarial stage
    counts its first tries (ratings and retries come on top)."""
    from heart.projection import judging_inputs, project, projected_rationales

    whole = stages is None
    if stages is None:
        due: tuple[Stage, ...] = ("adversarial",) if _adversarial_due(study) else ()
        labels: tuple[Stage, ...] = ("strategies",) if study.config.strategies.classifier else ()
        coder: tuple[Stage, ...] = ("rationales",) if study.config.rationales.coder else ()
        stages = (*due, "generate", "judge", *labels, *coder)
    plan = DryRun()

    def priced(calls: list[Call], estimates: list[bool]) -> list[PlannedModel]:
        guessed = {id(call) for call, guess in zip(calls, estimates, strict=True) if guess}
        return plan_calls(calls, study.store, lambda call: id(call) in guessed, study.config.engine)

    if "adversarial" in stages:
        calls = plan_adversarial(study)
        plan.stages.append(
            StagePlan("adversarial", plan_calls(calls, study.store, spec=study.config.engine))
        )
    if stages == ("adversarial",):
        return plan
    projection = project(study, reply_tokens)
    plan.notes.extend(projection.item_notes)
    if "generate" in stages:
        generation = projection.generation
        guesses = [item.id in projection.estimated_items for item, _ in generation.asks]
        models = priced(generation.calls, guesses)
        plan.stages.append(StagePlan("generate", models, fixed=len(generation.fixed)))
    if {"judge", "strategies", "rationales"} & set(stages):
        plan.notes.extend(projection.reply_notes)
    coder_spec = study.config.rationales.coder if "rationales" in stages else None
    people = whole and any(s.kind is SystemKind.HUMAN for s in study.config.systems)
    if "judge" in stages or coder_spec is not None or people:
        inputs = judging_inputs(study, projection)
        judging = plan_judging(study, inputs)
    if people:
        plan = replace(plan, people=_people_plan(study, len(projection.items), len(inputs.pairs),
                                   len(projection.replies)))  # fmt: skip
    if "judge" in stages:
        guesses = [
            projection.reads_estimates(pair.item_id, shown.first, shown.second)
            for pair, _, shown in judging.asks
        ]
        plan.stages.append(StagePlan("judge", priced(judging.calls, guesses), judging=judging))
    if "strategies" in stages:
        labelling = plan_classification(study, replies=(projection.replies, projection.items))
        guesses = [projection.reads_estimates(c.item_id, c.id) for c in labelling.asks]
        plan.stages.append(StagePlan("strategies", priced(labelling.calls, guesses)))
    if "rationales" in stages:  # the rule-based coder makes no model calls
        models = []
        if coder_spec is not None:
            projected = projected_rationales(judging, inputs)
            coding = plan_llm_coding(study, coder_spec, projected)
            new = {r.judgment_id for r in projected}
            models = priced(coding.calls, [r.judgment_id in new for r in coding.asks])
            if projected:
                plan.notes.append(
                    f"{len(projected)} verdicts are not given yet: their rationales are assumed "
                    "as long as each judge's max_tokens (an upper bound)"
                )
        plan.stages.append(StagePlan("rationales", models))
    return plan


def _people_plan(study: Study, items: int, pairs: int, replies: int) -> PeoplePlan:
    """The people's seats for the projected study, what is done of them, and their price."""
    from heart.people import price_people, projected_seats, task_time

    spec = study.config.people
    with study.store.session() as s:
        rows = s.execute(
            select(TaskRow.kind, func.count()).where(TaskRow.done).group_by(TaskRow.kind)
        )
        done = {str(kind): int(n) for kind, n in rows}
    seats = projected_seats(spec, items, pairs, replies)
    return price_people(spec, seats, done, task_time(study.store, spec))


def export(study: Study, out: Path) -> dict[str, int]:
    """Write the study as a bundle into ``out``, with its provenance; returns the rows written per
    table."""
    manifest = export_bundle(study.store, study.root, out, study_provenance(study))
    return {k: v["rows"] for k, v in manifest["files"].items() if v["rows"] is not None}


def import_into(root: Path, path: Path, table: str | None = None) -> ImportSummary:
    """Import a bundle folder or a completions/judgments/labels file (``table``) into the study
    at ``root``, all or nothing; a refused import leaves nothing behind.

    A bundle into a folder without a study makes the study: the bundle's study file becomes its
    own, without a ``store`` setting (its data stays in the folder) and without its models'
    endpoints and key variables (see `bundle_study_file`), and every row goes into the folder's
    own store. A bundle's settings never choose where its rows are stored or where keys go."""
    if path.is_dir():
        if (root / STUDY_FILE).exists():
            with staged_study(root) as study:
                return import_bundle(study.store, path)
        bundle = read_bundle(path)
        config_text = bundle_study_file(bundle.study_file, str(path / STUDY_FILE))
        with staged_study(root, config_text) as study:  # a new store nobody else can open
            return store_bundle(study.store, bundle, alone=True).all_new()
    if table is None:
        raise HeartError(
            f"{path} is a file: say what it holds with --table completions, --table judgments "
            "or --table labels"
        )
    with staged_study(root) as study:
        return import_table(study.store, path, table, study.config.seed)


__all__ = [
    "JUDGE_SOURCES",
    "DryRun",
    "ItemsSummary",
    "ReportSummary",
    "RunStage",
    "StagePlan",
    "StudyRun",
    "agreement",
    "audit",
    "boards",
    "build_adversarial",
    "build_items",
    "capability",
    "capability_index",
    "classify_strategies",
    "code_rationales",
    "dry_run",
    "export",
    "factors",
    "facts",
    "generate",
    "import_into",
    "judge",
    "latency",
    "leaderboard",
    "open_study",
    "rationales",
    "report",
    "run",
    "strategies",
    "verdicts",
]
