"""A participant's journey through the pages, with what lands in the store: the consent page
before any task (its time and text kept), the instructions (the rubric only when the study
shows it), the practice pair kept apart from the work, task n of m with the time so far, the
saved note, "None
of these" when labelling, and the finish page with the completion code."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from httpx2 import Response
from markupsafe import escape
from sqlalchemy import func, select

from heart.config import PeopleSpec
from heart.people import CHOICES, Task
from heart.prompts import load_prompt
from heart.store import (
    ConsentRow,
    JudgmentRow,
    LabelRow,
    PracticeRow,
    TaskRow,
    counted_judgment,
)
from heart.strategies import load_taxonomy
from heart.types import sha256_hex
from heart.web._guide import PRACTICE, SCALE_EXAMPLES, default_consent
from heart.web._state import make_templates

from .conftest import WebStudy, element, get_ready, hidden, sign_in, write_study

MakeStudy = Callable[..., WebStudy]


def _judge(client: TestClient, page: str, choice: str = "A+", reason: str = "Kinder.") -> Response:
    return client.post(
        "/judge",
        data={"task": hidden(page, "task"), "csrf": hidden(page, "csrf"), "choice": choice,
              "rationale": reason},
    )  # fmt: skip


def test_every_task_route_sends_a_rater_without_consent_to_the_consent_page(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, label_completions=1)
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, ready=False)
    for kind in ("write", "judge", "label"):
        shown = client.get(f"/{kind}")
        assert shown.status_code == 303 and shown.headers["location"] == f"/consent?next=/{kind}"
        sent = client.post(f"/{kind}", data={"csrf": "x", "text": "I hear you, truly."})
        assert sent.status_code == 303 and sent.headers["location"] == f"/consent?next=/{kind}"
    for path in ("/instructions", "/practice"):
        assert client.get(path).headers["location"] == "/consent?next=/instructions"
    with study.store.session() as s:
        assert s.scalar(select(func.count()).where(TaskRow.rater_id == rater)) == 0  # no claim
    page = client.get("/consent?next=/judge")
    assert page.status_code == 200
    for word in ("replies you write", "verdicts", "reasons", "strategy labels", "times",
                 "pseudonymous id", "one-way hash", "How it is used", "voluntary"):  # fmt: skip
        assert word in element(page.text, "consent-text"), word
    before = dt.datetime.now(dt.UTC)
    refused = client.post("/consent", data={"csrf": hidden(page.text, "csrf")})
    assert refused.status_code == 400  # the button says "agree"; nothing else is consent
    wrong = client.post("/consent", data={"csrf": "forged", "agree": "yes"})
    assert wrong.status_code == 403
    with study.store.session() as s:
        assert s.get(ConsentRow, rater) is None
    agreed = client.post(
        "/consent", data={"csrf": hidden(page.text, "csrf"), "agree": "yes", "next": "/judge"}
    )
    assert agreed.status_code == 303 and agreed.headers["location"] == "/judge"
    assert client.get("/judge").headers["location"] == "/instructions"  # practice first
    assert client.get("/write").status_code == 200  # writing needs no practice
    with study.store.session() as s:
        consent = s.get_one(ConsentRow, rater)
    when = dt.datetime.fromisoformat(consent.consented_at)
    assert before - dt.timedelta(seconds=1) <= when <= dt.datetime.now(dt.UTC)
    paragraphs = [" ".join(p.split()) for p in default_consent(PeopleSpec()).split("\n\n")]
    assert consent.text_hash == sha256_hex("\n\n".join(paragraphs))
    again = client.post("/consent", data={"csrf": hidden(page.text, "csrf"), "agree": "yes"})
    assert again.headers["location"] == "/"
    with study.store.session() as s:
        assert s.get_one(ConsentRow, rater).consented_at == consent.consented_at  # the first kept
    shown = client.get("/consent")
    assert "You agreed to take part on" in element(shown.text, "agreed")
    assert 'id="consent-form"' not in shown.text


def test_the_consent_page_shows_the_study_files_text_and_sends_on_only_to_its_own_pages(
    web_study: MakeStudy,
) -> None:
    text = "We are the Kind Words team.\n\nWe keep your answers <b>for five years</b>."
    study = web_study(items=1, consent=text)
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, ready=False)
    page = client.get("/consent?next=https://elsewhere.example/")
    assert re.findall(r"<p>(.*?)</p>", page.text.split('id="consent-text"')[1])[:2] == [
        "We are the Kind Words team.",
        "We keep your answers &lt;b&gt;for five years&lt;/b&gt;.",
    ]
    assert hidden(page.text, "next") == "/"
    agreed = client.post(
        "/consent",
        data={"csrf": hidden(page.text, "csrf"), "agree": "yes", "next": "//elsewhere.example"},
    )
    assert agreed.headers["location"] == "/"
    with study.store.session() as s:
        assert s.get_one(ConsentRow, rater).text_hash == sha256_hex(
            "We are the Kind Words team.\n\nWe keep your answers <b>for five years</b>."
        )


def _instructions(study: WebStudy) -> str:
    client = study.client(study.make_app())
    sign_in(client, study.store, ready=False)
    get_consent = client.get("/consent")
    client.post("/consent", data={"csrf": hidden(get_consent.text, "csrf"), "agree": "yes"})
    return client.get("/instructions").text


AXIS_NAMES = ("Human alignment", "Empathic responsiveness", "Attunement", "Resonance",
              "Task-following")  # fmt: skip


def test_the_instructions_show_no_rubric_by_default_and_an_example_of_each_choice(
    web_study: MakeStudy,
) -> None:
    """As the HEART design has it, people judge without the rubric unless the study asks."""
    page = _instructions(web_study(items=1))
    assert 'id="axes"' not in page and 'id="no-rubric"' in page
    assert not [name for name in AXIS_NAMES if name in page]
    labels = [element(page, f"example-{n}").split(" Seeker ")[0] for n in range(1, 6)]
    assert labels == [f"{n} {label}" for n, (_, _, label) in enumerate(CHOICES.values(), 1)]
    assert [e.choice for e in SCALE_EXAMPLES] == list(CHOICES)
    assert 'href="/practice"' in page and "not counted" in page


def test_with_show_rubric_the_instructions_give_the_judge_prompts_axes_word_for_word(
    web_study: MakeStudy,
) -> None:
    page = _instructions(web_study(items=1, show_rubric=True))
    prompt = load_prompt("judge-heart", "v2").text  # the study's judge prompt version
    axes = element(page, "axes")
    assert 'id="no-rubric"' not in page
    for name in AXIS_NAMES:
        assert name in axes
    for line in prompt.splitlines():
        if re.match(r"^[HEART], ", line):
            definition = line.split(": ", 1)[1]
            assert definition[:1].upper() + definition[1:] in axes  # word for word
        if line.strip().startswith(("Strong:", "Weak:")):
            assert line.split(": ", 1)[1] in axes.replace("“", '"').replace("”", '"')


def test_the_practice_pair_repeats_until_right_with_feedback_and_is_never_counted(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, ready=False, flow="judge")
    consent = client.get("/consent")
    client.post("/consent", data={"csrf": hidden(consent.text, "csrf"), "agree": "yes"})
    page = client.get("/practice")
    assert element(page.text, "reply-b") == f"Reply B {PRACTICE.replies[1]}"
    csrf = hidden(page.text, "csrf")
    empty = client.post("/practice", data={"csrf": csrf, "choice": "A+", "rationale": " "})
    assert empty.status_code == 400 and "short reason" in element(empty.text, "message")
    assert 'value="A+" checked' in empty.text  # the choice kept, to fix the reason
    sent = client.post("/practice", data={"csrf": csrf, "choice": "A+", "rationale": "Calmer."})
    assert sent.status_code == 303 and sent.headers["location"] == "/practice"
    page = client.get("/practice").text
    feedback = element(page, "feedback")
    assert feedback.startswith("Not quite You chose “A is slightly better”; most careful")
    assert "“B is much better”" in feedback and "Your reason: “Calmer.”" in feedback
    assert "1 try left" in element(page, "retry") and 'id="task-form"' in page
    assert page.index('id="feedback"') < page.index('id="context"')  # in view as it opens
    assert client.get("/judge").headers["location"] == "/instructions"  # not yet
    again = client.post("/practice", data={"csrf": csrf, "choice": "B++", "rationale": "B."})
    assert again.status_code == 303
    page = client.get("/practice").text
    assert element(page, "feedback").startswith("Well done") and 'id="task-form"' not in page
    late = client.post("/practice", data={"csrf": csrf, "choice": "=", "rationale": "Same."})
    assert late.headers["location"] == "/practice"  # a right answer is not answered over
    with study.store.session() as s:
        practice = s.get_one(PracticeRow, rater)
        seats = s.scalar(select(func.count()).where(TaskRow.rater_id == rater))
        judgments = s.scalar(select(func.count()).select_from(JudgmentRow))
    assert (practice.choice, practice.rationale, practice.correct, practice.tries) == (
        "B++", "B.", True, 2,
    )  # fmt: skip
    assert seats == 0 and judgments == 0  # no seat taken, no judgment stored
    assert client.get("/judge").status_code == 200  # now the real pairs
    assert PRACTICE.feedback("B+")[0] and PRACTICE.feedback("B++")[0]
    assert not PRACTICE.feedback("=")[0]


def test_a_practice_still_wrong_after_its_tries_ends_the_session_with_its_code(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, practice_tries=2, practice_code="PRACT1CE", completion_code="C0DE")
    client = study.client(study.make_app())
    client.get("/prolific?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x&flow=judge")
    consent = client.get("/consent")
    client.post("/consent", data={"csrf": hidden(consent.text, "csrf"), "agree": "yes"})
    csrf = hidden(client.get("/practice").text, "csrf")
    for choice in ("A+", "="):
        client.post("/practice", data={"csrf": csrf, "choice": choice, "rationale": "Hm."})
    page = client.get("/practice").text
    assert 'id="task-form"' not in page and "last try" in element(page, "practice-over")
    for path in ("/judge", "/next", "/instructions/../judge"):
        assert client.get(path).headers["location"] == "/done"
    late = client.post("/practice", data={"csrf": csrf, "choice": "B++", "rationale": "B."})
    assert late.headers["location"] == "/practice"  # no third try
    done = client.get("/done").text
    assert element(done, "ending").startswith("The practice pair was not answered")
    assert element(done, "completion-code") == "PRACT1CE"
    with study.store.session() as s:
        assert s.scalar(select(func.count()).where(TaskRow.rater_id.is_not(None))) == 0


def test_each_task_page_says_n_of_m_and_the_next_says_the_last_answer_was_saved(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, seed=3)  # three pairs
    client = study.client(study.make_app())
    sign_in(client, study.store, flow="judge")
    seen = []
    for n in (1, 2, 3):
        page = client.get("/judge").text
        progress = element(page, "task-progress")
        seen.append(progress)
        assert ('id="saved"' in page) == (n > 1)
        assert 'id="saved"' not in client.get("/judge").text  # shown once
        response = _judge(client, page)
        assert response.status_code == 303 and "heart_saved=judge" in response.headers[
            "set-cookie"]  # fmt: skip
    assert [s.split(" · ")[0] for s in seen] == ["Task 1 of 3", "Task 2 of 3", "Task 3 of 3"]
    assert all(re.fullmatch(r"Task \d of 3 · time so far: under a minute", s) for s in seen)
    assert client.get(response.headers["location"]).headers["location"] == "/done"
    done = client.get("/done").text
    assert "You have finished" in done and element(done, "saved").startswith("Saved")
    with study.store.session() as s:
        counted = s.scalar(select(func.count()).select_from(JudgmentRow).where(counted_judgment()))
    assert counted == 3


def test_the_count_stops_at_the_per_person_cap_and_the_finish_page_gives_the_code(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=3, seed=3, tasks_per_person=2, completion_code="C0DE-42X")
    client = study.client(study.make_app())
    entry = "/prolific?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x&flow=judge"
    assert client.get(entry).status_code == 303
    get_ready(client)
    for n in (1, 2):
        page = client.get("/judge").text
        assert element(page, "task-progress").startswith(f"Task {n} of 2 ·")  # 9 pairs open
        _judge(client, page)
    assert client.get("/judge").headers["location"] == "/done"
    done = client.get("/done").text
    assert "You have finished" in done and element(done, "completion-code") == "C0DE-42X"
    assert 'href="https://app.prolific.com/submissions/complete?cc=C0DE-42X"' in done


def test_a_label_is_strategies_or_none_of_these_never_both_or_neither(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=2, label_completions=2, labellers_per_completion=1)
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, flow="label")
    page = client.get("/label").text
    for strategy in load_taxonomy().strategies:  # each box with its definition and an example
        assert f"{escape(strategy.definition)}. " in page
        assert f"For example: “{escape(strategy.examples[0])}”" in page
    fields = {"task": hidden(page, "task"), "csrf": hidden(page, "csrf")}
    neither = client.post("/label", data=fields)
    assert neither.status_code == 400
    assert 'or "None of these"' in element(neither.text, "message")
    both = client.post("/label", data={**fields, "none": "yes", "strategies": ["Affirmation"]})
    assert both.status_code == 400 and "not both" in element(both.text, "message")
    assert 'value="Affirmation" checked' in both.text and 'value="yes" checked' in both.text
    none = client.post("/label", data={**fields, "none": "yes"})
    assert none.status_code == 303
    with study.store.session() as s:
        (label,) = s.scalars(select(LabelRow).where(LabelRow.rater_id == rater))
    assert label.strategies == []


@pytest.mark.parametrize("instruction", [None, "For this pair, choose “B is much better”."])
def test_a_judge_page_shows_an_instructed_response_above_the_scale(
    web_study: MakeStudy, instruction: str | None
) -> None:
    study = web_study(items=1)
    client = study.client(study.make_app())
    sign_in(client, study.store, flow="judge")
    real = client.get("/judge")  # the page as served, with its context
    context = dict(real.context)  # type: ignore[attr-defined]
    task = context["task"]
    context["task"] = Task(task.id, task.kind, task.context, task.replies, task.expires_at,
                           instruction=instruction)  # fmt: skip
    page = make_templates().get_template("judge.html").render(context)
    if instruction is None:
        assert 'id="instruction"' not in page
    else:
        assert element(page, "instruction") == instruction
        assert page.index('id="instruction"') < page.index('id="scale"')


def test_a_changed_consent_text_is_asked_again_and_the_new_agreement_kept(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, consent="We keep answers for a year.")
    client = study.client(study.make_app())
    rater = sign_in(client, study.store, flow="judge")
    with study.store.session() as s:
        first = s.get_one(ConsentRow, rater)
    assert client.get("/judge").status_code == 200
    write_study(study.root, study.store, {"check_every": 0, "consent": "Now for two years."}, 7)
    again = study.client(study.make_app())  # the server restarted with the new text
    again.cookies = client.cookies
    assert again.get("/write").headers["location"] == "/consent?next=/write"
    assert again.get("/judge").headers["location"] == "/consent?next=/judge"
    page = again.get("/consent?next=/judge")
    assert "Now for two years." in element(page.text, "consent-text")
    assert 'id="agreed"' not in page.text
    again.post("/consent", data={"csrf": hidden(page.text, "csrf"), "agree": "yes"})
    with study.store.session() as s:
        second = s.get_one(ConsentRow, rater)
    assert second.text_hash == sha256_hex("Now for two years.") != first.text_hash
    assert second.consented_at > first.consented_at
    assert again.get("/judge").status_code == 200  # the practice pair is not asked again


def test_the_default_consent_names_the_researcher_approval_age_and_pay(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1, researcher="Dr Ana Lee, Kind Words Lab (ana@uni.example)",
                      ethics_approval="the University Ethics Board (ref. KW-2026-14)",
                      min_age=21, pay_per_hour=9.5)  # fmt: skip
    client = study.client(study.make_app())
    sign_in(client, study.store, ready=False)
    text = element(client.get("/consent").text, "consent-text")
    for said in ("It is run by Dr Ana Lee, Kind Words Lab (ana@uni.example).",
                 "It was approved by the University Ethics Board (ref. KW-2026-14).",
                 "You must be 21 or older to take part.", "paid at £9.50 an hour",
                 "If you have a question, contact Dr Ana Lee"):  # fmt: skip
        assert said in text, said
    plain = element(study.client(study.make_app()).get("/").text, "message")
    assert plain.startswith("To start, open the personal link")
    default = default_consent(PeopleSpec())
    assert "the study team that sent you the link" in default and "approved" not in default
    assert "18 or older" in default and "paid" not in default


def test_a_break_is_suggested_every_break_every_tasks(web_study: MakeStudy) -> None:
    study = web_study(items=2, break_every=2)  # six pairs
    client = study.client(study.make_app())
    sign_in(client, study.store, flow="judge")
    shown = []
    for n in range(5):
        page = client.get("/judge").text
        shown.append('id="break"' in page)
        if n == 2:
            assert element(page, "break").startswith("You have done 2 tasks: a good moment for")
        _judge(client, page)
    assert shown == [False, False, True, False, True]  # before the 3rd and the 5th task
