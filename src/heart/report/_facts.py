"""What the report states about a study: counts, failures, prompts, the config, the board."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import Row, func, select

from heart.analyses import (
    AdversarialReport,
    AgreementReport,
    Board,
    CapabilityReport,
    Comparisons,
    FactorStructure,
    JudgeAudit,
    JudgeVsPeople,
    LatencyReport,
    Leaderboard,
    RationaleReport,
    Source,
    StrategyReport,
    SubsetComparison,
    adversarial_report,
    analyse_agreement,
    analyse_strategies,
    audit_judges,
    build_boards,
    capability_report,
    compare_subsets,
    factor_structure,
    judges_against_people,
    latency_report,
    load_comparisons,
    system_latencies,
    verdict_counts,
)
from heart.capability import CapabilityIndex
from heart.garbage import fewer_collections
from heart.people import RaterQuality, review_quality
from heart.provenance import Provenance, study_provenance
from heart.report._aside import ReportAside, rationale_report, worth_aside
from heart.store import (
    CompletionRow,
    ItemRow,
    JudgmentRow,
    PairRow,
    SystemRow,
    counted_judgment,
    left_out_judgments,
)
from heart.strategies import DEFAULT_CLASSIFIER, classifier_id, load_taxonomy
from heart.study import Study
from heart.types import Status

SOURCES: tuple[Source, ...] = ("llm", "human")


@dataclass(frozen=True)
class JudgeCounts:
    """One judge's verdicts: counted, valid but left out (see ``StudyFacts.left_out`` for why),
    and failed."""

    counted: int
    left_out: int
    failed: int


@dataclass
class StudyFacts:
    name: str
    config_text: str
    items: dict[str, int]
    completions: dict[str, tuple[int, int]]  # system -> (ok, failed)
    pairs: int
    judgments: dict[str, JudgeCounts]
    prompts: list[tuple[str, str, str]]  # name, version, hash
    families: dict[str, str]
    boards: list[Board]
    agreement: AgreementReport | None = None
    audit: list[JudgeAudit] = field(default_factory=list)  # every judge and rater, LLM first
    judges_vs_people: list[JudgeVsPeople] = field(default_factory=list)  # per LLM judge
    left_out: dict[str, int] = field(default_factory=dict)  # reason -> judgments not counted
    adversarial: AdversarialReport | None = None  # what the adversarial stage made
    factors: FactorStructure | None = None  # the HEART axes' factor structure (LLM judges)
    subsets: list[SubsetComparison] = field(default_factory=list)  # regular vs adversarial
    strategies: StrategyReport | None = None  # None: the classifier has labelled nothing yet
    rationales: RationaleReport | None = None  # themes of the rationales, by coder
    rationale_files: dict[str, str] | None = None  # their CSV files, when made beforehand
    latency: LatencyReport | None = None  # time to first token, and Elo against it
    capability: CapabilityReport | None = None  # None: no capability index was given
    provenance: Provenance | None = None  # which heart, prompts, models; tokens and cost
    raters: list[RaterQuality] = field(default_factory=list)  # people in the web app, measured
    rubric_shown: bool = False  # whether the web app showed raters the HEART axes

    @property
    def main(self) -> Board | None:
        """The board shown first: LLM judges on all items if there are any, else the first."""
        return self.boards[0] if self.boards else None

    @property
    def board(self) -> Leaderboard | None:
        return self.main.leaderboard if self.main else None

    def find(self, source: str, subset: str) -> Board | None:
        """The board of ``source`` judges on ``subset`` items, if the study has one."""
        return next((b for b in self.boards if (b.source, b.subset) == (source, subset)), None)


def _by_status(
    rows: Sequence[Row[str, str, int]], every: Sequence[str] = ()
) -> dict[str, tuple[int, int]]:
    """(ok, failed) per key, ``every`` key among them (a system with no reply yet shows 0)."""
    out: dict[str, tuple[int, int]] = {key: (0, 0) for key in every}
    for key, status, n in rows:
        ok, failed = out.get(key, (0, 0))
        out[key] = (ok + n, failed) if status == Status.OK else (ok, failed + n)
    return dict(sorted(out.items()))


@fewer_collections()
def gather_facts(
    study: Study, index: CapabilityIndex | None = None, aside: ReportAside | None = None
) -> StudyFacts:
    """Read everything the report shows from the store, and fit the board; with ``index`` (an
    external capability index), set the main board against it. The rationale figures are
    computed in ``aside`` when one is given (the caller closes it), else on a large study in a
    worker of its own."""
    with study.store.session() as s:
        items = dict(s.execute(select(ItemRow.subset, func.count()).group_by(ItemRow.subset)).all())
        completions = _by_status(
            s.execute(
                select(CompletionRow.system, CompletionRow.status, func.count()).group_by(
                    CompletionRow.system, CompletionRow.status
                )
            ).all(),
            [spec.name for spec in study.config.systems],
        )
        counted = counted_judgment()
        judgments = {
            judge: JudgeCounts(int(n_counted), int(valid) - int(n_counted), int(failed))
            for judge, n_counted, valid, failed in s.execute(
                select(
                    JudgmentRow.judge,
                    func.count().filter(counted),
                    func.count().filter(JudgmentRow.status == Status.OK),
                    func.count().filter(JudgmentRow.status == Status.FAILED),
                )
                .group_by(JudgmentRow.judge)
                .order_by(JudgmentRow.judge)
            ).all()
        }
        pairs = s.scalar(select(func.count()).select_from(PairRow)) or 0
        families = {r.name: r.family for r in s.scalars(select(SystemRow))}
    own = aside is None and worth_aside(sum(counts.counted for counts in judgments.values()))
    if own:
        aside = ReportAside()
    try:
        if aside is not None:  # on the other core while the rest is read and fitted
            aside.compute_rationales(study)
        facts = _facts(study, items, completions, judgments, pairs, families, aside)
    finally:
        if own and aside is not None:
            aside.close()
    facts.latency, facts.capability = _latency_and_capability(study, facts.main, index)
    return facts


def _facts(
    study: Study,
    items: dict[str, int],
    completions: dict[str, tuple[int, int]],
    judgments: dict[str, JudgeCounts],
    pairs: int,
    families: dict[str, str],
    aside: ReportAside | None,
) -> StudyFacts:
    """The report's facts after the counts: every analysis (the rationale figures from
    ``aside`` when they are computed there)."""
    comparisons = load_comparisons(study.store, source="all")
    if aside is not None:
        aside.give(comparisons)
    ratings = study.config.ratings
    rounds, seed, level = ratings.bootstrap_rounds, study.config.seed, ratings.level
    config_path = study.root / "study.yaml"
    provenance = study_provenance(study)
    facts = StudyFacts(
        name=study.config.name,
        config_text=config_path.read_text(encoding="utf-8") if config_path.is_file() else "",
        items=items,
        completions=completions,
        pairs=pairs,
        judgments=judgments,
        prompts=[(p.name, p.version, p.hash) for p in provenance.prompts],
        families=families,
        boards=_boards(study, comparisons),
        agreement=analyse_agreement(comparisons, rounds=rounds, seed=seed, level=level),
        audit=audit_judges(comparisons, verdict_counts(study.store), level),
        judges_vs_people=judges_against_people(
            comparisons, rounds=rounds, seed=seed, level=level, rule=study.evidence_rule()
        ),
        raters=review_quality(study.store, study.config.people, act=False),
        rubric_shown=study.config.people.show_rubric,
        left_out=left_out_judgments(study.store),
        factors=factor_report(study, comparisons),
        adversarial=adversarial_report(study.store, study.config.items.hostility_tolerance),
        subsets=[
            shift
            for source in SOURCES
            if (
                shift := compare_subsets(comparisons, source, rounds=rounds, seed=seed, level=level)
            )
            is not None
        ],
        strategies=strategy_report(study),
        provenance=provenance,
    )
    if aside is None:
        facts.rationales = rationale_report(study, comparisons)
    else:
        facts.rationales, facts.rationale_files = aside.rationales(comparisons)
    return facts


def _boards(
    study: Study,
    comparisons: Comparisons,
    *,
    ablations: bool = True,
    axis_intervals: Literal["main", "every", "none"] = "main",
) -> list[Board]:
    ratings = study.config.ratings
    return build_boards(
        comparisons, rounds=ratings.bootstrap_rounds, seed=study.config.seed,
        level=ratings.level, rule=study.evidence_rule(), ablations=ablations,
        style=study.style_inputs(comparisons.completions), weights=ratings.weights,
        axis_intervals=axis_intervals,
    )  # fmt: skip


@fewer_collections()
def gather_boards(study: Study, *, axes: bool = False) -> StudyFacts:
    """What the terminal's leaderboard shows, and nothing more: every board and the judges'
    audit, fitted as the report fits them but without the ablations (the report's other facts
    are left empty); with ``axes``, every board's axes with their intervals too."""
    comparisons = load_comparisons(study.store, source="all")
    return StudyFacts(
        name=study.config.name, config_text="", items={}, completions={}, pairs=0,
        judgments={}, prompts=[], families={},
        boards=_boards(
            study, comparisons, ablations=False, axis_intervals="every" if axes else "none"
        ),
        audit=audit_judges(comparisons, verdict_counts(study.store), study.config.ratings.level),
    )  # fmt: skip


