"""A paid participant's whole journey in headless Chromium on a 390 px wide screen, with the
keyboard only: the consent page, the instructions, the practice pair and its feedback, three
comparisons (keys 1 to 5, a reason, Enter), two labels (one "None of these") and the finish
page with the completion code; then the same first steps with JavaScript off. Checks what is
stored: the consent time, the practice answer kept apart, the verdicts counted. A screenshot of
every page goes to test-output/ (journey-NN-what.png; without JavaScript, journey-nojs-*)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from heart.people import prolific_rater
from heart.store import ConsentRow, JudgmentRow, LabelRow, PracticeRow, TaskRow, counted_judgment

from ..helpers import CHROMIUM, require_chromium
from .conftest import WebStudy, serving

MakeStudy = Callable[..., WebStudy]
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
PHONE = {"width": 390, "height": 844}
KEYS = {"1": "A++", "2": "A+", "3": "=", "4": "B+", "5": "B++"}
PRESSED = ["1", "4", "3"]  # the keys pressed on the three real pairs, in turn
ENTRY = "/prolific?PROLIFIC_PID=5f1a2b&STUDY_ID=st-9&SESSION_ID=se-1"


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


def _tab_to(page: Any, selector: str, presses: int = 80) -> None:
    """Press Tab until the element ``selector`` names has the focus."""
    for _ in range(presses):
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector} on {page.url}")


def _press(page: Any, key: str) -> None:
    """Press ``key`` and wait for the page it leads to."""
    with page.expect_navigation():
        page.keyboard.press(key)


def _fits(page: Any) -> None:
    """Nothing wider than the screen: no sideways scrolling."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], (page.url, width)


def test_the_whole_journey_by_keyboard_on_a_phone_sized_screen(web_study: MakeStudy) -> None:
    from playwright.sync_api import sync_playwright

    study = web_study(items=1, seed=3, label_completions=2, labellers_per_completion=1,
                      completion_code="C0DE-42X", flow=["judge", "label"])  # fmt: skip
    OUTPUT.mkdir(exist_ok=True)
    for old in OUTPUT.glob("journey-[0-9]*.png"):
        old.unlink()
    shots: list[str] = []
    problems: list[str] = []
    progress: list[str] = []
    began = dt.datetime.now(dt.UTC)

    def shot(page: Any, name: str) -> None:
        _fits(page)
        if name != "finish":  # no completion code before the session's last task is saved
            assert page.locator("#completion-code").count() == 0, name
        shots.append(f"journey-{len(shots) + 1:02d}-{name}.png")
        page.screenshot(path=str(OUTPUT / shots[-1]), full_page=True)

    with serving(study.make_app()) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport=PHONE).new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.goto(base + ENTRY)
            assert page.url == f"{base}/"
            assert "compare pairs, then label replies" in page.inner_text("#session-plan")
            _tab_to(page, "#start-here")
            _press(page, "Enter")
            assert page.url == f"{base}/consent?next=/next"
            shot(page, "consent")
            _tab_to(page, "#consent-form button")
            _press(page, "Enter")
            assert page.url == f"{base}/instructions"
            shot(page, "instructions")
            _tab_to(page, "#next-step")
            _press(page, "Enter")
            assert page.url == f"{base}/practice"
            page.keyboard.press("5")  # picks "B is much better" and moves to the reason box
            assert page.evaluate("document.activeElement.id") == "rationale"
            page.keyboard.type("B names the guilt and offers a next step.")
            shot(page, "practice")
            _press(page, "Enter")
            assert page.url == f"{base}/practice"
            assert page.inner_text("#feedback").startswith("Well done")
            shot(page, "practice-feedback")
            _tab_to(page, "#start")
            _press(page, "Enter")
            for n, key in enumerate(PRESSED, 1):
                assert page.url == f"{base}/judge"
                assert page.locator("#saved").count() == (n > 1)
                progress.append(page.inner_text("#task-progress"))
                page.keyboard.press("Enter")  # nothing chosen yet: Enter sends nothing
                assert page.url == f"{base}/judge" and not page.is_checked("input[value='=']")
                page.keyboard.press(key)
                assert page.is_checked(f"input[name=choice][value='{KEYS[key]}']")
                page.keyboard.press("Enter")  # no reason yet: still nothing sent
                page.keyboard.type(f"Reason {n}: it listens before it advises.")
                shot(page, f"judge-{n}")
                _press(page, "Enter")
            assert page.url == f"{base}/label"  # no more comparing: led on to labelling
            assert page.inner_text("#saved").startswith("Saved")
            for n, box in enumerate(("input[value='Emotional Validation']", "#none"), 1):
                assert page.url == f"{base}/label"
                progress.append(page.inner_text("#task-progress"))
                _tab_to(page, box)
                page.keyboard.press("Space")
                reply = page.locator("#reply").bounding_box()  # kept in view while ticking
                assert reply and 0 <= reply["y"] < PHONE["height"] / 2, reply
                shot(page, f"label-{n}")
                _tab_to(page, "#task-form button[type=submit]")
                _press(page, "Enter")
            assert page.inner_text("h1") == "You have finished"
            assert page.inner_text("#completion-code") == "C0DE-42X"
            shot(page, "finish")
        finally:
            browser.close()
    assert not problems, problems  # no script or Content-Security-Policy errors
    assert [s.split(" · ")[0] for s in progress] == [
        "Task 1 of 3", "Task 2 of 3", "Task 3 of 3", "Task 4 of 5", "Task 5 of 5",
    ]  # fmt: skip
    assert all(s.endswith("time so far: under a minute") for s in progress)
    assert [p.name for p in sorted(OUTPUT.glob("journey-[0-9]*.png"))] == shots

    rater = prolific_rater(study.store, "5f1a2b", "st-9", "se-1")
    with study.store.session() as s:
        consent = s.get_one(ConsentRow, rater)
        practice = s.get_one(PracticeRow, rater)
        judgments = list(s.scalars(select(JudgmentRow).where(JudgmentRow.judge == rater)))
        counted = s.scalar(
            select(func.count()).where(JudgmentRow.judge == rater, counted_judgment())
        )
        seats = s.scalar(select(func.count()).where(TaskRow.rater_id == rater, TaskRow.done))
        labels = sorted(tuple(x) for x in s.scalars(select(LabelRow.strategies)))
    assert began <= dt.datetime.fromisoformat(consent.consented_at) <= dt.datetime.now(dt.UTC)
    assert (practice.choice, practice.correct) == ("B++", True)
    assert sorted(json.loads(j.raw or "{}")["choice"] for j in judgments) == sorted(
        KEYS[k] for k in PRESSED
    )
    assert counted == 3 and seats == 5  # three verdicts counted; the practice is no seat
    assert sorted(j.rationale for j in judgments) == [
        f"Reason {n}: it listens before it advises." for n in (1, 2, 3)
    ]
    assert labels == [(), ("Emotional Validation",)]


