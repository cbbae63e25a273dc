"""Fragile orders on a board: the fewest verdicts and conversations that flip each adjacent
pair, in leaderboard.csv and, under 1% of the board's verdicts, marked in the report."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from heart.analyses import load_comparisons
from heart.config import parse_study
from heart.report import csv_files, gather_facts, render_markdown
from heart.stats import fewest_removals
from heart.store import Store
from heart.study import Study

from ..rows import Verdict, seed_verdicts


def test_a_near_tie_is_marked_fragile_and_counted_in_the_csv(store: Store, tmp_path: Path) -> None:
    # 30 conversations, in each 10 judges' verdicts between s1 and s2 (s1 wins 152 of the 300)
    # and between s2 and s3 (s2 wins 8 of 10)
    verdicts = []
    for i in range(30):
        verdicts += [Verdict(i, "s1", "s2", f"g{n}", "a" if i * 10 + n < 152 else "b")
                     for n in range(10)]  # fmt: skip
        verdicts += [Verdict(i, "s2", "s3", f"g{n}", "a" if n < 8 else "b") for n in range(10)]
    seed_verdicts(store, verdicts)
    study = Study(
        tmp_path,
        parse_study(
            "name: s\nsystems: [{name: s1, kind: dataset, family: s1}]\n"
            "ratings: {bootstrap_rounds: 100}\n"
        ),
        store,
    )
    facts = gather_facts(study)
    rows = {r["system"]: r for r in csv.DictReader(io.StringIO(csv_files(facts)["leaderboard.csv"]))
            if r["board"] == "llm-all"}  # fmt: skip
    comparisons = load_comparisons(store)
    s = comparisons.systems
    share = np.select([comparisons.outcome == 0, comparisons.outcome == 2], [1.0, 0.5], 0.0)
    by_hand = fewest_removals(
        comparisons.a,
        comparisons.b,
        share,
        comparisons.strength,
        np.arange(len(comparisons)),
        3,
        s.index("s1"),
        s.index("s2"),
    )
    assert by_hand.count == 4  # 152 − k wins against 148 ties at k = 4
    assert rows["s1"]["flip_verdicts"] == "4" and rows["s1"]["flip_bound"] == "false"
    assert int(rows["s1"]["flip_conversations"]) >= 1
    assert rows["s3"]["flip_verdicts"] == ""  # the last has nothing below it
    markdown = render_markdown(facts)
    assert (
        "Fragile order, flipped by removing under 1% of the board's verdicts: s1 above s2: "
        "4 of 600 verdicts (0.7%)" in markdown
    )
    assert "s2 above s3" not in markdown.split("Fragile order")[1].split("\n")[0]
