"""What the report states about a study's verdicts: counted, left out, failed."""

from __future__ import annotations

from pathlib import Path

from heart.config import parse_study
from heart.report import gather_facts, render_markdown
from heart.report._facts import JudgeCounts
from heart.store import JudgmentRow, RaterRow, Store
from heart.study import Study

from ..rows import Verdict, seed_verdicts


def test_verdicts_of_an_excluded_rater_are_stated_as_left_out(store: Store, tmp_path: Path) -> None:
    verdicts = [Verdict(i, "m1", "m2", judge, "a") for i in range(3) for judge in ("g", "r1", "r2")]
    seed_verdicts(store, verdicts, sources={"r1": "human", "r2": "human"})
    with store.session() as s:
        s.add(RaterRow(id="r1", meta={}, created_at="x"))
        s.add(RaterRow(id="r2", meta={}, excluded_reason="failed 2 of 2 checks", created_at="x"))
        failed = s.get(JudgmentRow, "p-0-m1-m2-g-ab")
        assert failed is not None
        failed.status, failed.winner = "failed", None
    study = Study(
        tmp_path, parse_study("name: s\nsystems: [{name: m1, kind: dataset, family: m1}]"), store
    )
    facts = gather_facts(study)
    assert facts.judgments == {
        "g": JudgeCounts(counted=2, left_out=0, failed=1),
        "r1": JudgeCounts(counted=3, left_out=0, failed=0),
        "r2": JudgeCounts(counted=0, left_out=3, failed=0),
    }
    markdown = render_markdown(facts)
    assert "- judgments by `r2`: 0 counted, 3 valid but left out, 0 failed" in markdown
