"""Strategies, rationales, factor structure and capability read as data: each table the same,
cell for cell, as the CSV file the report writes for the same study, read from a study opened
read-only without changing a byte of its store, and a study without the data for an analysis
told what would give it."""

from __future__ import annotations

import csv
import hashlib
import math
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from heart import pipeline
from heart.errors import HeartError
from heart.rationales import load_codebook
from heart.rationales.code import code_with_rules
from heart.store import Store, open_store
from heart.study import Study, create_study, open_study
from heart.tables import CellTable

from .factor_rows import AXES, simulate_verdicts
from .latency_rows import seed_latency_study
from .rationale_rows import crafted_study as crafted_rationales
from .rows import seed_verdicts
from .strategy_rows import CL
from .strategy_rows import crafted_study as crafted_strategies

MODEL = "name: {name}\nsystems: [{{name: m1, kind: model, family: m1, model: {{}}}}]\n"
PEOPLE = "name: {name}\nsystems: [{{name: human, kind: human, family: human}}]\n"
INDEX = "system,value\nm4,60\nm3,50\nm1,40\nm2,20\nslow,30\n"


def _study(root: Path, seed: Callable[[Store], None], name: str, config: str = MODEL) -> Path:
    """A study folder with ``seed``'s rows and its report written."""
    root.mkdir()
    (root / "study.yaml").write_text(config.format(name=name), encoding="utf-8")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed(store)
    store.close()
    with open_study(root) as study:
        pipeline.report(study)
    return root


@contextmanager
def _read_only(root: Path) -> Iterator[Study]:
    """The study opened read-only on a read-only store, whose bytes must not change."""
    store = root / "heart.db"
    store.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    try:
        with open_study(root, read_only=True) as study:
            yield study
    finally:
        store.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