def test_the_first_steps_by_keyboard_with_javascript_off(web_study: MakeStudy) -> None:
    """Without the script: Tab to the scale, arrow keys to choose, Tab on to the reason and
    the button; the pages still say where the rater stands and that the answer was saved."""
    from playwright.sync_api import sync_playwright

    study = web_study(items=1, seed=3)
    OUTPUT.mkdir(exist_ok=True)
    with serving(study.make_app()) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport=PHONE, java_script_enabled=False).new_page()
            page.goto(base + ENTRY + "&flow=judge")
            _tab_to(page, "#start-here")
            _press(page, "Enter")
            _tab_to(page, "#consent-form button")
            _press(page, "Enter")
            _tab_to(page, "#next-step")
            _press(page, "Enter")
            _tab_to(page, "input[name=choice]")  # the first option, A is much better
            for _ in range(4):
                page.keyboard.press("ArrowDown")  # down to B is much better
            assert page.is_checked("input[value='B++']")
            assert not page.is_visible(".scale kbd")  # no keys offered without the script
            page.screenshot(path=str(OUTPUT / "journey-nojs-practice.png"), full_page=True)
            _tab_to(page, "#rationale")
            page.keyboard.type("B names the guilt.")
            _tab_to(page, "#task-form button[type=submit]")
            _press(page, "Enter")
            assert page.inner_text("#feedback").startswith("Well done")
            _fits(page)
            _tab_to(page, "#start")
            _press(page, "Enter")
            assert page.inner_text("#task-progress").startswith("Task 1 of 3 · time so far")
            _tab_to(page, "input[name=choice]")
            page.keyboard.press("ArrowDown")  # A is slightly better
            _tab_to(page, "#rationale")
            page.keyboard.type("It asks what she needs.")
            _tab_to(page, "#task-form button[type=submit]")
            _press(page, "Enter")
            assert page.inner_text("#saved").startswith("Saved")
            assert page.inner_text("#task-progress").startswith("Task 2 of 3")
            _fits(page)
            height = page.evaluate("document.documentElement.scrollHeight")
            assert height <= 2 * PHONE["height"], height  # two screens, without the script too
            page.screenshot(path=str(OUTPUT / "journey-nojs-judge-saved.png"), full_page=True)
        finally:
            browser.close()
    with study.store.session() as s:
        (judgment,) = s.scalars(select(JudgmentRow))
        practice = s.scalars(select(PracticeRow)).one()
    assert json.loads(judgment.raw or "{}")["choice"] == "A+"
    assert practice.choice == "B++"
