"""A large study's report made partly in a worker process: half its figures drawn there, the
same bytes as drawn in this process; `heart report` starts one worker, which computes the
rationale figures first; a failure there surfaces as WorkerFailed, stops the worker and leaves
the previous report; every figure can be sent to it."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

import heart.report
from heart import pipeline
from heart.config import parse_study
from heart.report import ReportAside, StudyFacts, _aside, gather_facts, write_report
from heart.report import _facts as _facts_module
from heart.report import _write as _write_module
from heart.store import Store
from heart.study import Study
from heart.worker import WorkerFailed

from ..docs.markdown import ROOT
from ..latency_rows import seed_latency_study

CONFIG = """name: latency
systems: [{name: m1, kind: model, family: m1, model: {provider: embedded}}]
ratings: {bootstrap_rounds: 50, capability_index: aa.csv}
"""
INDEX = "system,value\nm4,60\nm3,50\nm1,40\nm2,20\nslow,30\n"
FIGURES = ["heatmap-llm-all", "forest-llm-all", "latency-figure", "capability-figure"]


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the worker imports this test module


@pytest.fixture
def study(store: Store, tmp_path: Path) -> Study:
    """The small latency study, with a capability index."""
    seed_latency_study(store)
    (tmp_path / "aa.csv").write_text(INDEX, encoding="utf-8")
    return Study(tmp_path, parse_study(CONFIG), store)


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> list[ReportAside]:
    """Every study is large: the workers started, as they start."""
    started: list[ReportAside] = []

    class Watched(ReportAside):
        def __init__(self) -> None:
            super().__init__()
            started.append(self)

    monkeypatch.setattr(_aside, "ASIDE_VERDICTS", 1)
    monkeypatch.setattr(_aside, "usable_cores", lambda: 2)
    monkeypatch.setattr(_aside, "ReportAside", Watched)
    monkeypatch.setattr(_facts_module, "ReportAside", Watched)
    return started


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _page(files: dict[str, bytes]) -> str:
    """The HTML page without the time it was written at."""
    return re.sub(r"written at [^<]*", "", files["index.html"].decode("utf-8"))


def _facts(study: Study) -> StudyFacts:
    return gather_facts(study, pipeline.capability_index(study))


def _broken_figure() -> bytes:
    raise ValueError("no data to draw")


def _ended(aside: ReportAside) -> bool:
    return aside._worker._process.poll() is not None


def test_figures_drawn_aside_are_the_bytes_drawn_here(study: Study, tmp_path: Path) -> None:
    facts = _facts(study)
    here = _files(write_report(facts, tmp_path / "here").parent)
    with ReportAside() as aside:
        drawn = _files(write_report(facts, tmp_path / "aside", aside).parent)
    assert drawn == here
    page = here["index.html"].decode("utf-8")
    assert [key for key in FIGURES if f"<figure id='{key}'><img" in page] == FIGURES
    assert page.count("src='data:image/png;base64,iVBORw0KGgo") >= len(FIGURES)


def test_the_first_half_of_the_figures_is_drawn_aside(study: Study, tmp_path: Path) -> None:
    sent: list[list[str]] = []

    class Watched(ReportAside):
        def draw(self, figures: Mapping[str, Callable[[], bytes]]) -> None:
            sent.append(list(figures))
            super().draw(figures)

    with Watched() as aside:
        write_report(_facts(study), tmp_path / "report", aside)
    assert sent == [FIGURES[:2]]


def test_heart_report_makes_a_large_studys_report_with_one_worker(
    study: Study, large: list[ReportAside]
) -> None:
    """The worker computes the rationale figures, then draws half the figures; the page is the
    one made here."""
    with pytest.MonkeyPatch.context() as small:
        small.setattr(_aside, "ASIDE_VERDICTS", 10**9)
        pipeline.report(study)
    here = _files(study.report_dir)
    assert large == []
    pipeline.report(study)
    assert len(large) == 1 and _ended(large[0])
    assert _page(_files(study.report_dir)) == _page(here)


def test_a_figure_failing_in_the_worker_surfaces_and_leaves_the_last_report(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: list[ReportAside]
) -> None:
    pipeline.report(study)
    before = _files(study.report_dir)

    def with_a_broken_one(doc: object) -> dict[str, Callable[[], bytes]]:
        return {"broken": _broken_figure, **real(doc)}  # type: ignore[arg-type]

    real = _write_module.figure_draws
    monkeypatch.setattr(_write_module, "figure_draws", with_a_broken_one)
    with pytest.raises(WorkerFailed, match=r"(?s)failed:.*ValueError: no data to draw"):
        pipeline.report(study)
    assert len(large) == 2 and all(map(_ended, large))
    assert _files(study.report_dir) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []


def test_a_report_failing_here_stops_the_worker(
    study: Study, monkeypatch: pytest.MonkeyPatch, large: list[ReportAside]
) -> None:
    def unwritable(_: object) -> dict[str, str]:
        raise OSError("disk full")

    monkeypatch.setattr(_write_module, "csv_files", unwritable)
    with pytest.raises(OSError, match="disk full"):
        pipeline.report(study)
    assert len(large) == 1 and _ended(large[0])

    def interrupted(*_: object) -> StudyFacts:
        raise KeyboardInterrupt

    monkeypatch.setattr("heart.report.gather_facts", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pipeline.report(study)
    assert len(large) == 2 and _ended(large[1])
    assert not study.report_dir.exists()


def test_gather_facts_alone_closes_the_worker_it_starts(
    study: Study, large: list[ReportAside]
) -> None:
    facts = _facts(study)
    assert len(large) == 1 and _ended(large[0])
    assert facts.rationales is not None


def _figure_draws(path: Path) -> list[ast.expr]:
    """The ``draw`` of every ``Figure(key, alt, draw)`` made in ``path``."""
    return [
        node.args[2] if len(node.args) > 2 else next(k.value for k in node.keywords)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        if node.func.id == "Figure" and len(node.args) + len(node.keywords) == 3
    ]


def test_every_figure_is_drawn_by_a_function_that_pickles() -> None:
    """A module-level function with its data (a partial), so that the worker can be sent it."""
    folder = Path(heart.report.__file__).parent
    draws = {p.name: _figure_draws(p) for p in sorted(folder.glob("_*.py"))}
    assert sum(map(len, draws.values())) >= 8  # every section's figures were found
    for name, found in draws.items():
        for draw in found:
            assert isinstance(draw, ast.Call) and ast.unparse(draw.func) == "partial", (
                f"{name} line {draw.lineno}: a figure drawn by {ast.unparse(draw)}"
            )
