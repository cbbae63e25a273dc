"""The pages in headless Chromium against a real server: htmx (served by the app, under its
Content-Security-Policy) updates the word count as one types, the forms also work with
JavaScript off, and nothing is fetched from anywhere else."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from sqlalchemy import select

from heart.people import invite
from heart.store import CompletionRow, JudgmentRow

from ..helpers import CHROMIUM, require_chromium
from .conftest import WebStudy, serving

MakeStudy = Callable[..., WebStudy]


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


def test_htmx_counts_words_and_the_forms_work_without_javascript(web_study: MakeStudy) -> None:
    from playwright.sync_api import expect, sync_playwright

    study = web_study(items=1)
    ((_, writer),) = invite(study.store, 1, flow="write")
    ((_, judge),) = invite(study.store, 1, flow="judge")
    with serving(study.make_app()) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        requests: list[str] = []
        problems: list[str] = []
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(f"{base}/invite/{writer}")
        assert page.url == f"{base}/"
        page.click("#start-here")
        assert page.url == f"{base}/consent?next=/next"
        page.click("#consent-form button[type=submit]")
        page.wait_for_url(f"{base}/write")
        assert page.locator("#word-count").inner_text().startswith("0 words")
        page.locator("#text").press_sequentially("I am so sorry, that sounds lonely", delay=20)
        expect(page.locator("#word-count")).to_have_text(re.compile(r"^7 words"), timeout=10_000)
        page.click("#task-form button[type=submit]")
        page.wait_for_url(f"{base}/done")
        assert "You have finished" in page.content()  # one item, written once by this rater

        quiet = browser.new_context(java_script_enabled=False).new_page()
        quiet.on("request", lambda r: requests.append(r.url))
        quiet.goto(f"{base}/invite/{judge}")
        quiet.goto(f"{base}/judge")
        assert quiet.url == f"{base}/consent?next=/judge"
        quiet.click("#consent-form button[type=submit]")
        quiet.wait_for_url(f"{base}/instructions")
        quiet.click("#next-step")
        quiet.check("input[name=choice][value='B++']")
        quiet.fill("#rationale", "B names the guilt.")
        quiet.click("#task-form button[type=submit]")
        quiet.wait_for_url(f"{base}/practice")
        assert "Well done" in quiet.inner_text("#feedback")
        quiet.click("#start")
        quiet.wait_for_url(f"{base}/judge")
        quiet.check("input[name=choice][value='B+']")
        quiet.fill("#rationale", "The second one asks what she needs.")
        quiet.check("input[name=checklist][value=position]")
        quiet.click("#task-form button[type=submit]")
        quiet.wait_for_url(f"{base}/judge")  # the next of the item's three pairs
        browser.close()
    assert not problems, problems  # no script or policy errors
    assert requests and all(url.startswith(base) for url in requests)
    with study.store.session() as s:
        texts = s.scalars(select(CompletionRow.text).where(CompletionRow.system == "human"))
        assert list(texts) == ["I am so sorry, that sounds lonely"]
        (judgment,) = s.scalars(select(JudgmentRow))
    assert judgment.rationale == "The second one asks what she needs."
