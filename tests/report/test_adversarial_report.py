"""The report's adversarial section: what the stage made, the hostility rater check, regular
against adversarial Elo, in HTML, Markdown and CSV; and the section of a study without any."""

from __future__ import annotations

import csv
from pathlib import Path

from heart.report import gather_facts, write_report
from heart.store import ConversationRow, RewriteRow, open_store
from heart.study import create_study, open_study

from ..rows import Verdict, seed_verdicts

ADVERSARIAL = range(6, 10)


def _study(root: Path) -> Path:
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    verdicts = []
    for i in range(10):
        tough = i in ADVERSARIAL
        verdicts += [
            Verdict(i, "m1", "m2", "g", "b" if tough else "a", 2),
            Verdict(i, "m1", "m3", "g", "b" if tough else "a"),
            Verdict(i, "m2", "m3", "g", "a" if i % 2 else "b"),
        ]
        if not tough:
            verdicts.append(Verdict(i, "ds", "m1", "g", "b"))
    seed_verdicts(store, verdicts, adversarial=ADVERSARIAL)
    with store.session() as s:
        s.add(
            RewriteRow(
                id="c6:0-6", conversation_id="c6", start=0, end=6, profile="mid-spike",
                targets=[2, 10, 10], status="kept", attempts=1, reasons=[], turns=[],
                ratings=[3, 9, 10], source_ratings=[1, 2, 1], item_id="i6", calls=[],
                created_at="x",
            )
        )  # fmt: skip
        s.add(
            RewriteRow(
                id="c7:0-6", conversation_id="c7", start=0, end=6, profile="always-10",
                targets=[10, 10, 10], status="rejected", attempts=3,
                reasons=["mild_ending: last turn 4, at least 8", "off_target: turn 3: 4 for 10"],
                turns=[], ratings=[9, 8, 4], source_ratings=[1, 1, 2], item_id=None, calls=[],
                created_at="x",
            )
        )  # fmt: skip
    store.close()
    return root


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_the_adversarial_section_reports_the_stage_the_rater_and_the_shift(tmp_path: Path) -> None:
    root = _study(tmp_path / "study")
    with open_study(root) as study:
        facts = gather_facts(study)
        write_report(facts, study.report_dir)
    html = (root / "report" / "index.html").read_text()
    for key in ("adversarial-items", "hostility-rater", "subsets-llm"):
        assert f"<table id='{key}'>" in html
    assert "<figure id='hostility'>" in html
    assert "takes no part in adversarial items" in html
    md = (root / "report" / "report.md").read_text()
    section = md.split("## Adversarial items", 1)[1].split("## Agreement", 1)[0]
    assert "| mid-spike | 1 | 1 | 0 | – |" in section
    assert "| always-10 | 1 | 0 | 1 | mild_ending 1, off_target 1 |" in section
    assert "On regular items only: ds." in section
    report = root / "report"
    profiles = {r["profile"]: r for r in _rows(report / "adversarial.csv")}
    assert profiles["always-10"]["reasons"] == "mild_ending=1; off_target=1"
    (rater,) = _rows(report / "hostility_rater.csv")
    assert (int(rater["turns"]), float(rater["mean_error"])) == (6, 11 / 6)
    shifts = {r["system"]: r for r in _rows(report / "subsets.csv")}
    assert set(shifts) == {"m1", "m2", "m3"} and float(shifts["m1"]["shift"]) < 0
    assert facts.subsets[0].shifts[0].system == shifts["m1"]["system"]


def test_a_study_without_adversarial_items_says_how_to_make_them(tmp_path: Path) -> None:
    root = tmp_path / "study"
    create_study(root, demo=True)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_verdicts(store, [Verdict(i, "m1", "m2", "g", "a") for i in range(3)])
    with store.session() as s:
        assert s.get(ConversationRow, "c0") is not None
    store.close()
    with open_study(root) as study:
        write_report(gather_facts(study), study.report_dir)
    md = (root / "report" / "report.md").read_text()
    assert "This study has no adversarial items: set items.adversarial" in md
    assert not (root / "report" / "adversarial.csv").exists()
