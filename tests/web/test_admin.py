"""The admin area: progress per kind, quality flags, and exports of people's work only, with
raters named by their pseudonymous ids."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select

from heart.people import prolific_rater
from heart.store import JudgeRow, JudgmentRow, RaterRow, TaskRow

from ..strategy_rows import add_label
from .conftest import ADMIN_TOKEN, WebStudy, element, get_ready, hidden, lead_to, sign_in

MakeStudy = Callable[..., WebStudy]


def _admin(client: TestClient) -> None:
    response = client.get("/admin", params={"token": ADMIN_TOKEN})
    assert response.status_code == 303 and response.headers["location"] == "/admin"


def _row(page: str, table: str, first: str) -> list[str]:
    """The cells of the row of table ``#table`` whose first cell is ``first``."""
    body = re.search(rf'<table id="{table}">(.*?)</table>', page, re.S)
    assert body
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", row)]
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in #{table}")


def _quality(page: str, rater: str) -> dict[str, str]:
    """The Quality table's row of ``rater``, by column header."""
    head = re.search(r'<table id="quality">\s*<thead><tr>(.*?)</tr>', page, re.S)
    assert head
    headers = re.findall(r"<th>(.*?)</th>", head.group(1))
    return dict(zip(headers, _row(page, "quality", rater), strict=True))


