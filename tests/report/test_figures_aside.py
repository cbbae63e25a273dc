"""The report's figures drawn in a worker process (as on a large study): the same bytes as drawn
in this process, started by `heart report` before the facts are gathered, and a failure there
surfaces as WorkerFailed, stops the worker and leaves the previous report."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

import heart.report
from heart import pipeline
from heart.config import parse_study
from heart.report import FiguresAside, StudyFacts, _drawing, gather_facts, write_report
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
FIGURES = {"heatmap-llm-all", "forest-llm-all", "latency-figure", "capability-figure"}


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the worker imports this test module


@pytest.fixture
def study(store: Store, tmp_path: Path) -> Study:
    """The small latency study, with a capability index."""
    seed_latency_study(store)
    (tmp_path / "aa.csv").write_text(INDEX, encoding="utf-8")
    return Study(tmp_path, parse_study(CONFIG), store)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _page(files: dict[str, bytes]) -> str:
    """The HTML page without the time it was written at."""
    return re.sub(r"written at [^<]*", "", files["index.html"].decode("utf-8"))


def _facts(study: Study) -> StudyFacts:
    return gather_facts(study, pipeline.capability_index(study))


def _broken_figure() -> bytes:
    raise ValueError("no data to draw")


def _watched(started: list[FiguresAside]) -> Callable[[], FiguresAside]:
    def start() -> FiguresAside:
        aside = FiguresAside()
        started.append(aside)
        return aside

    return start


def _ended(aside: FiguresAside) -> bool:
    return aside._worker._process.poll() is not None


def test_figures_drawn_aside_are_the_bytes_drawn_here(study: Study, tmp_path: Path) -> None:
    facts = _facts(study)
    here = _files(write_report(facts, tmp_path / "here").parent)
    aside = FiguresAside()
    drawn = _files(write_report(facts, tmp_path / "aside", aside).parent)
    assert _ended(aside)
    assert drawn == here
    page = here["index.html"].decode("utf-8")
    assert all(f"<figure id='{key}'><img" in page for key in FIGURES)
    assert page.count("src='data:image/png;base64,iVBORw0KGgo") >= len(FIGURES)


def test_heart_report_draws_aside_on_a_large_study(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker is started before the facts are gathered; the page is the one drawn here."""
    pipeline.report(study)
    here = _files(study.report_dir)
    started: list[FiguresAside] = []
    monkeypatch.setattr(_drawing, "worth_aside", lambda verdicts: verdicts >= 1)
    monkeypatch.setattr(_drawing, "FiguresAside", _watched(started))
    gathered: list[int] = []

    def gather(study: Study, index: object = None) -> StudyFacts:
        gathered.append(len(started))
        return gather_facts(study, index)  # type: ignore[arg-type]

    monkeypatch.setattr("heart.report.gather_facts", gather)
    pipeline.report(study)
    assert gathered == [1] and _ended(started[0])
    assert _page(_files(study.report_dir)) == _page(here)


def test_a_report_failing_before_its_figures_stops_the_worker(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[FiguresAside] = []
    monkeypatch.setattr(_drawing, "worth_aside", lambda verdicts: verdicts >= 1)
    monkeypatch.setattr(_drawing, "FiguresAside", _watched(started))

    def interrupted(*_: object) -> StudyFacts:
        raise KeyboardInterrupt

    monkeypatch.setattr("heart.report.gather_facts", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pipeline.report(study)
    assert len(started) == 1 and _ended(started[0])
    assert not study.report_dir.exists()


def test_a_small_study_draws_its_figures_here(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[FiguresAside] = []
    monkeypatch.setattr(_drawing, "FiguresAside", _watched(started))
    assert _drawing.figures_aside(study.store) is None
    pipeline.report(study)
    assert started == [] and (study.report_dir / "index.html").is_file()


def test_a_figure_failing_in_the_worker_surfaces_and_leaves_the_last_report(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = _facts(study)
    folder = write_report(facts, tmp_path / "report").parent
    before = _files(folder)

    def with_a_broken_one(doc: object) -> dict[str, Callable[[], bytes]]:
        return {"broken": _broken_figure, **real(doc)}  # type: ignore[arg-type]

    real = _write_module.figure_draws
    monkeypatch.setattr(_write_module, "figure_draws", with_a_broken_one)
    aside = FiguresAside()
    with pytest.raises(WorkerFailed, match=r"(?s)failed:.*ValueError: no data to draw"):
        write_report(facts, folder, aside)
    assert _ended(aside)
    assert _files(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".report")) == []


def test_a_failure_here_while_the_worker_draws_stops_it(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = _facts(study)

    def unwritable(_: object) -> dict[str, str]:
        raise OSError("disk full")

    monkeypatch.setattr(_write_module, "csv_files", unwritable)
    aside = FiguresAside()
    with pytest.raises(OSError, match="disk full"):
        write_report(facts, tmp_path / "report", aside)
    assert _ended(aside)
    assert not (tmp_path / "report").exists()


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
