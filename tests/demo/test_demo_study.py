"""The bundled demo study: a human system that people's replies go to, so `heart serve` starts
on it as made, and a report that stays honest while that system has no replies."""

from __future__ import annotations

import csv
from pathlib import Path

from heart.store import open_store
from heart.study import open_study
from heart.types import SystemKind

from ..helpers import heart
from ..rows import Verdict, seed_verdicts

SYSTEMS = ["smollm2-135m", "esconv-original", "generic-warmth"]
KINDS = {"esconv-original": "dataset", "generic-warmth": "control"}


def test_the_demo_study_has_the_human_system_people_write_for(tmp_path: Path) -> None:
    heart("init", tmp_path / "demo", "--demo")
    with open_study(tmp_path / "demo") as study:
        human = study.config.human_system()
        assert (human.name, human.kind, human.family) == ("human", SystemKind.HUMAN, "human")
        assert [s.name for s in study.config.systems] == [*SYSTEMS, "human"]


def test_the_demo_report_counts_no_human_reply_and_ranks_only_systems_with_verdicts(
    tmp_path: Path,
) -> None:
    """Before anyone writes, the human system has no reply, no pair and no verdict: the report
    says it has none yet, and its board ranks the three other systems alone."""
    root = tmp_path / "demo"
    heart("init", root, "--demo")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    verdicts = [
        Verdict(i, SYSTEMS[x], SYSTEMS[y], "smollm2-judge", "a" if (i + x) % 3 else "b")
        for i in range(4)
        for x in range(3)
        for y in range(x + 1, 3)
    ]
    seed_verdicts(store, verdicts, kinds=KINDS)
    store.close()
    heart("report", "--study", root)
    markdown = (root / "report" / "report.md").read_text(encoding="utf-8")
    assert "- completions by `human`: none yet" in markdown
    assert "- completions by `smollm2-135m`: 4 ok, 0 failed" in markdown
    with (root / "report" / "leaderboard.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(r["system"] for r in rows) == sorted(SYSTEMS)
    assert sum(int(r["comparisons"]) for r in rows) == 2 * len(verdicts)
    assert "Best human" not in markdown
