"""The report on people against LLM judges: the per-system gaps in words, in a table and in
judge_vs_people.csv, and the judge-assisted board beside the people's with its λ."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from heart.config import parse_study
from heart.report import csv_files, gather_facts, render_markdown
from heart.store import Store, open_store
from heart.study import Study

from ..helpers import heart
from ..rows import Verdict, seed_verdicts

PAIRS = [("s1", "s2"), ("s2", "s3"), ("s3", "s1")]
PEOPLE = ["h1", "h2", "h3"]


def _verdicts() -> list[Verdict]:
    """Twelve items: the judge on every pair and always for s1; people on the first eight."""
    out = []
    for i in range(12):
        for n, (a, b) in enumerate(PAIRS):
            s1_side = "a" if a == "s1" else "b" if b == "s1" else "ab"[i % 2]
            out.append(Verdict(i, a, b, "g1", s1_side, 2))
            if i < 8:
                out += [Verdict(i, a, b, p, "ab"[(i + n + r) % 2], 1) for r, p in enumerate(PEOPLE)]
    return out


@pytest.fixture
def study(store: Store, tmp_path: Path) -> Study:
    seed_verdicts(store, _verdicts(), sources={p: "human" for p in PEOPLE})
    config = parse_study(
        "name: s\nsystems: [{name: s1, kind: dataset, family: s1}]\n"
        "ratings: {bootstrap_rounds: 200}\n"
    )
    return Study(tmp_path, config, store)


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_report_says_where_the_judge_parts_from_people(study: Study) -> None:
    facts = gather_facts(study)
    (found,) = facts.judges_vs_people
    files = csv_files(facts)
    rows = _rows(files["judge_vs_people.csv"])
    assert [r["system"] for r in rows] == [s.system for s in found.systems]
    for row, s in zip(rows, found.systems, strict=True):
        assert row["judge"] == "g1" and row["judge_audit"] in {"passed", "flagged", "not audited"}
        assert float(row["gap"]) == s.gap and float(row["elo_people"]) == s.elo_people
        assert (int(row["verdicts_judge"]), int(row["verdicts_people"])) == (16, 48)
        assert (int(row["conversations"]), int(row["item_pairs"])) == (8, 24)
        assert row["apart"] == ("true" if s.apart else "false")
    markdown = render_markdown(facts)
    section = markdown[markdown.index("## Judges against people") :]
    assert "g1 rates s1" in section and "than people do, beyond noise" in section
    assert "| s1 |" in section and "τ" in section


def test_the_assisted_board_stands_beside_the_peoples_with_its_lambda(study: Study) -> None:
    facts = gather_facts(study)
    keys = [b.key for b in facts.boards]
    assert keys.index("assisted-all") == keys.index("human-all") + 1
    board = facts.boards[keys.index("assisted-all")]
    assert board.assistance is not None
    help_ = board.assistance
    assert (help_.labelled, help_.unlabelled_pairs, help_.judge_verdicts) == (72, 36, 36)
    rows = [r for r in _rows(csv_files(facts)["leaderboard.csv"]) if r["board"] == "assisted-all"]
    assert {r["system"] for r in rows} == {"s1", "s2", "s3"}
    assert {float(r["lambda"]) for r in rows} == {help_.lam}
    assert all(r["lambda"] == "" for r in _rows(csv_files(facts)["leaderboard.csv"])
               if r["board"] != "assisted-all")  # fmt: skip
    markdown = render_markdown(facts)
    section = markdown[markdown.index("## human raters helped by the LLM judges, all items") :]
    assert f"λ = {help_.lam:.2f}" in section
    assert "72 people's verdicts on item-pairs they also judged" in section


def test_the_terminal_names_the_gaps_and_prints_the_assisted_board(tmp_path: Path) -> None:
    root = tmp_path / "study"
    root.mkdir()
    (root / "study.yaml").write_text(
        "name: s\nsystems: [{name: s1, kind: dataset, family: s1}]\n"
        "ratings: {bootstrap_rounds: 200}\n"
    )
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_verdicts(store, _verdicts(), sources={p: "human" for p in PEOPLE})
    store.close()
    audit = heart("judges", "audit", "--study", root).stdout
    line = next(x for x in audit.splitlines() if x.startswith("g1 rates s1"))
    assert "than people do, beyond noise (24 item-pairs both judged, 8 conversations)" in line
    assert "Orders: τ" in line
    board = heart("leaderboard", "--study", root, "--judges", "assisted").stdout
    assert "human raters helped by the LLM judges, all items" in board
    assert "People's verdicts with the LLM judges' help: λ = " in board
    assert "│ H " not in board  # people give one preference: no axis columns
    wrong = heart("leaderboard", "--study", root, "--judges", "judges", check=False)
    assert wrong.returncode == 2 and "--judges must be llm, human, all or assisted" in wrong.stdout


def test_the_python_api_gives_the_assisted_board_and_the_gaps(study: Study) -> None:
    from heart import pipeline
    from heart.errors import HeartError

    board = pipeline.leaderboard(study, "assisted")
    assert board.key == "assisted-all" and board.assistance is not None
    assert {"lambda"} <= set(board.to_pandas().columns)
    (found,) = pipeline.judges_vs_people(study)
    assert found.judge == "g1" and found.verdicts_people == 72
    with pytest.raises(HeartError, match="no verdicts on 'adversarial' items"):
        pipeline.leaderboard(study, "assisted", "adversarial")
