"""The admin area: progress per kind, quality flags, and exports of people's work only, with
raters named by their pseudonymous ids."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select

from heart.store import JudgeRow, JudgmentRow, RaterRow

from ..strategy_rows import add_label
from .conftest import ADMIN_TOKEN, WebStudy, hidden, sign_in

MakeStudy = Callable[..., WebStudy]


def _admin(client: TestClient) -> None:
    response = client.get("/admin", params={"token": ADMIN_TOKEN})
    assert response.status_code == 303 and response.headers["location"] == "/admin"


def _row(page: str, table: str, first: str) -> list[str]:
    """The cells of the row of table ``#table`` whose first cell is ``first``."""
    body = re.search(rf'<table id="{table}">(.*?)</table>', page, re.S)
    assert body
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S):
        cells = re.findall(r"<td>(.*?)</td>", row)
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in #{table}")


def _work(study: WebStudy, client: TestClient) -> str:
    """One rater: a reply with a formula-like start, a tie judgment, a label; then a claim."""
    rater = sign_in(client, study.store)
    for kind, data in (
        ("write", {"text": "=SUM(A1) is not what I mean; I'm sorry it hurts."}),
        ("judge", {"choice": "=", "rationale": "Both kind.", "checklist": ["length"]}),
        ("label", {"strategies": ["Offer Hope", "Affirmation"]}),
    ):
        page = client.get(f"/{kind}").text
        fields = {"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), **data}
        assert client.post(f"/{kind}", data=fields).status_code == 303
    client.get("/write")  # holds the next write seat, unsubmitted
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
    quality = _row(page.text, "quality", rater)
    assert quality[:5] == [rater, "invite", "1", "1", "1"] and quality[-2] == "1"  # counted


def test_failing_checks_shows_as_an_exclusion(web_study: MakeStudy) -> None:
    study = web_study(items=1, check_every=1, raters_per_pair=1)
    app = study.make_app()
    client = study.client(app)
    rater = sign_in(client, study.store)
    while "Nothing left here" not in (page := client.get("/judge").text):
        fields = {"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), "choice": "=",
                  "rationale": "Same."}  # fmt: skip
        client.post("/judge", data=fields)  # a tie fails every gold and attention check
    admin = study.client(app)
    _admin(admin)
    page = admin.get("/admin").text
    # the first pair, then its check failed: excluded at once, and the pair back in the pool
    assert _row(page, "progress", "judge") == ["judge", "3", "0", "0", "3"]
    assert _row(page, "progress", "judge (checks)") == ["judge (checks)", "3", "1", "0", "2"]
    row = _row(page, "quality", rater)
    assert row[-2:] == ["0", "failed 1 of 1 quality checks"]  # no verdict of theirs counts
    with study.store.session() as s:
        assert s.get(RaterRow, rater).excluded_reason == "failed 1 of 1 quality checks"
    judgments = admin.get("/admin/export/judgments.jsonl").text.splitlines()
    assert len(judgments) == 1  # their verdict is kept, marked with the reason
    assert {json.loads(line)["excluded"] for line in judgments} == {row[-1]}
    assert {json.loads(line)["counted"] for line in judgments} == {False}


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
    assert admin.get("/admin/export/raters.csv").status_code == 404
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
