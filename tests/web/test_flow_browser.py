"""One study's human work end to end, as people do it: `heart raters invite` makes the links,
`heart serve` runs the app, and headless Chromium is the writer, the rater and the admin. A
screenshot of every page visited goes to test-output/ (flow-NN-who-what.png)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select

from heart.people import rater_for_token
from heart.store import CompletionRow, JudgmentRow, PairRow, Store

from ..helpers import CHROMIUM, require_chromium
from ..helpers import heart as heart_cli
from ..servers import free_port
from .conftest import SRC, SYSTEMS, fill_store, heart_serve, reply_text

OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
SEED_WITH_BOTH_ORDERS = 3  # serves the three pairs of item i0 as ab, ba, ba
CHOICES = ["A++", "B+", "="]  # the rater's answers, in the order the pairs come
WRITTEN = "I'm so sorry. It sounds like you miss her, and that you want to make it right."


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


def _model_system(name: str) -> dict[str, Any]:
    """A model system of the roster (its replies are already in the store: never called)."""
    model = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": name}
    return {"name": name, "kind": "model", "family": name, "model": model}


def _study(root: Path, store: Store) -> dict[str, str]:
    """A study folder over ``store``: the human system and three model systems, one item with
    a reply from each model (three pairs). Returns reply text -> completion id."""
    config = {
        "name": "flow-test",
        "seed": SEED_WITH_BOTH_ORDERS,
        "store": store.url,
        "systems": [
            {"name": "human", "kind": "human", "family": "human"},
            *(_model_system(name) for name in SYSTEMS),
        ],
        "people": {"check_every": 0},
    }
    root.mkdir(parents=True)
    (root / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return fill_store(store, items=1)


def _invite_link(root: Path, base: str, flow: str) -> str:
    made = heart_cli("raters", "invite", "1", "--study", root, "--base-url", base,
                     "--flow", flow, env={"PYTHONPATH": SRC})  # fmt: skip
    (link,) = made.stdout.split()
    assert link.startswith(f"{base}/invite/"), link
    return link


def test_a_writer_a_rater_and_the_admin_through_heart_serve(store: Store, tmp_path: Path) -> None:
    from playwright.sync_api import Page, expect, sync_playwright

    root = tmp_path / "study"
    replies = _study(root, store)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    writer_link, rater_link = _invite_link(root, base, "write"), _invite_link(root, base, "judge")
    writer = rater_for_token(store, writer_link.rsplit("/", 1)[1])
    rater = rater_for_token(store, rater_link.rsplit("/", 1)[1])
    assert writer and rater and writer != rater
    OUTPUT.mkdir(exist_ok=True)
    backend = store.engine.dialect.name
    for old in OUTPUT.glob(f"flow-{backend}-*.png"):
        old.unlink()
    shots: list[str] = []

    def shot(page: Page, name: str) -> None:
        shots.append(f"flow-{backend}-{len(shots) + 1:02d}-{name}.png")
        page.screenshot(path=str(OUTPUT / shots[-1]), full_page=True)

    seen: list[tuple[str, str, str]] = []  # (completion shown as A, as B, choice)
    exports: dict[str, str] = {}

    def as_writer(page: Page) -> None:
        page.goto(writer_link)
        assert page.url == f"{base}/"
        shot(page, "writer-landing")
        assert "You will write replies." in page.inner_text("#session-plan")
        page.click("#start-here")
        assert page.url == f"{base}/consent?next=/next"
        shot(page, "writer-consent")
        with page.expect_navigation():
            page.click("#consent-form button[type=submit]")
        assert page.url == f"{base}/write"
        assert "My sister stopped talking to me" in page.inner_text("#context")
        page.fill("#text", WRITTEN[:-6])
        page.locator("#text").press_sequentially(WRITTEN[-6:], delay=20)
        expect(page.locator("#word-count")).to_have_text(
            re.compile(r"^17 words"), timeout=10_000
        )  # counted by htmx as the writer types
        shot(page, "writer-write")
        with page.expect_navigation():
            page.click("#task-form button[type=submit]")
        assert page.url == f"{base}/done"
        assert "You have finished" in page.inner_text("main")
        shot(page, "writer-finished")

    def as_rater(page: Page) -> None:
        page.goto(rater_link)
        assert page.url == f"{base}/"
        shot(page, "rater-landing")
        page.click("#start-here")
        with page.expect_navigation():
            page.click("#consent-form button[type=submit]")
        assert page.url == f"{base}/instructions"
        shot(page, "rater-instructions")
        page.click("#next-step")
        page.check("input[name=choice][value='A+']")
        page.fill("#rationale", "A is shorter.")
        with page.expect_navigation():
            page.click("#task-form button[type=submit]")
        assert "Not quite" in page.inner_text("#feedback")
        shot(page, "rater-practice-feedback")
        page.check("input[name=choice][value='B++']")  # a second try
        page.fill("#rationale", "B names the guilt.")
        with page.expect_navigation():
            page.click("#task-form button[type=submit]")
        assert "Well done" in page.inner_text("#feedback")
        with page.expect_navigation():
            page.click("#start")
        for n, choice in enumerate(CHOICES, 1):
            assert page.url == f"{base}/judge"
            html = page.content()
            a, b = (replies[reply_text(html, e)] for e in ("reply-a", "reply-b"))
            page.check(f"input[name=choice][value='{choice}']")
            page.fill("#rationale", f"Reason {n}: the better one listens first.")
            for key in ("length", "format", "position"):
                page.check(f"input[name=checklist][value={key}]")
            shot(page, f"rater-judge-{n}")
            with page.expect_navigation():
                page.click("#task-form button[type=submit]")
            seen.append((a, b, choice))
        assert page.url == f"{base}/done"
        assert "You have finished" in page.inner_text("main")
        shot(page, "rater-finished")

    def as_admin(page: Page) -> None:
        page.goto(admin_link)  # the token, swapped for a cookie on /admin
        assert page.url == f"{base}/admin"
        progress = page.inner_text("#progress")
        assert re.search(r"write\s+3\s+1\s+0\s+2", progress), progress
        assert re.search(r"judge\s+15\s+3\s+0\s+12", progress), progress
        shot(page, "admin")
        for name in ("judgments.csv", "completions.jsonl"):
            with page.expect_download() as info:
                page.click(f"#exports a[href='/admin/export/{name}']")
            saved = tmp_path / name
            info.value.save_as(saved)
            exports[name] = saved.read_text(encoding="utf-8")

    requests: list[str] = []
    problems: list[str] = []
    with heart_serve(root, port, tmp_path / "serve.log") as admin_link, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for person in (as_writer, as_rater, as_admin):  # each in a browser of their own
                context = browser.new_context(viewport={"width": 1000, "height": 800})
                page = context.new_page()
                page.on("request", lambda r: requests.append(r.url))
                page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
                person(page)
                context.close()
        finally:
            browser.close()
    assert [p.name for p in sorted(OUTPUT.glob(f"flow-{backend}-*.png"))] == shots
    assert not problems, problems  # no script or Content-Security-Policy errors
    assert requests and all(url.startswith(base) for url in requests)

    with store.session() as s:
        (written,) = s.scalars(select(CompletionRow).where(CompletionRow.system == "human"))
        pairs = {row.id: row for row in s.scalars(select(PairRow))}
        judgments = list(s.scalars(select(JudgmentRow).where(JudgmentRow.judge == rater)))
    assert (written.text, written.contributor, written.item_id) == (WRITTEN, writer, "i0")

    expected = []  # (pair, order shown, winner in the pair's terms, strength, choice)
    for a, b, choice in seen:
        (pair,) = [p for p in pairs.values() if {p.a_id, p.b_id} == {a, b}]
        order = "ab" if pair.a_id == a else "ba"
        winner = {"A++": a, "B+": b, "=": None}[choice]
        mapped = "tie" if winner is None else ("a" if winner == pair.a_id else "b")
        expected.append((pair.id, order, mapped, 2 if choice == "A++" else 1, choice))
    assert {order for _, order, _, _, _ in expected} == {"ab", "ba"}  # both orders served
    assert len({pair for pair, *_ in expected}) == 3
    assert sorted((j.pair_id, j.order, j.winner, j.strength) for j in judgments) == sorted(
        e[:4] for e in expected
    )
    assert sorted(j.rationale for j in judgments) == [
        f"Reason {n}: the better one listens first." for n in (1, 2, 3)
    ]
    assert all(json.loads(j.raw or "{}")["checklist"] == ["format", "length", "position"]
               for j in judgments)  # fmt: skip

    rows = list(csv.DictReader(io.StringIO(exports["judgments.csv"])))
    assert sorted(
        (r["pair_id"], r["order"], r["winner"], r["strength"], r["choice"], r["rater"])
        for r in rows
    ) == sorted(  # a CSV cell that would run as a formula ("=") starts with an apostrophe
        (pair, order, w, str(n), {"=": "'="}.get(c, c), rater) for pair, order, w, n, c in expected
    )
    (completion,) = [json.loads(line) for line in exports["completions.jsonl"].splitlines()]
    assert (completion["rater"], completion["text"], completion["item_id"]) == (
        writer, WRITTEN, "i0")  # fmt: skip
