"""Coming in: the landing page, invite links and the Prolific-style entry. Either way the
rater gets a signed session cookie and is sent to the landing page; the consent page, the
instructions and the practice pair (heart.web._journey) come next."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from heart.people import (
    TaskRefused,
    plan_text,
    prolific_rater,
    rater_for_token,
    rater_steps,
    task_time,
)
from heart.store import RaterRow
from heart.web import _journey
from heart.web._session import RATER_COOKIE, RATER_MAX_AGE
from heart.web._state import current_rater, message, render, see_other, sentence, web

router = APIRouter()
router.include_router(_journey.router)

MAX_ID = 128  # longest participant, study or session id accepted from a Prolific link


def _signed_in(request: Request, rater: str, entry: str) -> Response:
    response = see_other("/")
    response.set_cookie(
        RATER_COOKIE, web(request).signer.rater_cookie(rater, entry), max_age=RATER_MAX_AGE,
        path="/", httponly=True, samesite="lax", secure=request.url.scheme == "https",
    )  # fmt: skip
    return response


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return "under a minute" if minutes < 1 else f"about {minutes} minute{'s' * (minutes != 1)}"


@router.get("/")
def landing(request: Request) -> Response:
    """The start page; signed in, what the session holds, how long it should take, and the
    one way on."""
    session = current_rater(request)
    if session is None:
        return render(request, "landing.html", signed_in=False)
    state = web(request)
    people = state.study.config.people
    with state.study.store.session() as s:
        person = s.get(RaterRow, session.rater)
        steps = rater_steps(people, person.meta if person else {})
    pace = task_time(state.study.store, people)
    tasks = people.tasks_per_person
    return render(
        request, "landing.html", signed_in=True,
        consented=_journey.consent_current(request, session),
        plan=plan_text(steps, tasks), tasks=tasks, per_task=_duration(pace.seconds),
        session_time=_duration(pace.seconds * tasks) if tasks else None, pace=pace.text(),
    )  # fmt: skip


@router.get("/invite/{token}")
def invite_entry(request: Request, token: str) -> Response:
    rater = rater_for_token(web(request).study.store, token) if len(token) <= MAX_ID else None
    if rater is None:
        return message(
            request, 403, "This link does not work",
            "The invite link is not valid. Check that you opened the whole link, or ask the "
            "study team for a new one.",
        )  # fmt: skip
    return _signed_in(request, rater, "invite")


def _incomplete(request: Request) -> Response:
    return message(
        request, 400, "This link is incomplete",
        "The link has no valid participant id. Go back to Prolific and open the study link "
        "from there.",
    )  # fmt: skip


@router.get("/prolific")
def prolific_entry(request: Request) -> Response:
    q = request.query_params
    participant, study, session = (
        q.get("PROLIFIC_PID", "").strip(), q.get("STUDY_ID", "").strip(),
        q.get("SESSION_ID", "").strip(),
    )  # fmt: skip
    if not participant or max(len(participant), len(study), len(session)) > MAX_ID:
        return _incomplete(request)
    wanted = web(request).study.config.people.prolific_study
    if wanted is not None and study != wanted:
        return message(
            request, 403, "This link belongs to another study",
            "The study id in the link is not the one this site collects answers for. Go back to "
            "Prolific and open the link of this study from there.",
        )  # fmt: skip
    flow = q.get("flow") or None
    try:
        rater = prolific_rater(web(request).study.store, participant, study, session, flow)
    except TaskRefused:  # an id with a control character in it
        return _incomplete(request)
    except ValueError as exc:  # a flow that names no kind of work
        return message(
            request, 400, "This link names work the study does not have",
            f"{sentence(str(exc))} Go back to Prolific and open the study link from there.",
        )  # fmt: skip
    return _signed_in(request, rater, "prolific")
