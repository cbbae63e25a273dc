"""Paid sessions on a phone in headless Chromium (390 × 844, touch): a Prolific participant led
through writing then judging, who sees the completion code only once the fourth task is saved;
a rater who answers faster than anyone can read, warned and then excluded, reading a kind end
page with the study's code for it; and one whose practice stays wrong after two tries. Page
heights at 390 px are asserted (and the comparison at 1280 px keeps its replies side by side).
Screenshots go to test-output/ (session-*.png)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from heart.people import prolific_rater
from heart.store import CompletionRow, JudgmentRow, RaterRow, TaskRow

from ..helpers import CHROMIUM, require_chromium
from .conftest import WebStudy, serving

MakeStudy = Callable[..., WebStudy]
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
SCREEN = 844
ENTRY = "/prolific?PROLIFIC_PID=5f1a2b&STUDY_ID=st-9&SESSION_ID=se-1"


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


@contextmanager
def _chromium_on(study: WebStudy) -> Iterator[tuple[str, Any]]:
    """The study's app behind a real server, and headless Chromium; yields the base URL and
    the browser."""
    from playwright.sync_api import sync_playwright

    with serving(study.make_app()) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield base, browser
        finally:
            browser.close()


def _height(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollHeight"))


def _width(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def _shot(page: Any, name: str) -> None:
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / f"session-{name}.png"), full_page=True)


def _consent(page: Any, base: str) -> None:
    """From the landing page through the consent page."""
    page.click("#start-here")
    page.click("#consent-form button[type=submit]")
    page.wait_for_load_state()


def _practise(page: Any, base: str, choice: str = "B++") -> None:
    page.wait_for_url(f"{base}/instructions")
    page.click("#next-step")
    page.check(f"input[name=choice][value='{choice}']")
    page.fill("#rationale", "B names the guilt and offers a next step.")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(f"{base}/practice")


def test_a_prolific_session_shows_the_code_only_once_its_fourth_task_is_saved(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=2, tasks_per_person=4, completion_code="C0DE-42X",
                      flow=["write", "judge"], support_url="https://help.example.org/")  # fmt: skip
    heights: dict[str, int] = {}
    with _chromium_on(study) as (base, browser):
        page = browser.new_context(**PHONE).new_page()
        page.goto(base + ENTRY)
        plan = page.inner_text("#session-plan")
        assert "write 2 replies, then compare 2 pairs" in plan
        assert "about 4 minutes in all (4 tasks, about 1 minute each" in plan
        assert page.get_attribute("#support", "href") == "https://help.example.org/"
        _consent(page, base)
        for n in (1, 2):
            page.wait_for_url(f"{base}/write")
            assert page.inner_text("#task-progress").startswith(f"Task {n} of")
            assert page.locator("#completion-code").count() == 0
            assert page.locator("#hold-time").count() == (n == 1)  # said once
            heights[f"write-{n}"] = _height(page)
            page.fill("#text", f"That sounds so heavy to carry, and I am glad you said it ({n}).")
            page.click("#task-form button[type=submit]")
        _practise(page, base)
        assert page.locator("#completion-code").count() == 0
        page.click("#start")
        for n in (3, 4):
            page.wait_for_url(f"{base}/judge")
            assert page.inner_text("#task-progress").startswith(f"Task {n} of 4")
            assert page.locator("#completion-code").count() == 0
            assert not page.is_visible(".keys-hint")  # no keyboard hints on a touch screen
            assert not page.is_visible(".scale kbd")
            shown = "e => getComputedStyle(e).display"  # each box of the checklist a line
            assert page.eval_on_selector(".checklist label", shown) == "block"
            heights[f"judge-{n}"] = _height(page)
            assert _width(page) <= 390
            _shot(page, f"phone-judge-{n}")
            page.check("input[name=choice][value='A+']")
            page.fill("#rationale", "It listens before it advises.")
            page.click("#task-form button[type=submit]")
        page.wait_for_url(f"{base}/done")
        assert page.inner_text("#saved").startswith("Saved")
        assert page.inner_text("#ending").startswith("You have done all 4 tasks")
        assert page.inner_text("#completion-code") == "C0DE-42X"
        assert page.get_attribute("#prolific-return", "href").endswith("?cc=C0DE-42X")
        assert page.is_visible("#copy-code") and page.is_visible("#support")
        _shot(page, "phone-finish")
        wide = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        wide.goto(base + ENTRY.replace("5f1a2b", "6a2b3c") + "&flow=judge")
        _consent(wide, base)
        _practise(wide, base)
        wide.click("#start")
        wide.wait_for_url(f"{base}/judge")
        a, b = (wide.locator(f"#reply-{x}").bounding_box() for x in "ab")
        assert a and b and a["y"] == b["y"] and a["x"] < b["x"]  # side by side
        assert _width(wide) <= 1280
        heights["judge-1280"] = _height(wide)
        _shot(wide, "wide-judge")
    # a comparison fits in two phone screens; so does a writing page
    assert max(v for k, v in heights.items() if k.startswith("judge-")) <= 2 * SCREEN, heights
    assert max(v for k, v in heights.items() if k.startswith("write-")) <= 2 * SCREEN, heights
    assert heights["judge-1280"] <= 2 * 800, heights  # the first comparison, with its instructions
    rater = prolific_rater(study.store, "5f1a2b", "st-9", "se-1")
    with study.store.session() as s:
        written = s.scalars(select(CompletionRow).where(CompletionRow.contributor == rater))
        judged = s.scalars(select(JudgmentRow).where(JudgmentRow.judge == rater))
        assert (len(list(written)), len(list(judged))) == (2, 2)


def test_a_rater_who_answers_faster_than_reading_is_warned_then_excluded_kindly(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=8, exclusion_code="SCR33N", completion_code="C0DE-42X",
                      flow=["judge"])  # fmt: skip  # 24 pairs
    with study.store.session() as s:  # replies that take over a minute to read, so that every
        for reply in s.scalars(select(CompletionRow)):  # answer is fast on any machine
            reply.text = " ".join(["I hear how hard this week has been for you."] * 60)
    answers = ["A+", "B+"]  # no position or run flag: speed alone
    with _chromium_on(study) as (base, browser):
        page = browser.new_context(**PHONE).new_page()
        page.goto(base + ENTRY)
        _consent(page, base)
        _practise(page, base)
        page.click("#start")
        nudged_at = None
        for n in range(1, 25):
            if page.url == f"{base}/done":
                break
            page.wait_for_url(f"{base}/judge")
            if page.locator("#nudge").count():
                nudged_at = nudged_at or n
                assert "10 of your 10 answers came faster" in page.inner_text("#nudge")
                _shot(page, "phone-nudge")
            assert page.locator("#completion-code").count() == 0
            page.check(f"input[name=choice][value='{answers[n % 2]}']")
            page.fill("#rationale", "Fine.")
            page.click("#task-form button[type=submit]")
            page.wait_for_load_state()
        assert nudged_at == 11  # warned on the page after the tenth answer, once
        assert page.url == f"{base}/done"
        assert page.inner_text("h1") == "Thank you: the study's work for you is over"
        assert "did not match what the study's checks look for" in page.inner_text("#ending")
        assert page.inner_text("#completion-code") == "SCR33N"
        _shot(page, "phone-excluded")
        assert _height(page) <= SCREEN
    rater = prolific_rater(study.store, "5f1a2b", "st-9", "se-1")
    with study.store.session() as s:
        person = s.get_one(RaterRow, rater)
        assert person.excluded_reason.startswith("speed (people.exclude_flags): ")
        assert person.meta["nudges"]["speed"]["seen"] is True
        submitted = s.scalars(select(JudgmentRow).where(JudgmentRow.judge == rater)).all()
    assert len(submitted) == 20  # excluded at the twentieth, ten after the warning


def test_a_practice_wrong_twice_ends_the_session_with_its_code(web_study: MakeStudy) -> None:
    study = web_study(items=1, practice_code="PR4CT", flow=["judge"])
    with _chromium_on(study) as (base, browser):
        page = browser.new_context(**PHONE).new_page()
        page.goto(base + ENTRY)
        _consent(page, base)
        _practise(page, base, choice="A+")
        assert page.inner_text("#feedback").startswith("Not quite")
        assert "1 try left" in page.inner_text("#retry")
        box = page.locator("#feedback").bounding_box()
        assert box and box["y"] < SCREEN  # the feedback is in view as the page opens
        page.check("input[name=choice][value='=']")
        page.fill("#rationale", "They seem about the same.")
        page.click("#task-form button[type=submit]")
        page.wait_for_url(f"{base}/practice")
        assert "That was the last try" in page.inner_text("#practice-over")
        assert page.locator("#task-form").count() == 0
        _shot(page, "phone-practice-over")
        page.click("#finish")
        page.wait_for_url(f"{base}/done")
        assert page.inner_text("h1") == "Thank you for trying"
        assert page.inner_text("#completion-code") == "PR4CT"
        page.goto(f"{base}/judge")
        assert page.url == f"{base}/done"  # no comparing after it
    with study.store.session() as s:
        assert s.scalars(select(TaskRow.id).where(TaskRow.rater_id.is_not(None))).all() == []
