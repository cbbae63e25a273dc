"""The report's Latency and capability section: its tables, figures and lines in HTML and
Markdown, its CSVs at full precision, the TTFT column of the leaderboard, what it says without
timings or an index, and `heart report --index` (a bad file stops it with one line per problem)."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from heart import pipeline
from heart.config import parse_study
from heart.errors import IndexFileError
from heart.items import count_items
from heart.report._latency import NO_INDEX, NO_TIMINGS
from heart.store import Store, open_store
from heart.study import Study, create_study, open_study

from ..helpers import heart
from ..latency_rows import seed_latency_study
from ..rows import Verdict, seed_verdicts

CONFIG = """name: latency
systems: [{name: m1, kind: model, family: m1, model: {provider: embedded}}]
ratings: {bootstrap_rounds: 200, capability_index: aa.csv}
"""
INDEX = "system,value\nm4,60\nm3,50\nm1,40\nm2,20\nslow,30\n"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def written(store: Store, tmp_path: Path) -> tuple[Study, pipeline.ReportSummary]:
    seed_latency_study(store)
    (tmp_path / "aa.csv").write_text(INDEX, encoding="utf-8")
    study = Study(tmp_path, parse_study(CONFIG), store)
    return study, pipeline.report(study)


def test_the_section_and_the_board_column_in_html_and_markdown(
    written: tuple[Study, pipeline.ReportSummary],
) -> None:
    study, summary = written
    html = (study.report_dir / "index.html").read_text(encoding="utf-8")
    assert "<a href='#latency'>Latency and capability</a>" in html
    assert "<h2 id='latency'>Latency and capability</h2>" in html
    for table in ("latency-systems", "capability-correlations", "capability"):
        assert f"<table id='{table}'>" in html
    for figure in ("latency-figure", "capability-figure"):
        assert f"<figure id='{figure}'><img" in html
    ids = re.findall(r"id='([^']+)'", html)
    assert len(ids) == len(set(ids))  # the section's anchors are unique in the page
    md = (study.report_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Latency and capability", 1)[1].split("## Study", 1)[0]
    assert "| m1 | model | m1 | 4 | 4 | 250 ms | 175 ms–325 ms | 1.25 s | under the real-time " \
        "band |" in section  # fmt: skip
    assert "| m2 | model | m2 | 4 | 3 | 100 ms | 90 ms–110 ms | 1.10 s | under the real-time " \
        "band; 3 of 4 streamed |" in section  # fmt: skip
    assert "| m4 | model | m4 | 4 | 4 | 3.50 s | 2.75 s–4.25 s | 4.50 s |  |" in section
    assert "no timings: no time to first token recorded (not streamed, or imported)" in section
    assert "no timings: people's replies carry no timings" in section
    latency = summary.facts.latency
    assert latency is not None and latency.spearman is not None
    rho = f"{latency.spearman.estimate:.2f}"
    assert f"Spearman's ρ of Elo (LLM judges, all items) with median TTFT over 4 systems: {rho}" \
        in section  # fmt: skip
    assert "Median TTFT under 500 ms: m1 (Elo " in section
    assert f"Capability index {study.root / 'aa.csv'}: 5 of the 8 systems ranked" in section
    assert "Ranked but not in the index: human, ds, warm." in section
    assert "### Correlation with the capability index" in section
    board = md.split("## LLM judges, all items", 1)[1].split("### Elo per axis", 1)[0]
    assert "median TTFT [IQR] |" in board
    # 4 conversations: no interval, so no rank
    m4 = next(line for line in board.splitlines() if line.startswith("| – | m4 |"))
    assert m4.endswith("| 3.50 s [2.75–4.25] |")
    assert any(line.endswith("| –, people |") for line in board.splitlines())
    assert any("| slow |" in line and line.endswith("| –, not streamed |") for line in
               board.splitlines())  # fmt: skip


def test_every_csv_names_a_board_by_its_key_so_scripts_can_join_them(
    written: tuple[Study, pipeline.ReportSummary],
) -> None:
    study, summary = written
    report = study.report_dir
    latency, capability = summary.facts.latency, summary.facts.capability
    assert latency is not None and capability is not None
    assert latency.board == capability.board == "llm-all"  # the API names it the same way
    ranked = {(r["board"], r["system"]): r for r in _rows(report / "leaderboard.csv")}
    keys = {b.key for b in summary.facts.boards}
    assert {board for board, _ in ranked} == keys == {"llm-all"}
    timed = [r for r in _rows(report / "latency.csv") if r["board"]]
    assert len(timed) == len(latency.points) == 4
    for r in timed:  # each joins its leaderboard row
        assert float(r["elo"]) == float(ranked[r["board"], r["system"]]["elo"])
    fitted = _rows(report / "capability.csv")
    assert len(fitted) == 5
    for r in fitted:
        row = ranked[r["board"], r["system"]]
        assert (float(r["elo"]), float(r["win_rate"])) == (float(row["elo"]),
                                                           float(row["win_rate"]))  # fmt: skip
    assert {r["board"] for r in _rows(report / "latency_capability.csv")} == keys
    assert {r["board"] for r in _rows(report / "differences.csv")} == keys


def test_the_csvs_hold_the_section_at_full_precision(
    written: tuple[Study, pipeline.ReportSummary],
) -> None:
    study, summary = written
    latency, capability = summary.facts.latency, summary.facts.capability
    assert latency is not None and capability is not None
    report = study.report_dir
    rows = {r["system"]: r for r in _rows(report / "latency.csv")}
    assert float(rows["m1"]["ttft_median_ms"]) == 250.0 and rows["m1"]["no_timings"] == ""
    assert (float(rows["m2"]["ttft_q1_ms"]), rows["m2"]["ttft_completions"]) == (90.0, "3")
    assert rows["m1"]["under_realtime_band"] == "true"
    assert rows["m4"]["under_realtime_band"] == "false"
    point = next(p for p in latency.points if p.system == "m3")
    assert float(rows["m3"]["elo"]) == point.elo
    # 4 conversations are too few for an honest interval: none is written
    assert rows["m3"]["elo_low"] == "" and math.isnan(point.low)
    assert rows["slow"]["ttft_median_ms"] == "" and rows["slow"]["under_realtime_band"] == ""
    assert rows["slow"]["latency_median_ms"] == "1500.0" and rows["slow"]["elo"] == ""
    assert rows["idle"]["no_timings"] == "no completions yet"
    fitted = {r["system"]: r for r in _rows(report / "capability.csv")}
    assert list(fitted) == [p.system for p in capability.points]
    for p in capability.points:
        cells = fitted[p.system]
        assert (float(cells["index"]), float(cells["elo"])) == (p.index, p.elo)
        assert float(cells["residual"]) == p.residual
    correlations = _rows(report / "latency_capability.csv")
    assert [(r["x"], r["y"], r["statistic"]) for r in correlations] == [
        ("ttft_median_ms", "elo", "spearman_rho"),
        ("index", "elo", "pearson_r"), ("index", "elo", "spearman_rho"),
        ("index", "win_rate", "pearson_r"), ("index", "win_rate", "spearman_rho"),
    ]  # fmt: skip
    pearson = capability.elo_pearson
    assert pearson is not None
    assert float(correlations[1]["estimate"]) == pearson.estimate
    assert (float(correlations[1]["low"]), correlations[1]["rounds"]) == (pearson.low, "")
    assert correlations[2]["rounds"] == "200"
    board = {r["system"]: r for r in _rows(report / "leaderboard.csv")}
    assert (float(board["m1"]["ttft_median_ms"]), board["m1"]["ttft_completions"]) == (250.0, "4")
    assert board["human"]["ttft_median_ms"] == "" and board["slow"]["ttft_q3_ms"] == ""
    for r in [*correlations, *rows.values()]:
        assert all("%" not in v and " ms" not in v for v in r.values())


def test_without_timings_or_an_index_the_section_says_how_to_get_them(
    store: Store, tmp_path: Path
) -> None:
    seed_verdicts(store, [Verdict(i, "m1", "m2", "g", "a" if i else "b") for i in range(3)])
    config = "name: s\nsystems: [{name: m1, kind: dataset, family: m1}]"
    study = Study(tmp_path, parse_study(config), store)
    pipeline.report(study)
    md = (study.report_dir / "report.md").read_text(encoding="utf-8")
    section = md.split("## Latency and capability", 1)[1].split("## Study", 1)[0]
    assert NO_TIMINGS in section
    assert NO_INDEX + " This study's board ranks 2 models: a correlation across models needs " \
        "at least 3, so an index would add nothing here yet." in section  # fmt: skip
    assert "median TTFT [IQR]" not in md  # no column where no system has timings
    html = (study.report_dir / "index.html").read_text(encoding="utf-8")
    assert "<h2 id='latency'>" in html and "<figure id='latency-figure'>" not in html
    assert not (study.report_dir / "capability.csv").exists()
    assert not (study.report_dir / "latency_capability.csv").exists()
    header = _rows(study.report_dir / "leaderboard.csv")[0]
    assert header["ttft_median_ms"] == ""


def test_a_bad_index_in_the_study_file_stops_the_report_before_it_writes(
    store: Store, tmp_path: Path
) -> None:
    seed_latency_study(store)
    (tmp_path / "aa.csv").write_text("system,value\nm1,40\ngpt-9,3\nm2,n/a\n", encoding="utf-8")
    study = Study(tmp_path, parse_study(CONFIG), store)
    with pytest.raises(IndexFileError) as caught:
        pipeline.report(study)
    lines = str(caught.value).splitlines()
    path = tmp_path / "aa.csv"
    assert [line.split(": ")[0] for line in lines] == [
        f"{path} line 3, field 'system'", f"{path} line 4, field 'value'"
    ]  # fmt: skip
    assert not study.report_dir.exists()


def test_heart_report_index_overrides_the_study_and_refuses_a_bad_file(tmp_path: Path) -> None:
    root = tmp_path / "study"
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_latency_study(store)
    store.close()
    good = tmp_path / "good.csv"
    good.write_text(INDEX, encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text("system,value\nm1,4O\nm1,41\n", encoding="utf-8")
    refused = heart("report", "--study", root, "--index", bad, check=False)
    assert refused.returncode == 2 and "Traceback" not in refused.stdout + refused.stderr
    assert f"error: {bad} line 2, field 'value': '4O' is not a number" in refused.stdout
    assert f"{bad} line 3, field 'system': 'm1' is listed again (first on line 2)" in \
        refused.stdout  # fmt: skip
    assert not (root / "report").exists()
    heart("report", "--study", root, "--index", good)
    md = (root / "report" / "report.md").read_text(encoding="utf-8")
    assert f"Capability index {good}: 5 of the" in md
    assert {r["system"] for r in _rows(root / "report" / "capability.csv")} == {
        "m1", "m2", "m3", "m4", "slow"
    }  # fmt: skip


def test_heart_run_checks_the_index_before_any_stage(tmp_path: Path) -> None:
    root = tmp_path / "study"
    create_study(root, demo=True)
    path = root / "study.yaml"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "ratings:\n", "ratings:\n  capability_index: missing.csv\n"
        ),
        encoding="utf-8",
    )
    with open_study(root) as study, pytest.raises(IndexFileError) as caught:
        pipeline.run(study)
    assert str(caught.value) == (
        f"{root / 'missing.csv'}: the capability index cannot be read (No such file or "
        "directory); check ratings.capability_index in study.yaml"
    )
    with open_study(root) as study:
        assert sum(count_items(study.store).values()) == 0