def _work(study: WebStudy, client: TestClient) -> str:
    """One rater: a reply with a formula-like start, a tie judgment, a label; then a claim."""
    rater = sign_in(client, study.store)
    for kind, data in (
        ("write", {"text": "=SUM(A1) is not what I mean; I'm sorry it hurts."}),
        ("judge", {"choice": "=", "rationale": "Both kind.", "checklist": ["length"]}),
        ("label", {"strategies": ["Offer Hope", "Affirmation"]}),
    ):
        lead_to(study.store, rater, kind)
        page = client.get(f"/{kind}").text
        fields = {"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), **data}
        assert client.post(f"/{kind}", data=fields).status_code == 303
    lead_to(study.store, rater, "write")
    assert client.get("/write").status_code == 200  # holds the next write seat, unsubmitted
    return rater


def test_the_admin_sees_progress_and_quality(web_study: MakeStudy) -> None:
    study = web_study(items=2, label_completions=2)
    app = study.make_app()
    rater = _work(study, study.client(app))
    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin")
    assert page.status_code == 200
    # write: 2 items x 3 writers; judge: 6 pairs x 5 raters; label: 2 completions x 2.
    assert _row(page.text, "progress", "write") == ["write", "6", "1", "1", "4"]
    assert _row(page.text, "progress", "judge") == ["judge", "30", "1", "0", "29"]
    assert _row(page.text, "progress", "label") == ["label", "4", "1", "0", "3"]
    assert "judge (checks)" not in page.text
    quality = _quality(page.text, rater)
    assert [quality[c] for c in ("entry", "write", "judge", "label")] == ["invite", "1", "1", "1"]
    assert quality["verdicts counted"] == "1" and quality["verdicts"] == "1 (1 tie)"
    assert quality["first shown won"] == "–"  # a tie favours neither side
    assert quality["flags"] == "" and quality["decision"] == "approve"
    assert quality["why"] == "no quality flag" and quality["excluded"] == ""


def _judge_failing_attention(client: TestClient, study: WebStudy, rater: str) -> None:
    """Judge until no work is left, answering every check wrong ("=" fails a gold pair; an
    attention check gets an option other than the one its instruction names)."""
    while (answer := client.get("/judge")).status_code == 200:
        page = answer.text
        with study.store.session() as s:
            check, expected = s.execute(
                select(TaskRow.check, TaskRow.expected).where(
                    TaskRow.rater_id == rater, ~TaskRow.done
                )
            ).one()
        choice = ("B+" if expected != "B+" else "A+") if check == "attention" else "="
        fields = {"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), "choice": choice,
                  "rationale": "Same."}  # fmt: skip
        assert client.post("/judge", data=fields).status_code == 303


def test_one_failed_attention_check_and_failed_gold_pairs_do_not_exclude(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, check_every=1, raters_per_pair=1)  # 3 pairs: gold, attention, gold
    app = study.make_app()
    client = study.client(app)
    rater = sign_in(client, study.store, flow="judge")
    _judge_failing_attention(client, study, rater)
    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin").text
    assert _row(page, "progress", "judge") == ["judge", "3", "3", "0", "0"]
    quality = _quality(page, rater)
    assert (quality["gold failed"], quality["attention failed"]) == ("2 of 2", "1 of 1")
    assert 'id="checks"' not in client.get("/done").text  # one miss: nothing to return
    assert quality["flags"].startswith("gold: failed 2 of 2 gold pairs")  # shown, not excluding
    live = admin.get("/admin/live").text  # the live part lists the flag as it stands now
    (flags,) = [
        row for row in re.findall(r"<tr><td>(.*?)</tr>", live, re.S) if row.startswith(rater)
    ]
    assert "gold: failed 2 of 2 gold pairs" in flags and "(excludes)" not in flags
    assert "approve: " in flags
    assert (quality["decision"], quality["excluded"], quality["verdicts counted"]) == (
        "approve",
        "",
        "3",
    )


def test_two_failed_attention_checks_show_as_an_exclusion_and_a_return(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=2, check_every=1, raters_per_pair=1)  # 6 pairs, 3 attention checks
    app = study.make_app()
    client = study.client(app)
    rater = sign_in(client, study.store, flow="judge")
    _judge_failing_attention(client, study, rater)
    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin").text
    reason = "attention (people.checks_to_exclude: 2): failed 2 of 2 attention checks"
    assert client.get("/judge").headers["location"] == "/done"
    finish = client.get("/done").text  # no more work for them, and the finish page says why
    assert "missed 2 of the 2 instructions that asked for a given choice" in finish
    assert "may ask you to return this submission" in finish
    quality = _quality(page, rater)
    assert quality["excluded"] == reason and quality["verdicts counted"] == "0"
    assert quality["decision"] == "return"
    assert html.unescape(quality["why"]).startswith("failed 2 of 2 attention checks: by Prolific's")
    with study.store.session() as s:
        assert s.get(RaterRow, rater).excluded_reason == reason
    judgments = admin.get("/admin/export/judgments.jsonl").text.splitlines()
    assert judgments  # their verdicts are kept, marked with the reason
    assert {json.loads(line)["excluded"] for line in judgments} == {reason}
    assert {json.loads(line)["counted"] for line in judgments} == {False}
    (row,) = csv.DictReader(io.StringIO(admin.get("/admin/export/raters.csv").text))
    assert (row["rater"], row["decision"], row["excluded"]) == (rater, "return", reason)
    assert (row["attention"], row["attention_failed"]) == ("2", "2")
    assert row["flags"].startswith("attention (excludes): failed 2 of 2 attention checks")


def test_exports_hold_only_people_work_by_rater_id(web_study: MakeStudy) -> None:
    study = web_study(items=2, label_completions=2)
    app = study.make_app()
    rater = _work(study, study.client(app))
    with study.store.session() as s:  # an LLM verdict, which is not people's work
        s.add(JudgeRow(name="llm-judge", source="llm", family="sysalpha", spec={}))
        s.flush()
        s.add(JudgmentRow(id="jd-llm", pair_id=s.scalars(select(JudgmentRow.pair_id)).one(),
                          judge="llm-judge", order="ab", status="ok", winner="a", strength=3,
                          axes={}, rationale="", created_at="x"))  # fmt: skip
    admin = study.client(app)
    _admin(admin)

    def rows(table: str, fmt: str) -> list[dict[str, str]]:
        response = admin.get(f"/admin/export/{table}.{fmt}")
        assert response.status_code == 200
        assert f'filename="{table}.{fmt}"' in response.headers["content-disposition"]
        if fmt == "csv":
            assert response.headers["content-type"].startswith("text/csv")
            return list(csv.DictReader(io.StringIO(response.text)))
        return [json.loads(line) for line in response.text.splitlines()]

    (completion,) = rows("completions", "jsonl")
    assert (completion["rater"], completion["text"]) == (rater, "=SUM(A1) is not what I mean; "
                                                                "I'm sorry it hurts.")  # fmt: skip
    (as_csv,) = rows("completions", "csv")
    assert as_csv["text"] == "'" + completion["text"]  # no formula in a spreadsheet
    assert set(as_csv) == {"id", "item_id", "rater", "text", "created_at", "excluded"}
    (judgment,) = rows("judgments", "jsonl")
    assert (judgment["rater"], judgment["choice"], judgment["winner"]) == (rater, "=", "tie")
    assert judgment["checklist"] == ["length"] and judgment["rationale"] == "Both kind."
    (judged,) = rows("judgments", "csv")
    assert (judged["choice"], judged["checklist"]) == ("'=", "length")
    (label,) = rows("labels", "jsonl")
    assert (label["rater"], label["strategies"]) == (rater, ["Affirmation", "Offer Hope"])
    (labelled,) = rows("labels", "csv")
    assert labelled["strategies"] == "Affirmation; Offer Hope"
    assert "llm-judge" not in admin.get("/admin/export/judgments.csv").text
    (person,) = rows("raters", "jsonl")
    assert (person["rater"], person["decision"], person["verdicts"], person["ties"]) == (
        rater,
        "approve",
        1,
        1,
    )
    assert person["first_shown_n"] is None and person["kappa"] is None  # no evidence, no number
    assert admin.get("/admin/export/nothing.csv").status_code == 404
    assert admin.get("/admin/export/judgments.xlsx").status_code == 404


def test_disagreements_are_listed_and_downloadable(web_study: MakeStudy) -> None:
    study = web_study(items=2)
    add_label(study.store, "cp-0-sysalpha", "r1", ["Offer Hope", "Affirmation"])
    add_label(study.store, "cp-0-sysalpha", "r2", ["Affirmation"])  # Offer Hope: half of two
    add_label(study.store, "cp-1-sysbeta", "r1", ["Affirmation"])
    add_label(study.store, "cp-1-sysbeta", "r2", ["Affirmation"])  # agreed
    add_label(study.store, "cp-0-sysbeta", "r1", ["Chit Chat"])
    add_label(study.store, "cp-0-sysbeta", "r3", [], excluded="failed 2 of 2 quality checks")
    admin = study.client(study.make_app())
    _admin(admin)
    page = admin.get("/admin").text
    row = _row(page, "disagreements", "cp-0-sysalpha")
    assert row == [
        "cp-0-sysalpha",
        "i0",
        "Offer Hope",
        "r1: Affirmation, Offer Hope; r2: Affirmation",
    ]
    assert page.count("<td>cp-") == 1  # r3 does not count, so r1 alone decides cp-0-sysbeta

    response = admin.get("/admin/export/disagreements.csv")
    assert response.status_code == 200
    assert 'filename="disagreements.csv"' in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [(r["rater"], r["strategies"], r["split"]) for r in rows] == [
        ("r1", "Affirmation; Offer Hope", "Offer Hope"),
        ("r2", "Affirmation", "Offer Hope"),
    ]
    assert {r["completion_id"] for r in rows} == {"cp-0-sysalpha"}
    assert rows[0]["text"].startswith("Reply ") and rows[0]["item_id"] == "i0"
    lines = admin.get("/admin/export/disagreements.jsonl").text.splitlines()
    first = json.loads(lines[0])
    assert (first["rater"], first["strategies"], first["split"]) == (
        "r1",
        ["Affirmation", "Offer Hope"],
        ["Offer Hope"],
    )
    assert 'href="/admin/export/disagreements.csv"' in page


def test_no_disagreement_says_none(web_study: MakeStudy) -> None:
    study = web_study(items=1)
    admin = study.client(study.make_app())
    _admin(admin)
    assert '<p id="disagreements">None.</p>' in admin.get("/admin").text


def test_a_raters_page_shows_their_work_and_reinstates_them_with_who_and_when(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=2, check_every=1, raters_per_pair=1, completion_code="C0DE")
    app = study.make_app()
    client = study.client(app)
    client.get("/prolific?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=sub-77&flow=judge")
    get_ready(client)
    rater = prolific_rater(study.store, "p1", "s1", "sub-77")
    _judge_failing_attention(client, study, rater)  # two failed attention checks: excluded
    admin = study.client(app)
    _admin(admin)
    assert f'href="/admin/raters/{rater}"' in admin.get("/admin").text
    page = admin.get(f"/admin/raters/{rater}").text
    assert element(page, "rater-excluded").startswith("attention (people.checks_to_exclude: 2)")
    assert element(page, "rater-decision").startswith("return: failed 2 of 2 attention checks")
    assert "ended: excluded" in element(page, "rater-session")
    tasks = _row(page, "rater-tasks", "judge")
    assert tasks[2:4] == ["gold", "no"] or tasks[2:4] == ["attention", "no"]
    prolific = list(csv.DictReader(io.StringIO(admin.get("/admin/export/prolific.csv").text)))
    assert [(r["submission_id"], r["rater"], r["action"], r["session"]) for r in prolific] == [
        ("sub-77", rater, "return", "excluded")
    ]
    assert client.get(f"/admin/raters/{rater}").status_code == 403  # not for raters
    form = {"csrf": hidden(page, "csrf"), "by": "Dr Lee"}
    forged = admin.post(f"/admin/raters/{rater}/reinstate", data={**form, "csrf": "x"})
    assert forged.status_code == 403
    assert (
        "Nothing was changed"
        in admin.post(f"/admin/raters/{rater}/reinstate", data={**form, "by": " "}).text
    )
    done = admin.post(f"/admin/raters/{rater}/reinstate", data=form)
    assert done.status_code == 303 and done.headers["location"] == f"/admin/raters/{rater}"
    page = admin.get(f"/admin/raters/{rater}").text
    assert element(page, "rater-excluded") == "Not excluded."
    assert element(page, "rater-reinstated").startswith("Reinstated by Dr Lee, ")
    assert 'id="reinstate-form"' not in page
    quality = _quality(admin.get("/admin").text, rater)
    assert quality["excluded"] == "" and quality["verdicts counted"] != "0"
    assert admin.get("/admin/raters/r-nobody").status_code == 404
