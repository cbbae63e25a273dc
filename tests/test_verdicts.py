"""`heart export --verdicts` and `heart items show`: one row per verdict, every value checked
by hand against what was stored, in every format, and the same whatever order data came in."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from heart.cli import app
from heart.verdicts import VERDICT_COLUMNS

from .helpers import heart
from .verdict_study import PEOPLE, REPLIES, make_study

runner = CliRunner()


def _export(root: Path, out: Path) -> str:
    done = runner.invoke(app, ["export", "--verdicts", str(out), "--study", str(root)])
    assert done.exit_code == 0, done.output
    return done.output


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _by_key(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """Rows by (judge, a_system, b_system, order)."""
    return {(r["judge"], r["a_system"], r["b_system"], r["order"]): r for r in rows}


def test_verdicts_jsonl_holds_one_row_per_valid_verdict_as_stored(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    out = tmp_path / "v.jsonl"
    said = _export(root, out)
    rows = _jsonl(out)
    # 2 LLM verdicts (the failed call gave none) + 2 from rater r1 + 1 from rater r2
    assert len(rows) == 5 and "Wrote 5 verdicts (4 counted)" in said
    assert all(list(r) == list(VERDICT_COLUMNS) for r in rows)
    by = _by_key(rows)
    ab = by["judge-g", "gpt", "claude", "ab"]
    assert (ab["first_system"], ab["winner"], ab["winner_system"], ab["strength"]) == (
        "gpt", "a", "gpt", 3,
    )  # fmt: skip
    assert (ab["H_winner"], ab["H_strength"], ab["E_winner"], ab["E_strength"]) == (
        "a",
        2,
        "none",
        None,
    )
    assert (ab["R_winner"], ab["R_strength"]) == ("b", 1)
    assert (ab["judge_source"], ab["judge_family"], ab["imported"]) == ("llm", "google", False)
    assert (ab["tokens_in"], ab["tokens_out"], ab["cost_usd"], ab["latency_ms"]) == (
        500,
        60,
        0.0012,
        850.0,
    )
    assert (ab["conversation_id"], ab["subset"], ab["problem_type"]) == (
        "c1",
        "regular",
        "job crisis",
    )
    ba = by["judge-g", "gpt", "claude", "ba"]
    # shown claude first; the stored winner b is claude in the pair's own terms
    assert (ba["first_system"], ba["winner"], ba["winner_system"], ba["cost_usd"]) == (
        "claude", "b", "claude", None,
    )  # fmt: skip
    # r1's file row "claude,gpt,a": claude shown first and chosen, kept as pair order ba, winner b
    r1 = by["r1", "gpt", "claude", "ba"]
    assert (r1["first_system"], r1["winner_system"], r1["strength"]) == ("claude", "claude", 1)
    assert (r1["judge_source"], r1["judge_family"], r1["imported"], r1["H_winner"]) == (
        "human", "human", True, None,
    )  # fmt: skip
    r1_people = by["r1", "gpt", "people", "ab"]
    assert (r1_people["b_contributor"], r1_people["winner_system"]) == ("r9", "people")
    assert r1_people["rationale"] == "sounds like a person" and r1_people["counted"] is True
    r2 = by["r2", "people", "claude", "ab"]
    assert (r2["winner"], r2["winner_system"], r2["rationale"]) == ("tie", "", "=both fine")
    assert (r2["excluded"], r2["counted"], r2["left_out"]) == (
        "failed 2 of 3 checks", False, "by a rater excluded by quality control",
    )  # fmt: skip


def test_csv_and_parquet_hold_the_same_rows_as_jsonl(tmp_path: Path) -> None:
    pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
    root = make_study(tmp_path / "s")
    for name in ("v.jsonl", "v.csv", "v.parquet"):
        _export(root, tmp_path / name)
    rows = _jsonl(tmp_path / "v.jsonl")
    with (tmp_path / "v.csv").open(newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert table[0] == list(VERDICT_COLUMNS)

    def cell(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    expected = [[cell(v) for v in r.values()] for r in rows]
    expected = [[("'" + c if c.startswith("=") else c) for c in row] for row in expected]
    assert table[1:] == expected  # a rationale starting "=" is kept from running as a formula
    parquet = pyarrow_parquet.read_table(tmp_path / "v.parquet")
    assert parquet.column_names == list(VERDICT_COLUMNS)
    assert parquet.to_pylist() == rows
    assert str(parquet.schema.field("strength").type) == "int64"
    assert str(parquet.schema.field("counted").type) == "bool"


def test_verdicts_are_the_same_whatever_order_the_files_came_in(tmp_path: Path) -> None:
    tables = []
    for order in ("12", "21"):
        root = make_study(tmp_path / f"s{order}", imports=order)
        _export(root, tmp_path / f"v{order}.jsonl")
        tables.append(
            [{k: v for k, v in r.items() if k != "created_at"}
             for r in _jsonl(tmp_path / f"v{order}.jsonl")]
        )  # fmt: skip
    assert tables[0] == tables[1] and len(tables[0]) == 5


def test_a_verdicts_file_of_another_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    done = heart("export", "--verdicts", tmp_path / "v.xlsx", "--study", root, check=False)
    assert done.returncode == 2
    assert done.stdout.strip().splitlines() == [
        f"error: {tmp_path / 'v.xlsx'}: the verdicts file must end in .csv, .jsonl or .parquet, "
        "got .xlsx"
    ]
    assert not (tmp_path / "v.xlsx").exists()
    both = runner.invoke(app, ["export", str(tmp_path / "b"), "--verdicts", "v.csv"])
    assert both.exit_code != 0


def test_parquet_without_pyarrow_says_which_extra_to_install(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    out = tmp_path / "v.parquet"
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None\n"
        "from heart.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "export", "--verdicts", str(out), "--study", str(root)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout.strip().splitlines() == [
        "error: writing Parquet needs pyarrow.parquet, which is not installed: "
        "pip install 'heart-bench[parquet]'"
    ]
    assert not out.exists() and not list(tmp_path.glob(".v.parquet*"))


def _show(root: Path, *args: str) -> str:
    done = runner.invoke(app, ["items", "show", "i0", "--study", str(root), *args],
                         env={"COLUMNS": "300"})  # fmt: skip
    assert done.exit_code == 0, done.output
    return done.output


def test_items_show_prints_every_reply_and_every_verdict(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    out = _show(root)
    assert "Seeker: I don't know what to do." in out and "original reply: Tell me more." in out
    assert "Replies (4)" in out
    for line in (f"gpt: {REPLIES['gpt']}", f"claude: {REPLIES['claude']}",
                 f"people (r9): {PEOPLE}", "broken: failed: timed out"):  # fmt: skip
        assert line in out
    assert "Verdicts (5, 4 counted)" in out
    assert "judge-g (llm, google) saw gpt first, then claude: gpt wins, strength 3" in out
    assert "axes: H gpt 2; E none; A gpt 1; R claude 1; T none" in out
    assert "judge-g (llm, google) saw claude first, then gpt: claude wins, strength 2" in out
    assert "r1 (human, human, imported) saw gpt first, then people (r9): people (r9) wins" in out
    assert "r2 (human, human, imported) saw people (r9) first, then claude: tie" in out
    assert "rationale: =both fine" in out
    assert "left out: by a rater excluded by quality control" in out
    assert "rater excluded: failed 2 of 3 checks" in out


def test_items_show_filters_by_system_and_by_judge(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    out = _show(root, "--system", "people")
    assert "Replies (1)" in out and f"people (r9): {PEOPLE}" in out and "gpt: " not in out
    assert "Verdicts on pairs with people (2, 1 counted)" in out and "judge-g" not in out
    out = _show(root, "--judge", "judge-g")
    assert "Replies (4)" in out and "Verdicts by judge-g (2, 2 counted)" in out
    assert "r1 (" not in out and "r2 (" not in out
    out = _show(root, "--judge", "r1", "--system", "claude")
    assert "Verdicts on pairs with claude by r1 (1, 1 counted)" in out
    out = _show(root, "--system", "broken")
    assert "broken: failed: timed out" in out and "Verdicts on pairs with broken: none yet" in out


def test_items_show_names_the_choices_for_an_unknown_judge(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    done = heart("items", "show", "i0", "--judge", "nobody", "--study", root, check=False)
    assert done.returncode == 2
    assert done.stdout.strip() == (
        "error: --judge 'nobody': this study has no such judge; it has: judge-g, r1, r2"
    )
