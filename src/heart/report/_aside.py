"""The report's rationale figures: on a large study computed in a process of their own, on the
other core, while this one fits the boards and the other analyses (the figures are the same,
read from the same store)."""

from __future__ import annotations

from pathlib import Path

from heart.analyses import Comparisons, RationaleReport, analyse_rationales, load_comparisons
from heart.config import StudyConfig
from heart.cores import usable_cores
from heart.garbage import fewer_collections
from heart.rationales import RULE_CODER, llm_coder_id, load_codebook
from heart.store import open_store
from heart.study import Study
from heart.worker import Worker

ASIDE_VERDICTS = 20_000
"""Verdicts from which a study's rationale figures are computed aside, and the report's figures
drawn aside (below, starting a process costs more than it saves)."""


@fewer_collections()
def _rationales_of(root: Path, config: StudyConfig, url: str) -> RationaleReport:
    """In the other process: the rationale figures of the study at ``root`` with the settings
    ``config`` and the store at ``url`` (opened read-only)."""
    store = open_store(url, read_only=True)
    try:
        study = Study(root, config, store)
        return rationale_report(study, load_comparisons(store, source="all"))
    finally:
        store.close()


def rationale_report(study: Study, comparisons: Comparisons) -> RationaleReport:
    """The rationale figures of the rule-based coder and of the LLM coder when one is set."""
    config, ratings = study.config.rationales, study.config.ratings
    return analyse_rationales(
        study.store, comparisons, load_codebook(config.codebook), RULE_CODER,
        llm_coder_id(config.coder) if config.coder is not None else None,
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
    )  # fmt: skip


class RationalesAside:
    """The rationale figures of ``study``, started in a worker process now and taken with
    ``result()``."""

    def __init__(self, study: Study) -> None:
        self._worker = Worker(_rationales_of, study.root, study.config, study.store.url)

    def result(self) -> RationaleReport:
        try:
            report: RationaleReport = next(self._worker.results())
            return report
        finally:
            self._worker.close()

    def cancel(self) -> None:
        """Stop the worker (this process failed first)."""
        self._worker.close()


def worth_aside(verdicts: int) -> bool:
    """Whether a study of ``verdicts`` verdicts gets its rationale figures computed aside (and
    its figures drawn aside)."""
    return verdicts >= ASIDE_VERDICTS and usable_cores() >= 2
