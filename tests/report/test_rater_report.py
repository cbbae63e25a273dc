"""The report's per-rater quality table: people who judged in the web app, their measures with
the evidence behind them, every flag with its reason, and the decision."""

from __future__ import annotations

from pathlib import Path

from heart.config import PairsSpec, PeopleSpec, parse_study
from heart.judging import build_pairs
from heart.people import JUDGE, claim, invite, submit_judgment, sync_tasks
from heart.report import gather_facts, render_markdown
from heart.store import Store, SystemRow
from heart.study import Study

from ..rows import seed_study


def test_the_report_shows_each_raters_quality_and_flags_with_reasons(
    store: Store, tmp_path: Path
) -> None:
    seed_study(store, ["m1", "m2", "m3", "m4"], items=4, completions=True)  # 24 pairs
    with store.session() as s:
        s.merge(SystemRow(name="human", kind="human", family="human", spec={}))
    build_pairs(store, PairsSpec(), seed=0)
    sync_tasks(store, PeopleSpec(check_every=0, raters_per_pair=1), seed=0)
    (hasty, _), (careful, _) = invite(store, 2)
    for n in range(20):  # always A, in a second: excluded at the 20th verdict
        task = claim(store, hasty, JUDGE, now=1000.0 * n, seconds=3600)
        assert task is not None
        submit_judgment(store, hasty, task, "A++", "", now=1000.0 * n + 1)
    for n, choice in enumerate(["A+", "B+", "="]):  # three verdicts: too few for any flag
        task = claim(store, careful, JUDGE, now=1000.0 * n, seconds=3600)
        assert task is not None
        submit_judgment(store, careful, task, choice, "", now=1000.0 * n + 40)
    study = Study(
        tmp_path, parse_study("name: s\nsystems: [{name: m1, kind: dataset, family: m1}]"), store
    )
    markdown = render_markdown(gather_facts(study))
    section = markdown[markdown.index("Human raters: quality per rater") :]
    (hasty_row,) = [line for line in section.splitlines() if line.startswith(f"| {hasty} ")]
    assert "| 0 | 20 | 100% [72–100%] of 20 |" in hasty_row  # none counted, 20 verdicts
    assert "position (excludes): the reply shown first won 100% [72–100%] of 20 verdicts" in (
        hasty_row
    )
    assert "run: gave “A++” 20 times in a row" in hasty_row
    assert "| keep out: excluded (position (people.exclude_flags)" in hasty_row
    (careful_row,) = [line for line in section.splitlines() if line.startswith(f"| {careful} ")]
    assert "| 3 | 3 (1 tie) | 50% [" in careful_row and "| none | approve: no quality flag |" in (
        careful_row
    )
    assert "These raters judged without the HEART rubric (people.show_rubric is off)" in section

    shown = Study(
        tmp_path,
        parse_study(
            "name: s\nsystems: [{name: m1, kind: dataset, family: m1}]\n"
            "people: {show_rubric: true}\n"
        ),
        store,
    )
    section = render_markdown(gather_facts(shown))
    assert "These raters read the five HEART axes before judging (people.show_rubric)" in section
