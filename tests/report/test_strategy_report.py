"""The report's Strategies section on the crafted study: its tables, its CSVs at full precision
with empty cells where there is no data, the note of a study nothing was classified in, the
warning of a flagged classifier, and how it looks in headless Chromium."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest

from heart.config import parse_study
from heart.report import csv_files, gather_facts, render_html, render_markdown, write_report
from heart.report._facts import StudyFacts
from heart.store import Store, open_store
from heart.study import Study

from ..helpers import CHROMIUM, require_chromium
from ..strategy_rows import AF, CL, add_item, add_reply, crafted_study

OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
STUDY = "name: strategies\nsystems: [{name: human, kind: human, family: human}]"


def _facts(store: Store, root: Path) -> StudyFacts:
    return gather_facts(Study(root, parse_study(STUDY), store))


def _flag(store: Store) -> None:
    """Thirty more ESConv originals where a question was asked and only affirmation seen."""
    for n in range(30):
        add_item(store, f"q{n}", f"cq{n}", esconv=["Question"])
        add_reply(store, f"q{n}", "esconv-original", present=[AF])


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_section_shows_usage_diversity_gaps_and_the_classifier(
    store: Store, tmp_path: Path
) -> None:
    crafted_study(store)
    markdown = render_markdown(_facts(store, tmp_path))
    section = markdown.split("## Strategies", 1)[1].split("## Judge audit", 1)[0]
    assert section.lstrip().startswith("39 replies classified by embedded:")
    assert "Caution: only 6 replies can be scored against human consensus" in section
    assert "**Warning" not in section
    usage = section.split("### Strategy use by family", 1)[1]
    assert "| strategy | human (12) | fa (12) | fb (5) | dataset (4) |" in usage
    assert "| Clarification | 67% | 0% | 0% | 25% |" in usage
    assert "| human | human | 12 | 4 of 15 | 1.83 | 1.94 | 21.5 | 66.7 |" in section
    assert "| fa | Clarification | 67% | 0% | +66.7 |" in section
    assert "| macro F1 |  | 0.42 [" in section  # against ESConv
    assert "| Suggest Options | Providing Suggestions | 0.00 [0.00–0.00] | 1 | 0 |" in section
    assert (
        "| Reflective Statements | Restatement or Paraphrasing or Reflection of feelings | 0.67 ["
    ) in section
    unscored = section.split("### Strategies ESConv's annotations cannot score", 1)[1]
    assert "| Chit Chat | ESConv files pleasantries under Others together with" in unscored
    assert "5 of the 15 strategies have no counterpart among ESConv's labels" in unscored
    assert "Left out as disagreements: 1 of the 7 labelled replies" in section
    assert "| warm | control | 6 | 1 of 15 |" in section  # the control, per system only
    assert "| human, regular (8) |" in section and "| adversarial | human | human | 4 |" in section


def test_csvs_hold_the_figures_at_full_precision(store: Store, tmp_path: Path) -> None:
    crafted_study(store)
    facts = _facts(store, tmp_path)
    report = facts.strategies
    assert report is not None
    files = csv_files(facts)

    usage = {(r["scope"], r["items"], r["group"], r["strategy"]): r
             for r in _rows(files["strategy_usage.csv"])}  # fmt: skip
    human_cl = usage["family", "all", "human", CL]
    assert (human_cl["replies"], human_cl["uses"], float(human_cl["rate"])) == ("12", "8", 8 / 12)
    assert usage["system", "all", "warm", "Emotional Validation"]["rate"] == "1.0"
    assert ("family", "adversarial", "fb", CL) in usage
    assert len(usage) == 15 * (6 + 4 + 7)  # systems, families, families per subset

    diversity = {(r["scope"], r["items"], r["group"]): r
                 for r in _rows(files["strategy_diversity.csv"])}  # fmt: skip
    human = next(u for u in report.families if u.group == "human").diversity
    row = diversity["family", "all", "human"]
    assert float(row["entropy_bits"]) == human.entropy_bits
    assert float(row["sd_points"]) == human.sd_points
    assert float(row["range_points"]) == human.range_points == pytest.approx(800 / 12)
    assert (row["coverage"], row["strategies"], row["kind"]) == ("4", "15", "human")

    gaps = {(r["family"], r["strategy"]): r for r in _rows(files["strategy_differences.csv"])}
    assert len(gaps) == 30
    fa_cl = gaps["fa", CL]
    assert float(fa_cl["difference"]) == 8 / 12 and fa_cl["significant"] in ("true", "false")
    gap = next(g for g in report.gaps if (g.family, g.strategy) == ("fa", CL))
    assert (float(fa_cl["low"]), float(fa_cl["p_bh"])) == (gap.difference.low,
                                                           gap.difference.p_adjusted)  # fmt: skip

    f1 = {(r["uncertain"], r["strategy"]): r for r in _rows(files["classifier_f1.csv"])}
    check = report.check("human consensus")
    assert check is not None
    macro = f1["absent", "macro"]
    assert float(macro["f1"]) == check.result.macro and macro["flagged"] == "false"
    assert (macro["tp"], macro["esconv_labels"]) == ("", "")
    assert float(f1["absent", "Emotional Validation"]["f1"]) == 10 / 11
    nobody = f1["absent", "Chit Chat"]  # neither side marked it: no F1, empty cells
    assert (nobody["f1"], nobody["low"], nobody["high"], nobody["tp"]) == ("", "", "", "0")
    assert float(f1["left out", "Suggest Options"]["f1"]) == 1.0

    audit = {r["strategy"]: r for r in _rows(files["classifier_audit.csv"])}
    assert list(audit) == [
        "macro", AF, CL, "Emotional Validation", "Normalize Experiences", "Offer Hope",
        "Promote Self-Care Practices", "Reflective Statements", "Share Information",
        "Stress Management", "Suggest Options",
        # not scored, with why
        "Avoid Judgment and Criticism", "Collaborative Planning",
        "Provide Different Perspectives", "Reframe Negative Thoughts", "Chit Chat",
    ]  # fmt: skip
    assert float(audit["macro"]["f1"]) == pytest.approx(5 / 12) and audit["macro"]["replies"] == "4"
    assert audit[CL]["esconv_labels"] == "Question"
    assert audit[AF]["esconv_labels"] == "Affirmation and Reassurance"
    rs = audit["Reflective Statements"]  # found on i2, missed on i3
    assert (rs["tp"], rs["fp"], rs["fn"], rs["not_scored"]) == ("1", "0", "1", "")
    assert rs["esconv_labels"] == "Restatement or Paraphrasing; Reflection of feelings"
    chat = audit["Chit Chat"]
    assert (chat["f1"], chat["tp"], chat["replies"], chat["esconv_labels"]) == ("", "", "", "")
    assert chat["not_scored"].startswith("ESConv files pleasantries under Others")
    assert all(r["not_scored"] == "" for r in _rows(files["classifier_f1.csv"]))
    for name in ("strategy_usage.csv", "strategy_diversity.csv", "classifier_f1.csv"):
        for r in _rows(files[name]):
            assert all("%" not in v and "[" not in v for v in r.values()), (name, r)
            for column in ("rate", "f1", "entropy_bits"):
                if r.get(column):
                    assert not math.isnan(float(r[column]))


def test_a_study_without_classifications_gets_one_line_on_how_to_make_them(
    store: Store, tmp_path: Path
) -> None:
    add_item(store, "i0", "c0")
    add_reply(store, "i0", "m1", present=[CL], classifier="openai:someone-else@https://x")
    facts = _facts(store, tmp_path)
    assert facts.strategies is None
    markdown = render_markdown(facts)
    section = markdown.split("## Strategies", 1)[1].split("\n## ", 1)[0]
    assert section.strip() == (
        "No strategy classifications yet: run `heart strategies`, or set strategies.classifier "
        "for `heart run`."
    )
    assert not any(name.startswith(("strategy_", "classifier_")) for name in csv_files(facts))
    assert "strategy-heatmap" not in render_html(facts)


def test_a_study_where_only_a_control_was_classified_has_no_family_and_no_figure(
    store: Store, tmp_path: Path
) -> None:
    add_item(store, "i0", "c0")
    add_reply(store, "i0", "warm", present=[CL])
    facts = _facts(store, tmp_path)
    assert facts.strategies is not None and facts.strategies.families == []
    assert [u.group for u in facts.strategies.systems] == ["warm"]
    page = render_html(facts)
    assert "strategy-heatmap" not in page and "<table id='strategy-use-systems'>" in page


def test_a_flagged_classifier_is_warned_about_before_the_section(
    store: Store, tmp_path: Path
) -> None:
    crafted_study(store)
    _flag(store)
    facts = _facts(store, tmp_path)
    assert facts.strategies is not None and facts.strategies.flagged
    # CL: 1 hit, 30 missed; AF: 1 hit, 30 seen wrongly; EV and RS 2/3 each; PS, SI, SM, SO: 0
    audit = facts.strategies.check("ESConv annotations")
    assert audit is not None
    assert audit.result.macro == pytest.approx((2 / 32 + 2 / 32 + 2 / 3 + 2 / 3) / 8)
    section = render_markdown(facts).split("## Strategies", 1)[1]
    first = section.lstrip().split("\n\n", 1)[0]
    assert first.startswith(
        "**Warning: the strategy classifier embedded:smollm2-135m-instruct-q4_1@in-process is "
        "unreliable (its macro F1 against ESConv annotations is 0.18"
    )
    assert first.endswith("on 34 replies, below 0.5), so the figures below may not say which "
                          "strategies the replies use.**")  # fmt: skip
    page = render_html(facts)
    strategies = page.split("<h2 id='strategies'>", 1)[1]
    assert strategies.startswith("Strategies</h2><p class='flag' id='strategy-warning'>Warning:")
    row = _rows(csv_files(facts)["classifier_audit.csv"])[0]
    assert (row["strategy"], row["flagged"], row["replies"]) == ("macro", "true", "34")


def test_the_section_renders_in_headless_chromium(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    store = open_store(f"sqlite:///{tmp_path / 'heart.db'}")
    crafted_study(store)
    _flag(store)
    path = write_report(_facts(store, tmp_path), tmp_path / "report")
    store.close()
    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(path.as_uri())
        page.locator("#strategies").scroll_into_view_if_needed()
        page.screenshot(path=str(OUTPUT / "report-strategies.png"), full_page=True)
        warning = page.locator("#strategy-warning")
        assert warning.is_visible()
        assert warning.evaluate("e => getComputedStyle(e).color") == "rgb(176, 0, 32)"
        rows = page.locator("#strategy-use tbody tr")
        assert rows.count() == 15
        # the 30 added ESConv replies make Affirmation the most used strategy overall
        assert rows.first.locator("td").all_inner_texts() == ["Affirmation", "0%", "0%", "100%",
                                                              "91%"]  # fmt: skip
        figure = page.locator("#strategy-heatmap img")
        assert figure.evaluate("e => e.naturalWidth") > 500
        assert page.locator("#classifier-audit tbody tr").count() == 11  # macro and 10 scored
        assert page.locator("#classifier-audit-unscored tbody tr").count() == 5
        assert page.locator("nav a[href='#strategies']").count() == 1
        browser.close()
