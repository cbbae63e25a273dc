"""The demo study end to end with the embedded model (on a third of its items, to keep the suite
short): report, reruns, export and import."""

from __future__ import annotations

import csv
import filecmp
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from heart.store import CallRow, CompletionRow, JudgmentRow, PairRow, open_store

from .helpers import heart, set_items

# The shared run takes about two minutes alone and, with the embedded model on the cores others
# leave free, its fair share beside busy neighbours (four times as long beside three demo runs):
# the timeout bounds a hang, not the machine's load.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
N_ITEMS = 4  # of the demo's 12 regular items


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("demo") / "study"
    heart("init", root, "--demo")
    set_items(root, N_ITEMS)
    return root, heart("run", "--study", root).stdout


def _count(root: Path, table: type) -> int:
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    with store.session() as s:
        n = s.scalar(select(func.count()).select_from(table)) or 0
    store.close()
    return int(n)


def test_run_fills_every_stage_and_writes_the_report(demo: tuple[Path, str]) -> None:
    root, out = demo
    n_items = N_ITEMS
    assert _count(root, CompletionRow) == 3 * n_items
    assert _count(root, PairRow) == 3 * n_items
    assert _count(root, JudgmentRow) == 3 * n_items
    with (root / "report" / "leaderboard.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {r["system"] for r in rows} == {"smollm2-135m", "esconv-original", "generic-warmth"}
    assert sum(int(r["comparisons"]) for r in rows) == 2 * 3 * n_items
    assert {r["board"] for r in rows} == {"llm-all"}
    elos = [float(r["elo"]) for r in rows]
    assert abs(sum(elos) / 3 - 1500) < 1e-6
    html = (root / "report" / "index.html").read_text()
    assert "<table id='board-llm-all'>" in html and "smollm2-135m" in html
    assert "HEART leaderboard" in out and "Report:" in out


def test_the_judge_audit_flags_the_embedded_judge_next_to_its_numbers(
    demo: tuple[Path, str],
) -> None:
    root, out = demo
    markdown = (root / "report" / "report.md").read_text()
    board_at = markdown.index("| # | system")
    warning = "Warning: every verdict on this board comes from judges the judge audit flags"
    assert markdown.index(warning) < board_at
    audit_lines = markdown.split("## Judge audit", 1)[1].splitlines()
    header, row = (
        [c.strip() for c in line.strip("|").split("|")]
        for line in (audit_lines[2], next(x for x in audit_lines if x.startswith("| smollm2-")))
    )
    cells = dict(zip(header, row, strict=True))
    assert cells["source"] == "LLM judge"
    # like "0% [0–19%] of 18": SmolLM2 gives one letter whatever it sees
    first_shown = cells["first shown won"]
    share = int(first_shown.split("%")[0])
    assert (share >= 90 or share <= 10) and first_shown.endswith(f"of {3 * N_ITEMS}")
    side, won = ("first", share) if share >= 90 else ("second", 100 - share)
    assert cells["audit"].startswith(f"UNRELIABLE: the reply shown {side} won {won}% [")
    html = (root / "report" / "index.html").read_text()
    assert "<tr class='flag'><td>smollm2-judge</td>" in html
    assert "smollm2-judge: UNRELIABLE" in out

    audit = heart("judges", "audit", "--study", root, check=False)
    assert audit.returncode == 1
    assert "first shown won" in audit.stdout and "Unreliable: smollm2-judge" in audit.stdout


def test_the_demo_report_shows_its_models_time_to_first_token(demo: tuple[Path, str]) -> None:
    root, _ = demo
    with (root / "report" / "latency.csv").open() as handle:
        rows = {r["system"]: r for r in csv.DictReader(handle)}
    smollm2 = rows["smollm2-135m"]  # the embedded model streams: every reply has a TTFT
    assert smollm2["completions"] == smollm2["ttft_completions"] == str(N_ITEMS)
    assert float(smollm2["ttft_q1_ms"]) <= float(smollm2["ttft_median_ms"]) > 0
    assert rows["esconv-original"]["ttft_median_ms"] == "" and rows["generic-warmth"]["no_timings"]
    html = (root / "report" / "index.html").read_text()
    assert "<figure id='latency-figure'>" in html and "<table id='latency-systems'>" in html
    markdown = (root / "report" / "report.md").read_text()
    section = markdown.split("## Latency and capability", 1)[1]
    assert "needs at least 3 systems with timings on the board" in section
    assert "This study's board ranks 1 model" in section  # no index, and none would help


def test_second_run_makes_no_model_calls(demo: tuple[Path, str]) -> None:
    root, _ = demo
    calls_before = _count(root, CallRow)
    out = heart("run", "--study", root).stdout
    done = 3 * N_ITEMS
    generated = f"generate: 0 fixed replies stored, {done} completions already done, 0 model calls"
    assert generated in out
    assert f"judge: 0 new pairs, {done} judgments already done, 0 model calls" in out
    assert _count(root, CallRow) == calls_before


def test_export_import_export_is_identical(demo: tuple[Path, str], tmp_path: Path) -> None:
    root, _ = demo
    first, second, fresh = tmp_path / "b1", tmp_path / "b2", tmp_path / "fresh"
    heart("export", first, "--study", root)
    heart("import", first, "--study", fresh)
    heart("export", second, "--study", fresh)
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    assert "manifest.json" in names and "judgments.jsonl" in names
    data = [n for n in names if n not in ("manifest.json", "provenance.json")]
    match, mismatch, errors = filecmp.cmpfiles(first, second, data, shallow=False)
    assert mismatch == [] and errors == [] and sorted(match) == data
    # the provenance differs only in when it was written and in naming the bundle imported
    origin = json.loads((first / "provenance.json").read_text(encoding="utf-8"))
    carried = json.loads((second / "provenance.json").read_text(encoding="utf-8"))
    assert origin["imported"] == [] and carried["imported"] == [origin]
    skip = ("written_at", "imported", "stages")
    assert {k: v for k, v in carried.items() if k not in skip} == {
        k: v for k, v in origin.items() if k not in skip
    }
    # a bundle carries the answers with their tokens, but not the call cache the adversarial
    # stage's tokens are read from
    stages = [{s["stage"]: s for s in p["stages"]} for p in (origin, carried)]
    adversarial = stages[1].pop("adversarial")
    assert (adversarial["calls"], adversarial["tokens_in"]) == (0, 0)
    del stages[0]["adversarial"]
    assert stages[0] == stages[1]
    manifests = [json.loads((b / "manifest.json").read_text()) for b in (first, second)]
    for manifest in manifests:
        del manifest["files"]["provenance.json"]
    assert manifests[0] == manifests[1]
    # importing the same bundle again adds nothing and changes nothing
    out = heart("import", first, "--study", fresh).stdout
    assert "nothing new" in out