def _same(text: str, value: Any) -> bool:
    """A CSV cell and a data frame's value say the same: empty for None or NaN, booleans as
    words, numbers exactly (the CSV holds each float's shortest exact form)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return text == ""
    if isinstance(value, bool | np.bool_):
        return text == ("true" if value else "false")
    if isinstance(value, int | float | np.number):
        return text != "" and float(text) == float(value)
    return text == str(value)


def _matches_csv(table: CellTable, path: Path) -> int:
    """The table's data frame holds exactly the rows and columns of the CSV file at ``path``;
    returns the number of rows."""
    with path.open(encoding="utf-8") as f:
        written = list(csv.reader(f))
    frame = table.to_pandas()
    assert written[0] == list(frame.columns), path.name
    assert len(written) - 1 == len(frame), path.name
    for n, row in enumerate(written[1:]):
        values = frame.iloc[n].tolist()
        for column, text, value in zip(written[0], row, values, strict=True):
            assert _same(text, value), (path.name, n, column, text, value)
    return len(frame)


def _seed_rationales(store: Store) -> None:
    crafted_rationales(store)
    code_with_rules(store, load_codebook())


def test_strategies_as_data_match_the_report_on_a_read_only_store(tmp_path: Path) -> None:
    root = _study(tmp_path / "s", crafted_strategies, "strategies", PEOPLE)
    with _read_only(root) as study:
        report = pipeline.strategies(study)
    tables = report.tables()
    assert list(tables) == ["strategy_usage", "strategy_diversity", "strategy_differences",
                            "classifier_f1", "classifier_audit"]  # fmt: skip
    for name, table in tables.items():
        assert _matches_csv(table, root / "report" / f"{name}.csv") == len(table)
    usage = report.to_pandas().set_index(["scope", "items", "group", "strategy"])
    # the crafted study: 8 of the 12 pooled human replies ask for clarification
    human_cl = usage.loc[("family", "all", "human", CL)]
    assert (human_cl["replies"], human_cl["uses"], human_cl["rate"]) == (12, 8, 8 / 12)
    assert len(usage) == 15 * (6 + 4 + 7)  # 15 strategies by systems, families, per subset
    assert len(tables["strategy_differences"]) == 30  # two model families, 15 strategies


def test_rationales_as_data_match_the_report_on_a_read_only_store(tmp_path: Path) -> None:
    root = _study(tmp_path / "s", _seed_rationales, "rationales")
    with _read_only(root) as study:
        report = pipeline.rationales(study)
    tables = report.tables()
    assert not (root / "report" / "rationale-coders.csv").exists()  # no LLM coder
    assert len(tables.pop("rationale-coders")) == 0
    for name, table in tables.items():
        assert _matches_csv(table, root / "report" / f"{name}.csv") == len(table)
    themes = report.to_pandas().set_index(["judges", "theme"])
    asks = themes.loc[("llm", "asks-question")]
    assert (asks["hits"], asks["n"], asks["estimate"]) == (3, 6, 0.5)
    comention = tables["rationale-comention"].to_pandas().set_index("theme")
    # humans and judges both mention or both omit 51 of the 54 pair-themes (see the rows)
    assert (comention.loc["all", "hits"], comention.loc["all", "n"]) == (51, 54)
    assert len(tables["rationale-codes"]) == 15


def test_factor_structure_as_data_matches_the_report_on_a_read_only_store(tmp_path: Path) -> None:
    root = tmp_path / "s"
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_verdicts(store, simulate_verdicts(40, 4, seed=1))
    store.close()
    with open_study(root) as study:
        pipeline.report(study)
    with _read_only(root) as study:
        report = pipeline.factors(study)
    tables = report.tables()
    for name, table in tables.items():
        assert _matches_csv(table, root / "report" / f"{name}.csv") == len(table)
    axes = report.to_pandas().set_index("axis")
    assert list(axes.index) == AXES and set(axes["completions"]) == {160}
    assert report.solution is not None
    assert axes["loading_1"].tolist() == pytest.approx(report.solution.loadings[:, 0].tolist())
    eigen = tables["factor_eigenvalues"].to_pandas()
    assert len(eigen) == 5 and eigen["eigenvalue"].sum() == pytest.approx(5.0)  # trace of R
    assert eigen["retained"].tolist() == [True, False, False, False, False]


def test_capability_as_data_matches_the_report_on_a_read_only_store(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    (root / "aa.csv").write_text(INDEX, encoding="utf-8")
    (root / "study.yaml").write_text(
        MODEL.format(name="latency")
        + "ratings: {bootstrap_rounds: 200, capability_index: aa.csv}\n",
        encoding="utf-8",
    )
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_latency_study(store)
    store.close()
    with open_study(root) as study:
        pipeline.report(study)
    with _read_only(root) as study:
        report = pipeline.capability(study)
    tables = report.tables()
    assert _matches_csv(tables["capability"], root / "report" / "capability.csv") == 5
    with (root / "report" / "latency_capability.csv").open(encoding="utf-8") as f:
        written = [r for r in csv.DictReader(f) if r["x"] == "index"]
    correlations = tables["capability_correlations"].to_pandas()
    assert len(correlations) == len(written) == 4
    for row, (_, value) in zip(written, correlations.iterrows(), strict=True):
        assert all(_same(row[c], value[c]) for c in correlations.columns)
    points = report.to_pandas().set_index("system")
    assert points.loc["m4", "index"] == 60.0 and points.loc["m4", "board"] == "llm-all"
    # the residual is Elo minus the line's Elo at the system's index value
    assert (points["elo"] - points["fitted_elo"]).tolist() == pytest.approx(
        points["residual"].tolist()
    )


def test_a_study_without_the_data_says_what_would_give_it(tmp_path: Path) -> None:
    root = _study(tmp_path / "s", lambda store: None, "empty")
    with _read_only(root) as study:
        with pytest.raises(HeartError, match=r"^No strategy classifications yet: run `heart st"):
            pipeline.strategies(study)
        with pytest.raises(HeartError, match=r"^no capability index: set ratings\.capability"):
            pipeline.capability(study)
        rationales = pipeline.rationales(study)
        factors = pipeline.factors(study)
    themes = rationales.to_pandas()
    assert themes.empty and list(themes.columns)[:3] == ["coder", "judges", "theme"]
    assert all(len(t) == 0 for t in rationales.tables().values())
    axes = factors.to_pandas()
    assert axes.empty and list(axes.columns)[:2] == ["axis", "completions"]
    assert len(factors.tables()["factor_eigenvalues"]) == 0
    for name in ("strategy_usage", "rationale-themes", "factor_axes", "capability"):
        assert not (root / "report" / f"{name}.csv").exists()
    # a capability index given by hand, on a study with no board: no point, no correlation
    (tmp_path / "aa.csv").write_text("system,value\nm1,40\n", encoding="utf-8")
    with _read_only(root) as study:
        report = pipeline.capability(study, index=tmp_path / "aa.csv")
    assert report.to_pandas().empty and len(report.tables()["capability_correlations"]) == 0
