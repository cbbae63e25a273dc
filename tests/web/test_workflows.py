"""The three workflows through the pages, as a person does them, with what lands in the store:
writing replies, judging pairs in the order shown, labelling strategies, the Prolific entry
and its completion code, the live word count, and pages that never give a system away."""

from __future__ import annotations

import re
from collections.abc import Callable

from markupsafe import escape
from sqlalchemy import select

from heart.people import CHOICES
from heart.store import CompletionRow, JudgmentRow, LabelRow, PairRow, RaterRow, TaskRow
from heart.strategies import load_taxonomy

from ..helpers import attentive_choice
from .conftest import SYSTEMS, WebStudy, element, get_ready, hidden, reply_text, sign_in

MakeStudy = Callable[..., WebStudy]
SEED_WITH_BOTH_ORDERS = 3  # serves the three pairs of item i0 as ab, ba, ba


def test_a_writer_writes_one_reply_per_context_until_none_is_left(web_study: MakeStudy) -> None:
    study = web_study(items=2)
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, flow="write")
    sent = []
    for n in range(2):
        page = client.get("/write")
        assert page.status_code == 200
        for part in ('id="task-form"', 'id="context"', 'id="text"', 'name="text"'):
            assert part in page.text
        assert element(page.text, "context").startswith("The conversation so far Seeker My sister")
        assert element(page.text, "word-count").startswith("0 words")
        assert "about 40 words" in page.text and "without AI tools" in page.text
        text = f"That sounds so lonely, and it makes sense you miss her ({n})."
        sent.append(text)
        done = client.post(
            "/write",
            data={"task": hidden(page.text, "task"), "csrf": hidden(page.text, "csrf"),
                  "text": text},
        )  # fmt: skip
        assert done.status_code == 303 and done.headers["location"] == "/write"
    assert client.get("/write").headers["location"] == "/done"  # no writing left for them
    last = client.get("/done")
    assert last.status_code == 200 and "You have finished" in last.text
    assert element(last.text, "ending").startswith("The study has no more work for you right now")
    assert 'id="completion-code"' not in last.text  # invite entries get no code
    with study.store.session() as s:
        rows = s.execute(
            select(CompletionRow.item_id, CompletionRow.text, CompletionRow.contributor).where(
                CompletionRow.system == "human"
            )
        ).all()
        done_seats = s.scalars(
            select(TaskRow.id).where(TaskRow.rater_id == rater, TaskRow.done)
        ).all()
    assert sorted(rows) == [("i0", sent[0], rater), ("i1", sent[1], rater)]
    assert len(done_seats) == 2


def test_judging_three_pairs_stores_each_verdict_in_the_terms_of_the_order_shown(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, seed=SEED_WITH_BOTH_ORDERS)
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, flow="judge")
    answers = ["A++", "B+", "="]
    seen: list[tuple[str, str, str]] = []  # (completion shown as A, as B, choice)
    for choice in answers:
        page = client.get("/judge")
        assert page.status_code == 200
        a = study.replies[reply_text(page.text, "reply-a")]
        b = study.replies[reply_text(page.text, "reply-b")]
        for key, (_, _, label) in CHOICES.items():
            assert f'value="{key}"' in page.text and label in page.text
        assert "longer or shorter" in page.text and "shown first or second" in page.text
        response = client.post(
            "/judge",
            data={"task": hidden(page.text, "task"), "csrf": hidden(page.text, "csrf"),
                  "choice": choice, "rationale": "The first one listens; the other rushes.",
                  "checklist": ["length", "position"]},
        )  # fmt: skip
        assert response.status_code == 303
        seen.append((a, b, choice))
    assert client.get("/judge").headers["location"] == "/done"  # each pair once per rater
    with study.store.session() as s:
        pairs = {p.id: p for p in s.scalars(select(PairRow))}
        judgments = {j.pair_id: j for j in s.scalars(select(JudgmentRow))}
    assert len(judgments) == 3 and {j.judge for j in judgments.values()} == {rater}
    orders = set()
    for a, b, choice in seen:
        (pair,) = [p for p in pairs.values() if {p.a_id, p.b_id} == {a, b}]
        judgment = judgments[pair.id]
        order = "ab" if pair.a_id == a else "ba"
        orders.add(order)
        side, strength, _ = CHOICES[choice]
        winner = {"A": a, "B": b}.get(side)
        expected = "tie" if winner is None else ("a" if winner == pair.a_id else "b")
        assert (judgment.order, judgment.winner, judgment.strength) == (order, expected, strength)
        assert judgment.rationale == "The first one listens; the other rushes."
        assert f'"choice": "{choice}"' in (judgment.raw or "")
        assert '"checklist": ["length", "position"]' in (judgment.raw or "")
    assert orders == {"ab", "ba"}  # the seed serves both orders, so the mapping is pinned


