"""A large study's report done partly in a second process, on the other core: one worker,
started as the report starts, reads the rationale codes while this process reads the
comparisons, takes those comparisons from this process (read once, for both), and makes the
rationale figures and their CSV files while this process fits the boards and the other analyses;
then it draws half of the report's figures while this one writes the Markdown, the other CSV
tables and the provenance and draws the other half. One process for both, its imports made
once: a second one would spend on its imports about what it saves. The results are the same
(the rationale figures read from the same store, the files made by the same functions)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy import func, select

from heart.analyses import Comparisons, RationaleReport, analyse_rationales
from heart.analyses._rationales import Codes, rationale_coders, rationale_figures, read_codes
from heart.config import StudyConfig
from heart.cores import usable_cores
from heart.garbage import fewer_collections
from heart.rationales import RULE_CODER, llm_coder_id, load_codebook
from heart.report._figures import draw_figures
from heart.report._rationale_files import rationale_csv
from heart.store import JudgmentRow, Store, open_store
from heart.study import Study
from heart.types import Status
from heart.worker import Worker, received

ASIDE_VERDICTS = 20_000
"""Verdicts from which a study's report is made partly aside (below, starting a process costs
more than it saves)."""


@fewer_collections()
def _rationales_of(
    config: StudyConfig, url: str
) -> tuple[RationaleReport, dict[str, str], dict[str, Any] | None]:
    """In the other process: the rationale figures of a study with the settings ``config`` and
    the store at ``url`` (opened read-only), their CSV files, and the columns of every code
    apart (without the comparisons, which the caller holds). The codes are read first; the
    comparisons are then taken from the caller (``ReportAside.give``)."""
    store = open_store(url, read_only=True)
    try:
        coders = rationale_coders(RULE_CODER, _llm_coder(config))
        stored = read_codes(store, coders, load_codebook(config.rationales.codebook))
    finally:
        store.close()
    comparisons: Comparisons = received()
    ratings = config.ratings
    report = rationale_figures(
        stored, comparisons, rounds=ratings.bootstrap_rounds, seed=config.seed, level=ratings.level
    )
    columns = None if report.codes is None else report.codes.apart()
    return replace(report, codes=None), rationale_csv(report), columns


def rationale_report(study: Study, comparisons: Comparisons) -> RationaleReport:
    """The rationale figures of the rule-based coder and of the LLM coder when one is set."""
    config, ratings = study.config.rationales, study.config.ratings
    return analyse_rationales(
        study.store, comparisons, load_codebook(config.codebook), RULE_CODER,
        _llm_coder(study.config), rounds=ratings.bootstrap_rounds, seed=study.config.seed,
        level=ratings.level,
    )  # fmt: skip


def _llm_coder(config: StudyConfig) -> str | None:
    """The LLM coder's id when the study sets one."""
    coder = config.rationales.coder
    return llm_coder_id(coder) if coder is not None else None


class ReportAside:
    """The worker process of a large study's report, started now (importing the report
    meanwhile): ``compute_rationales``, ``give`` then ``rationales()``; ``draw`` then
    ``figures()``, in turn. ``close`` (or leaving a ``with`` block) stops it, whatever
    happened; a failure there comes out as ``WorkerFailed``."""

    def __init__(self) -> None:
        self._worker = Worker.started(preload=("heart.report",))

    def compute_rationales(self, study: Study) -> None:
        """Start reading the rationale codes of ``study`` from its store."""
        self._worker.submit(_rationales_of, study.config, study.store.url)

    def give(self, comparisons: Comparisons) -> None:
        """Hand the worker the study's comparisons (every source), from which it makes the
        rationale figures; this process goes on meanwhile."""
        self._worker.send(comparisons)

    def rationales(self, comparisons: Comparisons) -> tuple[RationaleReport, dict[str, str]]:
        """The rationale figures and their CSV files; ``comparisons``: those given."""
        report, files, columns = next(self._worker.results())
        if columns is not None:
            report = replace(report, codes=Codes(comparisons, **columns))
        return report, files

    def draw(self, figures: Mapping[str, Callable[[], bytes]]) -> None:
        """Start drawing ``figures`` (key → draw)."""
        self._worker.submit(draw_figures, dict(figures))

    def figures(self) -> dict[str, bytes]:
        """The PNG bytes of the figures given to ``draw``, by key."""
        drawn: dict[str, bytes] = next(self._worker.results())
        return drawn

    def close(self) -> None:
        """Stop the worker, done or not."""
        self._worker.close()

    def __enter__(self) -> ReportAside:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def worth_aside(verdicts: int) -> bool:
    """Whether a study of ``verdicts`` verdicts gets its report made partly aside."""
    return verdicts >= ASIDE_VERDICTS and usable_cores() >= 2


def _valid_verdicts(store: Store) -> int:
    """The valid verdicts stored: a quick count of the study's size (the few that the analyses
    leave out are counted too; their rule costs a query twenty times as long)."""
    with store.session() as s:
        query = select(func.count()).select_from(JudgmentRow)
        return s.scalar(query.where(JudgmentRow.status == Status.OK)) or 0


def report_aside(store: Store) -> ReportAside | None:
    """A ``ReportAside`` started now when the study in ``store`` is large (``worth_aside``),
    else None: its report is made in this process."""
    return ReportAside() if worth_aside(_valid_verdicts(store)) else None
