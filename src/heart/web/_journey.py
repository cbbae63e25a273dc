"""A participant's way to the work: the information and consent page (accepted once, its time
and text hash stored), the instructions, and the practice pair with feedback (stored apart from
every seat and judgment); the gate every task route passes; and where a task page says the
person stands: task n of m, the time so far, and that their last answer was saved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy import update

from heart.config import PeopleSpec
from heart.people import CHOICES, JUDGE, KINDS, Standing, TaskRefused, plain_text
from heart.store import ConsentRow, PracticeRow, add_if_missing, now_iso
from heart.web._forms import Form, read_form
from heart.web._guide import (
    PRACTICE,
    SCALE_EXAMPLES,
    AxisGuide,
    consent_hash,
    consent_paragraphs,
    default_consent,
    rubric_axes,
)
from heart.web._session import RaterSession
from heart.web._state import (
    ROLES,
    current_rater,
    form_sender,
    message,
    render,
    see_other,
    sentence,
    web,
)

router = APIRouter()

SAVED_COOKIE = "heart_saved"
"""Set when an answer is stored; the next page of that kind says so once and clears it."""
AFTER_CONSENT = (*(f"/{kind}" for kind in KINDS), "/instructions", "/next")
"""Where the consent page may send a person on (anything else: the start page)."""


def consent_current(request: Request, session: RaterSession) -> bool:
    """Whether the rater of ``session`` has accepted the consent page as it reads now (a
    changed text is asked again)."""
    return session.consent_hash == consent_hash(consent_text(request))


def practice_left(request: Request, session: RaterSession) -> int:
    """Tries at the practice pair the rater has left (none once answered right)."""
    if session.practised:
        return 0
    return max(0, web(request).study.config.people.practice_tries - session.practice_tries)


def gate(request: Request, session: RaterSession, kind: str) -> Response | None:
    """Where a person goes before a task of ``kind``: the consent page until they accept it,
    and before judging the instructions and practice pair until they answer it right (the
    finish page once their tries are used); else None."""
    if not consent_current(request, session):
        return see_other(f"/consent?next=/{kind}")
    if kind == JUDGE and not session.practised:
        return see_other("/instructions" if practice_left(request, session) else "/done")
    return None


@dataclass(frozen=True)
class Progress:
    """Task ``n`` of ``m`` for one person, and the seconds spent on their tasks so far."""

    n: int
    m: int
    seconds: int

    @property
    def time(self) -> str:
        minutes = self.seconds // 60
        return "under a minute" if minutes < 1 else f"{minutes} min"


def progress(at: Standing, people: PeopleSpec, now: float) -> Progress:
    """Where a rater stands (``at``, read when their seat was claimed) at ``now``: n counts
    their submitted tasks of every kind (checks included, as the per-person cap does) plus this
    one; m is that count plus the tasks of the seat's kind still open to them, at most
    ``people.tasks_per_person``. The time is what their submitted tasks took (served to sent)
    and this one since it was served."""
    m = at.done + at.open
    if people.tasks_per_person is not None:
        m = min(m, people.tasks_per_person)
    seconds = at.spent + (now - at.served_at if at.served_at else 0.0)
    return Progress(at.done + 1, max(m, at.done + 1), max(0, int(seconds)))


def consent_text(request: Request) -> str:
    people = web(request).study.config.people
    return people.consent or default_consent(people)


FormDep = Annotated[Form, Depends(read_form)]


@router.get("/consent")
def consent_page(request: Request) -> Response:
    session = current_rater(request)
    if session is None:
        return see_other("/")
    wanted = request.query_params.get("next", "/")
    with web(request).study.store.session() as s:
        row = s.get(ConsentRow, session.rater)
        current = row is not None and row.text_hash == consent_hash(consent_text(request))
        agreed = row.consented_at if row and current else None
    return render(
        request,
        "consent.html",
        paragraphs=consent_paragraphs(consent_text(request)),
        csrf=web(request).signer.csrf(session),
        next=wanted if wanted in AFTER_CONSENT else "/",
        agreed=agreed,
    )


@router.post("/consent")
def consent_submit(request: Request, form: FormDep) -> Response:
    """Store the consent and go on: the time of the first agreement to the text shown now (to
    a changed text, the new agreement replaces the old)."""
    session = form_sender(request, form.get("csrf"))
    if not isinstance(session, RaterSession):
        return session
    state = web(request)
    if form.get("agree") != "yes":
        return message(
            request, 400, "Nothing was saved",
            "To take part, choose the button that says you agree; otherwise close the page.",
        )  # fmt: skip
    text_hash = consent_hash(consent_text(request))
    with state.study.store.session() as s:
        add_if_missing(
            s, ConsentRow, rater_id=session.rater, text_hash=text_hash, consented_at=now_iso()
        )
        s.execute(
            update(ConsentRow)
            .where(ConsentRow.rater_id == session.rater, ConsentRow.text_hash != text_hash)
            .values(text_hash=text_hash, consented_at=now_iso())
        )
    wanted = form.get("next")
    return see_other(wanted if wanted in AFTER_CONSENT else "/")


@router.get("/instructions")
def instructions_page(request: Request) -> Response:
    session = current_rater(request)
    if session is None:
        return see_other("/")
    if not consent_current(request, session):
        return see_other("/consent?next=/instructions")
    config = web(request).study.config
    seeker, axes = "", list[AxisGuide]()
    if config.people.show_rubric:
        seeker, axes = rubric_axes(config.judging.prompt_version)
    return render(
        request, "instructions.html", axes=axes, seeker=seeker, examples=SCALE_EXAMPLES,
        keys={key: n for n, key in enumerate(CHOICES, 1)}, practised=session.practised,
        tries=web(request).study.config.people.practice_tries,
    )  # fmt: skip


def _practice_page(
    request: Request, session: RaterSession, status: int = 200, note: str | None = None,
    form: Form | None = None,
) -> Response:  # fmt: skip
    """The practice pair: the feedback on the latest answer first (in view as the page
    opens), then the form again while tries are left and no answer was right."""
    form = form or Form({})
    with web(request).study.store.session() as s:
        answer = s.get(PracticeRow, session.rater)
        answered = (answer.choice, answer.rationale) if answer else None
    correct, feedback = PRACTICE.feedback(answered[0]) if answered else (False, "")
    left = practice_left(request, session)
    return render(
        request, "practice.html", status, practice=PRACTICE, roles=ROLES,
        csrf=web(request).signer.csrf(session), message=note,
        choices=[(key, label) for key, (_, _, label) in CHOICES.items()],
        choice=form.get("choice") if note else None,
        rationale=form.get("rationale") if note else "",
        reason=answered[1] if answered else "", answered=answered is not None,
        correct=correct, feedback=feedback, left=left,
    )  # fmt: skip


@router.get("/practice")
def practice_page(request: Request) -> Response:
    """The practice pair, or once answered, the feedback on the answer."""
    session = current_rater(request)
    if session is None:
        return see_other("/")
    if not consent_current(request, session):
        return see_other("/consent?next=/instructions")
    return _practice_page(request, session)


@router.post("/practice")
def practice_submit(request: Request, form: FormDep) -> Response:
    """Keep the practice answer apart from the work (the latest one, and how many were
    given), and show feedback; answers after a right one, or after the last try, are not
    taken."""
    session = form_sender(request, form.get("csrf"))
    if not isinstance(session, RaterSession):
        return session
    state = web(request)
    if not consent_current(request, session):
        return see_other("/consent?next=/instructions")
    if not practice_left(request, session):
        return see_other("/practice")
    choice = form.get("choice")
    try:
        if choice not in CHOICES:
            raise TaskRefused("choose one of the five options before sending")
        rationale = " ".join(plain_text(form.get("rationale"), "reason").split())
        if not rationale:
            raise TaskRefused("write a short reason for your choice (a sentence is enough)")
    except TaskRefused as exc:
        return _practice_page(request, session, 400, sentence(str(exc)), form)
    correct, _ = PRACTICE.feedback(choice)
    answer = {"choice": choice, "rationale": rationale[:2000], "correct": correct}
    tries = state.study.config.people.practice_tries
    with state.study.store.session() as s:
        if s.get(PracticeRow, session.rater) is None:
            add_if_missing(
                s, PracticeRow, rater_id=session.rater, **answer, tries=1, created_at=now_iso()
            )
        else:  # a try left, whatever another tab sent meanwhile
            s.execute(
                update(PracticeRow)
                .where(PracticeRow.rater_id == session.rater, ~PracticeRow.correct,
                       PracticeRow.tries < tries)
                .values(**answer, tries=PracticeRow.tries + 1, created_at=now_iso())
            )  # fmt: skip
    return see_other("/practice")