def strategy_report(study: Study) -> StrategyReport | None:
    """The strategy analyses of the study's classifier (the default one when none is set), or
    None when it has classified nothing yet."""
    ratings = study.config.ratings
    return analyse_strategies(
        study.store,
        classifier_id(study.config.strategies.classifier or DEFAULT_CLASSIFIER),
        load_taxonomy(study.config.strategies.taxonomy),
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
    )  # fmt: skip


def factor_report(study: Study, comparisons: Comparisons) -> FactorStructure:
    """The factor structure of the five axes from the LLM judges' verdicts."""
    ratings = study.config.ratings
    return factor_structure(
        comparisons, rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level
    )


def capability_against(
    study: Study, board: Board | None, index: CapabilityIndex
) -> CapabilityReport:
    """``board`` (the main one) set against the capability index."""
    ratings = study.config.ratings
    standings = board.leaderboard.standings if board is not None else []
    return capability_report(
        standings, index, board.key if board is not None else "",
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
    )  # fmt: skip


def _latency_and_capability(
    study: Study, board: Board | None, index: CapabilityIndex | None
) -> tuple[LatencyReport, CapabilityReport | None]:
    """Every system's time to first token against the main board's Elo, and that board against
    the capability index when one is given."""
    ratings = study.config.ratings
    latency = latency_report(
        system_latencies(study.store), board,
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
    )  # fmt: skip
    return latency, capability_against(study, board, index) if index is not None else None
