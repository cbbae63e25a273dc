"""A report is put in place whole: one that fails or is interrupted leaves the previous report
as it was, byte for byte; a new report keeps no file of an older one (a section's CSV it no
longer has) but keeps the user's own files; index values out of range stop it in one line per
value, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from heart import pipeline
from heart.config import parse_study
from heart.errors import IndexFileError, ReportError
from heart.store import Store, open_store
from heart.study import Study, create_study

from ..helpers import heart
from ..latency_rows import seed_latency_study

CONFIG = """name: latency
systems: [{name: m1, kind: model, family: m1, model: {provider: embedded}}]
ratings: {bootstrap_rounds: 50, capability_index: aa.csv}
"""
INDEX = "system,value\nm4,60\nm3,50\nm1,40\nm2,20\nslow,30\n"


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".report"))


@pytest.fixture
def reported(store: Store, tmp_path: Path) -> Study:
    """A study whose report (with the capability index) is written."""
    seed_latency_study(store)
    (tmp_path / "aa.csv").write_text(INDEX, encoding="utf-8")
    study = Study(tmp_path, parse_study(CONFIG), store)
    pipeline.report(study)
    assert (study.report_dir / "capability.csv").is_file()
    return study


def test_index_values_out_of_range_stop_the_report_and_leave_the_last_one(
    reported: Study, tmp_path: Path
) -> None:
    before = _files(reported.report_dir)
    index = tmp_path / "aa.csv"
    index.write_text("system,value\nm4,1e308\nm3,-1e308\nm1,1e308\nm2,1e-300\n", "utf-8")
    with pytest.raises(IndexFileError) as caught:
        pipeline.report(reported)
    assert str(caught.value).splitlines() == [
        f"{index} line {n}, field 'value': '{cell}' is out of range: a value is 0 or of a size "
        "from 1e-15 to 1e15; give the index on such a scale (a count of parameters or FLOPs as "
        "its log10)"
        for n, cell in ((2, "1e308"), (3, "-1e308"), (4, "1e308"), (5, "1e-300"))
    ]
    assert _files(reported.report_dir) == before
    assert _leftovers(tmp_path) == []


def test_an_interrupted_report_leaves_the_previous_one_byte_for_byte(
    reported: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the page is drawn: the Markdown and every CSV of the new report (other index
    values, so other numbers) are written by then, and none of them may show."""
    before = _files(reported.report_dir)
    (tmp_path / "aa.csv").write_text(INDEX.replace("60", "70"), encoding="utf-8")

    def interrupted(*_: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr("heart.report._write.document_html", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pipeline.report(reported)
    assert _files(reported.report_dir) == before
    assert _leftovers(tmp_path) == []
    monkeypatch.undo()
    pipeline.report(reported)
    assert "m4,70.0," in (reported.report_dir / "capability.csv").read_text(encoding="utf-8")


def test_a_report_keeps_no_file_of_an_older_one_but_keeps_the_users_own(
    reported: Study, store: Store, tmp_path: Path
) -> None:
    folder = reported.report_dir
    (folder / "notes.txt").write_text("my notes", encoding="utf-8")
    (folder / "drafts").mkdir()
    (folder / "drafts" / "plot.png").write_bytes(b"\x89PNG")
    old_page = (folder / "index.html").read_bytes()
    without_index = Study(tmp_path, parse_study(CONFIG.replace(", capability_index: aa.csv", "")),
                          store)  # fmt: skip
    pipeline.report(without_index)
    names = set(_files(folder))
    assert "capability.csv" not in names
    assert {"index.html", "report.md", "leaderboard.csv", "latency_capability.csv"} <= names
    assert ",index," not in (folder / "latency_capability.csv").read_text(encoding="utf-8")
    assert (folder / "index.html").read_bytes() != old_page
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "my notes"
    assert (folder / "drafts" / "plot.png").read_bytes() == b"\x89PNG"
    assert _leftovers(tmp_path) == []


def test_a_file_where_the_report_folder_belongs_is_named(store: Store, tmp_path: Path) -> None:
    seed_latency_study(store)
    (tmp_path / "report").write_text("not a folder", encoding="utf-8")
    study = Study(tmp_path, parse_study(CONFIG.replace(", capability_index: aa.csv", "")), store)
    with pytest.raises(ReportError, match="report is a file, not a folder; move it away"):
        pipeline.report(study)
    assert (tmp_path / "report").read_text(encoding="utf-8") == "not a folder"
    assert _leftovers(tmp_path) == []


def test_heart_report_refuses_an_index_out_of_range_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "study"
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_latency_study(store)
    store.close()
    heart("report", "--study", root)
    before = _files(root / "report")
    bad = tmp_path / "bad.csv"
    bad.write_text("system,value\nm4,1e308\nm3,-1e308\nm1,1e308\n", encoding="utf-8")
    refused = heart("report", "--study", root, "--index", bad, check=False)
    assert refused.returncode == 2 and "Traceback" not in refused.stdout + refused.stderr
    assert f"error: {bad} line 2, field 'value': '1e308' is out of range" in refused.stdout
    assert f"{bad} line 3, field 'value': '-1e308' is out of range" in refused.stdout
    assert _files(root / "report") == before
