"""What the web app must refuse: pages without a session, another rater's task, forms without
their CSRF token, raters on admin pages, markup in a reply, and empty or over-long input;
each refusal stores nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from heart.config import PairsSpec
from heart.judging import build_pairs
from heart.people import invite
from heart.store import CompletionRow, JudgmentRow, LabelRow, RaterRow, Store, TaskRow
from heart.web import create_app
from heart.web._session import ADMIN_COOKIE, RATER_COOKIE

from .conftest import ADMIN_TOKEN, SECRET, WebStudy, element, hidden, reply_text, sign_in

MakeStudy = Callable[..., WebStudy]
ANSWERS: dict[str, dict[str, Any]] = {
    "write": {"text": "That sounds so hard, and I'm glad you told me."},
    "judge": {"choice": "A+", "rationale": "It listens first."},
    "label": {"strategies": ["Emotional Validation"]},
}


def _stored(store: Store) -> tuple[int, int, int, int]:
    """Human completions, judgments, labels and submitted seats in the store."""
    with store.session() as s:
        count = func.count()
        return (
            s.scalar(select(count).where(CompletionRow.system == "human")) or 0,
            s.scalar(select(count).select_from(JudgmentRow)) or 0,
            s.scalar(select(count).select_from(LabelRow)) or 0,
            s.scalar(select(count).select_from(TaskRow).where(TaskRow.done)) or 0,
        )


def _held(store: Store, rater: str, kind: str) -> str:
    with store.session() as s:
        (task,) = s.scalars(
            select(TaskRow.id).where(TaskRow.rater_id == rater, TaskRow.kind == kind)
        ).all()
    return task


@pytest.mark.parametrize("kind", ["write", "judge", "label"])
def test_without_a_session_every_task_page_redirects_to_the_start(
    web_study: MakeStudy, kind: str
) -> None:
    study = web_study(items=1, label_completions=1)
    app = study.make_app()
    anonymous = study.client(app)
    forged = TestClient(app, follow_redirects=False, cookies={RATER_COOKIE: "r-123.forged.sig"})
    for client in (anonymous, forged):
        for response in (
            client.get(f"/{kind}"),
            client.post(f"/{kind}", data={"task": "x", "csrf": "y", **ANSWERS[kind]}),
        ):
            assert response.status_code == 303 and response.headers["location"] == "/"
    assert "open the personal link" in anonymous.get("/").text
    with study.store.session() as s:
        assert s.scalar(select(TaskRow.id).where(TaskRow.rater_id.is_not(None))) is None
    assert _stored(study.store) == (0, 0, 0, 0)


def test_an_unknown_invite_gets_a_clear_refusal_and_no_session(web_study: MakeStudy) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    response = client.get("/invite/not-a-real-token")
    assert response.status_code == 403 and "invite link is not valid" in response.text
    assert RATER_COOKIE not in response.cookies
    assert client.get("/write").status_code == 303


def test_session_cookies_are_http_only_and_same_site(web_study: MakeStudy) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    ((_, token),) = invite(study.store, 1)
    cookie = client.get(f"/invite/{token}").headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    admin = client.get(f"/admin?token={ADMIN_TOKEN}").headers["set-cookie"].lower()
    assert admin.startswith(ADMIN_COOKIE) and "httponly" in admin and "samesite=lax" in admin


@pytest.mark.parametrize("kind", ["write", "judge", "label"])
def test_rater_b_can_neither_read_nor_submit_rater_a_task(web_study: MakeStudy, kind: str) -> None:
    study = web_study(items=2, label_completions=2)
    app = study.make_app()
    a_client, b_client = study.client(app), study.client(app)
    a, b = sign_in(a_client, study.store, flow=kind), sign_in(b_client, study.store, flow=kind)
    a_page = a_client.get(f"/{kind}").text
    a_task, a_handle = _held(study.store, a, kind), hidden(a_page, "task")
    # B asking for A's handle (or A's real task id) still gets B's own task, never A's.
    for asked in (a_handle, a_task):
        b_page = b_client.get(f"/{kind}", params={"task": asked}).text
        assert hidden(b_page, "task") != a_handle
    b_task = _held(study.store, b, kind)
    assert b_task != a_task
    b_csrf = hidden(b_page, "csrf")
    for stolen in (a_handle, a_task, "", "tâche"):
        refused = b_client.post(f"/{kind}", data={"task": stolen, "csrf": b_csrf, **ANSWERS[kind]})
        assert refused.status_code == 400
        assert "not assigned to you" in element(refused.text, "message")
        assert hidden(refused.text, "task") != a_handle  # B is shown B's own task again
    assert _stored(study.store) == (0, 0, 0, 0)
    with study.store.session() as s:
        row = s.get(TaskRow, a_task)
        assert row is not None and row.rater_id == a and not row.done
    # A's own submission still goes through.
    done = a_client.post(
        f"/{kind}", data={"task": a_handle, "csrf": hidden(a_page, "csrf"), **ANSWERS[kind]}
    )
    assert done.status_code == 303 and sum(_stored(study.store)) == 2


@pytest.mark.parametrize("kind", ["write", "judge", "label"])
def test_a_form_without_its_csrf_token_is_refused(web_study: MakeStudy, kind: str) -> None:
    study = web_study(items=2, label_completions=2)
    app = study.make_app()
    client, other = study.client(app), study.client(app)
    sign_in(client, study.store, flow=kind)
    sign_in(other, study.store, flow=kind)
    page = client.get(f"/{kind}").text
    task = hidden(page, "task")
    other_csrf = hidden(other.get(f"/{kind}").text, "csrf")
    for csrf in (None, "", "0" * 40, "jeton-volé", other_csrf):
        data = {"task": task, **ANSWERS[kind]} | ({} if csrf is None else {"csrf": csrf})
        response = client.post(f"/{kind}", data=data)
        assert response.status_code == 403
        assert "Nothing was saved" in element(response.text, "message")
    assert _stored(study.store) == (0, 0, 0, 0)


def test_admin_pages_refuse_raters_and_wrong_tokens(web_study: MakeStudy) -> None:
    study = web_study(items=1)
    app = study.make_app()
    rater = study.client(app)
    sign_in(rater, study.store)
    session = rater.cookies[RATER_COOKIE]
    stranger = TestClient(app, follow_redirects=False, cookies={ADMIN_COOKIE: session})
    for client in (rater, stranger, study.client(app)):
        for path in ("/admin", "/admin/export/completions.csv", "/admin/export/judgments.jsonl"):
            response = client.get(path)
            assert response.status_code == 403 and "Admin only" in response.text
    for token in (ADMIN_TOKEN[:-1] + "x", "", "clé"):
        wrong = rater.get("/admin", params={"token": token})
        assert wrong.status_code == 403 and ADMIN_COOKIE not in wrong.cookies
    # An admin cookie issued under another admin token (an earlier run) no longer opens it.
    earlier = create_app(study.root, admin_token="the-token-of-an-earlier-run", secret=SECRET)
    try:
        before = TestClient(earlier, follow_redirects=False)
        before.get("/admin", params={"token": "the-token-of-an-earlier-run"})
        assert before.get("/admin").status_code == 200
        stale = {ADMIN_COOKIE: before.cookies[ADMIN_COOKIE]}
        assert TestClient(app, cookies=stale).get("/admin").status_code == 403
    finally:
        earlier.state.web.study.close()


def test_a_reply_with_a_script_tag_is_stored_as_text_and_shown_escaped(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, writers_per_item=1)
    client = study.client(study.make_app())
    sign_in(client, study.store, flow="write")
    reply = 'I hear you <script>alert("x")</script> and I am here.'
    page = client.get("/write").text
    too_long = client.post(
        "/write",
        data={"task": hidden(page, "task"), "csrf": hidden(page, "csrf"),
              "text": reply + " more" * 80},
    )  # fmt: skip
    assert too_long.status_code == 400 and "<script>alert" not in too_long.text
    assert element(too_long.text, "text").startswith(reply)  # kept, as escaped text
    sent = client.post(
        "/write", data={"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), "text": reply}
    )
    assert sent.status_code == 303
    with study.store.session() as s:
        (stored,) = s.scalars(select(CompletionRow.text).where(CompletionRow.system == "human"))
    assert stored == reply
    # The reply is judged next to the models' replies: a judge sees it as text.
    build_pairs(study.store, PairsSpec(), seed=0)
    judge = study.client(study.make_app())
    sign_in(judge, study.store, flow="judge")
    shown = []
    while (answer := judge.get("/judge")).status_code == 200:
        page = answer.text
        assert "<script>alert" not in page
        shown += [reply_text(page, "reply-a"), reply_text(page, "reply-b")]
        judge.post(
            "/judge",
            data={"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), "choice": "=",
                  "rationale": "Both fine."},
        )  # fmt: skip
        if reply in shown:
            assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
            break
    assert reply in shown


LONG = " ".join(["word"] * 81)
CASES = [
    ("write", {"text": ""}, "at least 3 words"),
    ("write", {"text": "   "}, "at least 3 words"),
    ("write", {"text": LONG}, "80 words or fewer"),
    ("write", {"text": "I hear " + "you" * 400}, "under 960 characters"),
    ("judge", {"choice": "", "rationale": "Kinder."}, "choose one of the five options"),
    ("judge", {"choice": "A+++", "rationale": "Kinder."}, "choose one of the five options"),
    ("judge", {"choice": "B+", "rationale": " "}, "short reason"),
    ("judge", {"choice": "B+", "rationale": "x" * 2001}, "under 2,000 characters"),
    ("judge", {"choice": "B+", "rationale": "Kind.", "checklist": ["tone"]}, "checklist"),
    ("label", {}, 'or "none of these"'),
    ("label", {"strategies": ["Mind Reading"]}, "unknown strategies"),
    ("write", {"text": "I hear you,\u202e truly."}, "control character (U+202E RIGHT-TO-LEFT"),
    ("write", {"text": "I hear\x00 you, truly."}, "control character (U+0000) at character 7"),
    ("judge", {"choice": "B+", "rationale": "Kind\x1b[8mer."}, "control character (U+001B)"),
    ("label", {"strategies": ["Affirmation\u2066"]}, "control character (U+2066 LEFT-TO-RIGHT"),
]


@pytest.mark.parametrize(("kind", "data", "says"), CASES)
def test_empty_or_over_long_input_gets_a_clear_message_and_stores_nothing(
    web_study: MakeStudy, kind: str, data: dict[str, Any], says: str
) -> None:
    study = web_study(items=1, label_completions=1)
    client = study.client(study.make_app())
    sign_in(client, study.store, flow=kind)
    page = client.get(f"/{kind}").text
    fields = {"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), **data}
    response = client.post(f"/{kind}", data=fields)
    assert response.status_code == 400
    assert says.lower() in element(response.text, "message").lower()
    assert hidden(response.text, "task") == fields["task"]  # the same task, ready to fix
    if kind == "write" and data["text"].strip():
        assert element(response.text, "text") == " ".join(data["text"].split())  # input kept
    if kind == "judge" and data["choice"] == "B+":
        assert 'value="B+" checked' in response.text
    assert _stored(study.store) == (0, 0, 0, 0)


def test_a_prolific_link_with_a_control_character_is_refused_and_stores_nobody(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    response = client.get("/prolific", params={"PROLIFIC_PID": "P\u202e1", "STUDY_ID": "S"})
    assert response.status_code == 400 and RATER_COOKIE not in response.cookies
    assert "no valid participant id" in element(response.text, "message")
    with study.store.session() as s:
        assert s.scalar(select(func.count()).select_from(RaterRow)) == 0


def test_a_post_far_beyond_any_form_is_refused_before_it_is_read(web_study: MakeStudy) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    sign_in(client, study.store, flow="write")
    page = client.get("/write").text
    huge = {"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), "text": "a " * 40_000}
    response = client.post("/write", data=huge)
    assert response.status_code == 413
    assert "far more text than this form takes" in element(response.text, "message")
    as_json = client.post("/write", json={"text": "I hear you, truly."})
    assert as_json.status_code == 415
    assert _stored(study.store) == (0, 0, 0, 0)


def test_every_answer_carries_the_security_headers_and_only_pages_are_never_cached(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    sign_in(client, study.store, flow="write")
    page = client.get("/write")
    answers = {
        "page": page,
        "redirect": client.post("/write", data={"task": hidden(page.text, "task"),
                                                "csrf": hidden(page.text, "csrf"),
                                                "text": "That sounds so hard for you."}),
        "refusal": client.post("/judge", data={"csrf": "forged"}),
        "missing": client.get("/no-such-page"),
        "admin": client.get("/admin"),
        "static": client.get("/static/heart.css"),
    }  # fmt: skip
    assert [a.status_code for a in answers.values()] == [200, 303, 403, 404, 403, 200]
    for name, answer in answers.items():
        headers = answer.headers
        assert "script-src 'self'" in headers["content-security-policy"], name
        assert "frame-ancestors 'none'" in headers["content-security-policy"], name
        assert headers["x-content-type-options"] == "nosniff", name
        assert headers["x-frame-options"] == "DENY", name
        assert headers["referrer-policy"] == "no-referrer", name
        assert len(headers.get_list("content-security-policy")) == 1, name
        cached = headers.get("cache-control")
        assert (cached != "no-store") if name == "static" else (cached == "no-store"), name