def test_a_labeller_ticks_the_strategies_a_reply_uses(web_study: MakeStudy) -> None:
    study = web_study(items=2, label_completions=2, labellers_per_completion=1)
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, flow="label")
    page = client.get("/label")
    assert page.status_code == 200
    shown = study.replies[reply_text(page.text, "reply")]
    for name, gloss in load_taxonomy().glosses().items():
        assert f'value="{name}"' in page.text and escape(gloss) in page.text
    response = client.post(
        "/label",
        data={"task": hidden(page.text, "task"), "csrf": hidden(page.text, "csrf"),
              "strategies": ["Reflective Statements", "Emotional Validation"]},
    )  # fmt: skip
    assert response.status_code == 303 and response.headers["location"] == "/label"
    with study.store.session() as s:
        (label,) = s.scalars(select(LabelRow)).all()
    assert (label.completion_id, label.rater_id) == (shown, rater)
    assert label.strategies == ["Emotional Validation", "Reflective Statements"]
    second = client.get("/label")
    assert study.replies[reply_text(second.text, "reply")] != shown


def test_a_prolific_participant_comes_in_from_the_url_and_gets_the_code_at_the_end(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, writers_per_item=1, completion_code="C0DE-42X")
    client = study.client(study.make_app())
    url = "/prolific?PROLIFIC_PID=5f1a2b&STUDY_ID=st-9&SESSION_ID=se-1"
    entered = client.get(url)
    assert entered.status_code == 303 and entered.headers["location"] == "/"
    assert 'href="/consent?next=/next"' in client.get("/").text
    assert client.get("/next").headers["location"] == "/consent?next=/next"
    assert client.get("/done").headers["location"] == "/consent?next=/next"
    get_ready(client)
    assert client.get("/next").headers["location"] == "/write"  # the flow starts with writing
    page = client.get("/write")
    sent = client.post(
        "/write",
        data={"task": hidden(page.text, "task"), "csrf": hidden(page.text, "csrf"),
              "text": "I can hear how much you care about her, even now."},
    )  # fmt: skip
    assert sent.headers["location"] == "/write"  # the flow is still at writing: it looks there
    assert client.get("/write").headers["location"] == "/judge"  # no more: on to judging
    assert client.get("/done").headers["location"] == "/judge"  # no code before the end
    while (page := client.get("/judge")).status_code == 200:
        client.post(
            "/judge",
            data={"task": hidden(page.text, "task"), "csrf": hidden(page.text, "csrf"),
                  "choice": "A+", "rationale": "Warmer."},
        )  # fmt: skip
    assert page.headers["location"] == "/done"
    done = client.get("/done")
    assert element(done.text, "completion-code") == "C0DE-42X"
    assert element(done.text, "ending").startswith("The study has no more work for you")
    assert client.get(url).status_code == 303  # the same participant again: the same rater
    with study.store.session() as s:
        raters = s.scalars(select(RaterRow)).all()
        (completion,) = s.scalars(select(CompletionRow).where(CompletionRow.system == "human"))
    assert len(raters) == 1 and raters[0].meta["entry"] == "prolific"
    assert "5f1a2b" not in str(raters[0].meta)  # the participant id is kept only as a hash
    assert completion.contributor == raters[0].id
    missing = client.get("/prolific?STUDY_ID=st-9")
    assert missing.status_code == 400 and "participant id" in missing.text


