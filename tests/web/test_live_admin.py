"""The live part of the admin page: pace and expected finish from submissions at set times,
Krippendorff's α among the raters against the krippendorff package, the raters left out of the
analyses and the judge seats their replacement costs, on real SQLite stores and the real app."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import krippendorff
import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from heart.people import claim, invite, submit_judgment, submit_write
from heart.people._quality import exclude
from heart.store import ConversationRow, ItemRow, JudgmentRow, PairRow, Store, TaskRow
from heart.study import Study
from heart.web._live import live_view

from .conftest import ADMIN_TOKEN, WebStudy, element

MakeStudy = Callable[..., WebStudy]
CLAIM = 1800.0


@pytest.fixture
def now() -> float:
    """The time now: the page reads the clock, so submissions are set at times before it."""
    return time.time()


def _admin(client: TestClient) -> None:
    response = client.get("/admin", params={"token": ADMIN_TOKEN})
    assert response.status_code == 303


def _study(client: TestClient) -> Study:
    study: Study = client.app.state.web.study  # type: ignore[attr-defined]
    return study


def _pace_row(page: str, work: str) -> list[str]:
    body = re.search(r'<table id="live-pace">(.*?)</table>', page, re.S)
    assert body
    for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S):
        cells = re.findall(r"<td>(.*?)</td>", row)
        if cells and cells[0] == work:
            return cells
    raise AssertionError(f"no row {work!r} in #live-pace")


def _judge(store: Store, rater: str, choice: str, at: float) -> str:
    """``rater`` takes the next judge seat and answers ``choice`` at time ``at``; the seat id."""
    task = claim(store, rater, "judge", now=at, seconds=CLAIM)
    assert task is not None
    submit_judgment(store, rater, task, choice, "Reason.", now=at)
    return task


def test_pace_and_finish_come_from_the_last_hour_of_submissions(
    web_study: MakeStudy, now: float
) -> None:
    study = web_study(items=1)  # 3 pairs x 5 raters = 15 judge seats, 3 write seats
    app = study.make_app()
    raters = [r for r, _ in invite(study.store, 12)]
    # judge seats submitted 4000 s before now (outside the hour), then 11 from 3300 s to 300 s
    agos = (4000, *range(3300, 0, -300))
    for rater, ago in zip(raters, agos, strict=True):
        _judge(study.store, rater, "A+", now - ago)
    view = live_view(_study(study.client(app)), now)
    write, judge, label = view.pace
    assert (judge.work, judge.seats, judge.left, judge.recent) == ("judge", 15, 3, 11)
    assert judge.per_hour == 11.0
    assert judge.finish == now + 3 / 11 * 3600  # 3 seats left at 11 an hour: 16.4 min
    # nothing written yet: no pace, so no finish
    assert (write.work, write.left, write.recent, write.per_hour, write.finish) == (
        "write", 3, 0, None, None,
    )  # fmt: skip
    assert (label.work, label.seats) == ("label", 0)  # no label seats in this study

    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin").text
    finish = _pace_row(page, "judge")
    assert finish[:4] == ["judge", "3", "11", "11"]  # left, done in the last hour, per hour
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 17 min; from 11 seats in the last 1 h\)", finish[4]
    )
    assert _pace_row(page, "write")[1:] == [
        "3", "0", "–",
        "not enough data: no seat submitted in the last 1 h, a pace needs 10",
    ]  # fmt: skip
    assert _pace_row(page, "label")[4] == "no seats"


def test_one_submission_is_no_pace_and_all_done_needs_no_finish(
    web_study: MakeStudy, now: float
) -> None:
    study = web_study(items=1, writers_per_item=1)
    app = study.make_app()
    (rater, _), (other, _) = invite(study.store, 2)
    task = claim(study.store, rater, "write", now=now - 10, seconds=CLAIM)
    assert task is not None
    spec = _study(study.client(app)).config.people
    submit_write(study.store, spec, rater, task, "That sounds so hard, I am here.", now=now - 10)
    _judge(study.store, other, "=", now - 20)
    view = live_view(_study(study.client(app)), now)
    write = next(p for p in view.pace if p.work == "write")
    assert (write.seats, write.left, write.recent, write.finish) == (1, 0, 1, None)
    judge = view.judge_pace
    assert (judge.left, judge.recent, judge.per_hour, judge.finish) == (14, 1, None, None)
    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin/live").text
    assert _pace_row(page, "write")[4] == "all done"
    assert _pace_row(page, "judge")[4] == (
        "not enough data: 1 seat submitted in the last 1 h, a pace needs 10"
    )


def _conversations(study: WebStudy, items: int) -> None:
    """Item i in conversation c{i}, so the interval has conversations to resample."""
    with study.store.session() as s:
        for i in range(items):
            s.merge(
                ConversationRow(
                    id=f"c{i}", problem_type="p", emotion_type="e", experience_type="",
                    situation="", survey={}, turns=[], origin={},
                )
            )  # fmt: skip
        s.flush()
        for i in range(items):
            s.execute(update(ItemRow).where(ItemRow.id == f"i{i}").values(conversation_id=f"c{i}"))


def test_alpha_among_raters_matches_the_krippendorff_package(
    web_study: MakeStudy, now: float
) -> None:
    study = web_study(items=5, raters_per_pair=3)  # 15 pairs, 45 judge seats
    _conversations(study, 5)
    app = study.make_app()
    raters = [r for r, _ in invite(study.store, 3)]
    # each rater judges all 15 pairs (seats of the least filled pairs go first), with a
    # fixed pattern of choices: mostly alike, sometimes not
    choices = {
        raters[0]: "A++ A+ B+ = A++",
        raters[1]: "A+ A+ B++ B+ A+",
        raters[2]: "A+ = B+ = B+",
    }
    at = now - 3000
    for rater in raters:
        for n in range(15):
            _judge(study.store, rater, choices[rater].split()[n % 5], at)
            at += 10
    with study.store.session() as s:
        rows = s.execute(select(JudgmentRow.judge, JudgmentRow.pair_id, JudgmentRow.winner)).all()
        pairs = sorted(s.scalars(select(PairRow.id)))
    code = {"a": 0.0, "tie": 1.0, "b": 2.0}
    data = np.full((3, len(pairs)), np.nan)
    for judge, pair, winner in rows:
        data[raters.index(judge), pairs.index(pair)] = code[winner]
    assert not np.isnan(data).any()
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    view = live_view(_study(study.client(app)), now)
    assert view.alpha.alpha == pytest.approx(expected, abs=1e-12)
    assert (view.alpha.pairs, view.alpha.conversations, view.alpha.raters) == (15, 5, 3)
    assert view.alpha.low <= expected <= view.alpha.high
    admin = study.client(app)
    _admin(admin)
    said = element(admin.get("/admin").text, "live-alpha")
    assert said == (
        f"α = {expected:.2f} (95% interval {view.alpha.low:.2f} to {view.alpha.high:.2f}), "
        "from 45 counted verdicts by 3 raters; 15 pairs rated by two or more, from 5 "
        "conversations."
    )


def test_one_rater_or_none_gives_no_alpha_and_says_why(web_study: MakeStudy, now: float) -> None:
    study = web_study(items=1)
    app = study.make_app()
    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin/live").text
    assert element(page, "live-alpha") == (
        "Not enough data: no pair has verdicts from two raters yet (0 counted verdicts by 0 "
        "raters; 0 pairs rated by two or more, from 0 conversations)."
    )
    assert element(page, "live-left-out") == "Nobody: every rater's verdicts count."
    assert element(page, "live-extra") == (
        "Replacement costs nothing so far: no judge seat went back to the pool."
    )
    (rater, _), (other, _) = invite(study.store, 2)
    for ago in (300, 200, 100):
        _judge(study.store, rater, "B+", now - ago)
    assert element(admin.get("/admin/live").text, "live-alpha") == (
        "Not enough data: no pair has verdicts from two raters yet (3 counted verdicts by 1 "
        "rater; 0 pairs rated by two or more, from 0 conversations)."
    )
    # a second rater who agrees on one pair: α is undefined, there being no disagreement
    with study.store.session() as s:
        first = s.scalar(select(JudgmentRow.pair_id).order_by(JudgmentRow.pair_id))
        assert first is not None
    while True:  # take seats until the one on the first pair
        task = claim(study.store, other, "judge", now=now, seconds=CLAIM)
        assert task is not None
        with study.store.session() as s:
            seat = s.get(TaskRow, task)
            assert seat is not None
            target, shown = seat.target, seat.shown
        if target == first:
            break
        submit_judgment(study.store, other, task, "=", "Same.", now=now)
    with study.store.session() as s:
        mine = s.scalar(select(JudgmentRow.winner).where(JudgmentRow.pair_id == first))
    same = {("b", "ab"): "B+", ("a", "ba"): "B+", ("a", "ab"): "A+", ("b", "ba"): "A+"}
    submit_judgment(study.store, other, task, same[(mine, shown)], "Same.", now=now)
    said = element(admin.get("/admin/live").text, "live-alpha")
    assert said.startswith("Undefined: every verdict on the pairs rated by two or more is the")
    assert said.endswith("by 2 raters; 1 pair rated by two or more, from 1 conversation).")


def test_an_exclusion_shows_with_its_reason_and_the_seats_it_reopened(
    web_study: MakeStudy, now: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("heart.web._live.MIN_PACE_SEATS", 2)  # a pace from a few seats here
    study = web_study(items=1, raters_per_pair=2)  # 3 pairs x 2 = 6 judge seats
    app = study.make_app()
    (bad, _), (good, _) = invite(study.store, 2)
    _judge(study.store, bad, "A++", now - 50)
    _judge(study.store, bad, "A++", now - 40)
    claim(study.store, bad, "judge", now=now - 30, seconds=CLAIM)  # held, not submitted
    _judge(study.store, good, "B+", now - 20)
    with study.store.session() as s:
        exclude(s, bad, "failed 2 of 2 quality checks")
    view = live_view(_study(study.client(app)), now)
    assert [(r.rater, r.reason, r.reopened) for r in view.left_out] == [
        (bad, "failed 2 of 2 quality checks", 2)
    ]
    assert view.extra_seats == 2
    judge = view.judge_pace
    assert (judge.left, judge.recent) == (5, 1)  # the good rater's seat stays done
    assert (view.alpha.verdicts, view.alpha.raters) == (1, 1)  # the bad verdicts do not count
    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin").text
    table = re.search(r'<table id="live-left-out">(.*?)</table>', page, re.S)
    assert table
    assert re.findall(r"<td>(.*?)</td>", table.group(1)) == [
        bad, "failed 2 of 2 quality checks", "2",
    ]  # fmt: skip
    assert element(page, "live-extra") == (
        "Replacement costs 2 extra judge seats: seats these raters had submitted went back to "
        "the pool for others to fill (how long that takes is unknown until judging has a pace)."
    )
    with study.store.session() as s:  # their verdicts stay stored
        assert len(s.scalars(select(JudgmentRow).where(JudgmentRow.judge == bad)).all()) == 2
    # two more verdicts in the last hour give judging a pace of 3 an hour: 2 seats, 40 min
    (third, _), (fourth, _) = invite(study.store, 2)
    _judge(study.store, third, "B+", now - 10)
    _judge(study.store, fourth, "B+", now - 5)
    view = live_view(_study(study.client(app)), now)
    assert view.judge_pace.per_hour == 3.0 and view.extra_seats == 2
    assert element(admin.get("/admin/live").text, "live-extra").endswith(
        "(about 40 min of judging at the current pace)."
    )


def test_the_live_part_is_refused_to_anyone_but_the_admin(web_study: MakeStudy, now: float) -> None:
    study = web_study(items=1)
    app = study.make_app()
    stranger = study.client(app)
    response = stranger.get("/admin/live")
    assert response.status_code == 403 and "Admin only" in response.text
    assert "live-pace" not in response.text
    rater = study.client(app)
    ((_, token),) = invite(study.store, 1)
    assert rater.get(f"/invite/{token}").status_code == 303
    response = rater.get("/admin/live")
    assert response.status_code == 403 and "live-pace" not in response.text
    admin = study.client(app)
    _admin(admin)
    response = admin.get("/admin/live")
    assert response.status_code == 200
    assert response.text.startswith('<section id="live" hx-get="/admin/live"')
    assert "<html" not in response.text  # the part alone, to swap into the page
    page = admin.get("/admin").text
    assert '<section id="live" hx-get="/admin/live" hx-trigger="every 15s"' in page


def test_the_live_part_refreshes_in_place_in_chromium(
    web_study: MakeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect, sync_playwright

    from ..helpers import CHROMIUM, require_chromium
    from .conftest import serving

    require_chromium()
    monkeypatch.setattr("heart.web._live.REFRESH_SECONDS", 1)
    monkeypatch.setattr("heart.web._live.MIN_PACE_SEATS", 2)  # a pace from three seats here
    study = web_study(items=1)
    raters = [r for r, _ in invite(study.store, 3)]
    with serving(study.make_app()) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        problems: list[str] = []
        page = browser.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(f"{base}/admin?token={ADMIN_TOKEN}")
        assert page.url == f"{base}/admin"
        judge = page.locator("#live-pace tr", has=page.locator("td", has_text="judge")).first
        expect(judge.locator("td").nth(2)).to_have_text("0")
        page.evaluate("window.notReloaded = true")
        progress = page.locator("#progress").inner_text()
        for n, rater in enumerate(raters):
            _judge(study.store, rater, "A+", time.time() - 10 * (n + 1))
        expect(judge.locator("td").nth(2)).to_have_text("3", timeout=15_000)
        expect(judge.locator("td").nth(3)).to_have_text("3")
        assert page.evaluate("window.notReloaded") is True  # swapped in, not reloaded
        assert page.locator("#progress").inner_text() == progress  # the rest stays as loaded
        assert page.locator("section#live").count() == 1

        quiet = browser.new_context(java_script_enabled=False).new_page()
        quiet.goto(f"{base}/admin?token={ADMIN_TOKEN}")
        row = quiet.locator("#live-pace tr", has=quiet.locator("td", has_text="judge")).first
        assert row.locator("td").nth(2).inner_text() == "3"  # shown on load without a script
        browser.close()
    assert not problems, problems  # no script or policy errors