def test_prolific_entry_takes_only_the_configured_study_and_stops_at_the_cap(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=3, completion_code="C0DE-42X", prolific_study="st-9",
                      tasks_per_person=2)  # fmt: skip
    app = study.make_app()
    other = study.client(app).get("/prolific?PROLIFIC_PID=5f1a2b&STUDY_ID=st-1&SESSION_ID=s")
    assert other.status_code == 403 and "another study" in other.text
    assert "set-cookie" not in other.headers
    client = study.client(app)
    entry = "/prolific?PROLIFIC_PID=5f1a2b&STUDY_ID=st-9&SESSION_ID=s"
    bad = study.client(app).get(entry + "&flow=write,rate")
    assert bad.status_code == 400 and "got write,rate" in bad.text
    assert client.get(entry + "&flow=write").status_code == 303  # the link names its flow
    get_ready(client)
    for n in range(2):
        page = client.get("/write")
        assert 'id="task-form"' in page.text
        client.post(
            "/write",
            data={"task": hidden(page.text, "task"), "csrf": hidden(page.text, "csrf"),
                  "text": f"That sounds like so much to carry right now ({n})."},
        )  # fmt: skip
    for kind in ("write", "judge", "next"):  # two tasks done: nothing more of either kind
        assert client.get(f"/{kind}").headers["location"] == "/done"
    done = client.get("/done")
    assert element(done.text, "completion-code") == "C0DE-42X"
    assert element(done.text, "ending").startswith("You have done all 2 tasks of this session")
    with study.store.session() as s:
        human = s.scalars(select(CompletionRow).where(CompletionRow.system == "human")).all()
    assert len(human) == 2


def test_the_word_count_follows_the_text_and_needs_a_session(web_study: MakeStudy) -> None:
    study = web_study(items=1)
    app = study.make_app()
    client = study.client(app)
    assert study.client(app).post("/words", data={"text": "a b"}).status_code == 403
    sign_in(client, study.store, flow="write")
    page = client.get("/write")
    assert 'hx-post="/words"' in page.text and 'hx-target="#word-count"' in page.text
    counted = client.post("/words", data={"text": "I am  here\nfor you"})
    assert counted.status_code == 200
    assert re.fullmatch(r'<span id="word-count"[^>]*>5 words \(aim for about 40\)</span>\s*',
                        counted.text)  # fmt: skip


def test_htmx_is_served_from_the_app_itself(web_study: MakeStudy) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    script = client.get("/static/htmx.min.js")
    assert script.status_code == 200 and script.text.startswith("var htmx=")
    assert "Zero-Clause BSD" in client.get("/static/htmx.LICENSE").text
    page = client.get("/").text
    assert '<script src="/static/htmx.min.js" defer></script>' in page
    assert "http://" not in page and "https://" not in page


def test_no_page_names_a_system_a_family_or_an_id(web_study: MakeStudy) -> None:
    study = web_study(items=2, label_completions=3, check_every=1)
    client = study.client(study.make_app())
    sign_in(client, study.store)
    pages = [client.get("/").text]
    for kind, data in (
        ("write", {"text": "That sounds so hard; I'm sorry it happened."}),
        ("judge", {"rationale": "Warmer."}),
        ("label", {"strategies": ["Emotional Validation"]}),
    ):
        while (answer := client.get(f"/{kind}")).status_code == 200:
            page = answer.text
            pages.append(page)
            choice = {"choice": attentive_choice(page) or "A+"} if kind == "judge" else {}
            response = client.post(
                f"/{kind}",
                data={"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), **data,
                      **choice},
            )  # fmt: skip
            assert response.status_code == 303
        pages.append(client.get(answer.headers["location"]).text)
    with study.store.session() as s:
        ids = [*s.scalars(select(PairRow.id)), *s.scalars(select(CompletionRow.id)),
               *s.scalars(select(TaskRow.id)), *s.scalars(select(TaskRow.target))]  # fmt: skip
        checks = s.scalar(select(TaskRow.id).where(TaskRow.check.is_not(None), TaskRow.done))
    assert checks is not None and len(pages) > 10  # check seats were served among the rest
    ids = [x for x in ids if len(x) > 4]  # not the two-letter item ids of the test rows
    banned = [*SYSTEMS, "human", "gold", "attention", "write:", "judge:", "label:", *ids]
    for page in pages:
        source = page.lower()
        assert not [word for word in banned if word.lower() in source]
