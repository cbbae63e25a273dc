"""Where a session goes next and how it ends: ``/next`` leads a person to the next step of
their flow (consent, instructions and practice first where needed), and ``/done`` is the finish
page, which shows a Prolific participant their code only once the session has ended: its tasks
submitted, no work left for them, quality control ending it, or the practice pair still wrong
after the tries the study allows."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import Response

from heart.config import PeopleSpec
from heart.people import (
    COMPLETE,
    EXCLUDED,
    JUDGE,
    NO_WORK,
    RETURN,
    SessionState,
    open_to,
    rater_decision,
    rater_steps,
)
from heart.people import state_of as flow_state
from heart.web._journey import SAVED_COOKIE, consent_current, practice_left
from heart.web._session import RaterSession
from heart.web._state import current_rater, render, see_other, web

router = APIRouter()

PRACTICE_FAILED = "practice"
"""The ending of a session whose practice pair was still answered wrong after its tries."""
RETURN_LINK = "https://app.prolific.com/submissions/complete?cc="
"""Prolific's page that completes a submission with the code that follows."""


def practice_over(request: Request, session: RaterSession) -> bool:
    """Whether the person has used every try at the practice pair without a right answer."""
    return not session.practised and not practice_left(request, session)


def state_of(
    request: Request, session: RaterSession, has_work: Callable[[str], bool] | None = None
) -> SessionState:
    """Where the person's session stands, from what the request read of them and, for each
    kind their flow reaches, whether work of it is open to them (``has_work``; by default a
    look at the store). When no work is left for them, after a look for seats of work stored
    since the last one."""
    state = web(request)
    store, people = state.study.store, state.study.config.people

    def open_now(kind: str) -> bool:
        return open_to(store, session.rater, kind, now=time.time()) > 0

    steps = rater_steps(people, session.meta)
    at = flow_state(
        steps, people.tasks_per_person, session.done, session.excluded, has_work or open_now
    )
    if at.ended == NO_WORK and state.seats.refresh():
        at = flow_state(steps, people.tasks_per_person, session.done, session.excluded, open_now)
    return at


def next_path(request: Request, session: RaterSession, at: SessionState | None = None) -> str:
    """The page ``session`` goes to next: the consent page until they accept it, the next
    step of their flow (for judging, the instructions and practice until answered right), or
    the finish page once the session has ended."""
    if not consent_current(request, session):
        return "/consent?next=/next"
    at = at or state_of(request, session)
    if at.kind is None:
        return "/done"
    if at.kind == JUDGE and not session.practised:
        return "/done" if practice_over(request, session) else "/instructions"
    return f"/{at.kind}"


def ending(request: Request, session: RaterSession) -> tuple[str | None, SessionState]:
    """Why the session has ended (None: it has not), and where it stands."""
    at = state_of(request, session)
    if at.kind is None:
        return at.ended, at
    if at.kind == JUDGE and practice_over(request, session):
        return PRACTICE_FAILED, at
    return None, at


def finish_code(why: str, at: SessionState, people: PeopleSpec, returned: bool) -> str | None:
    """The Prolific code for a session that ended ``why``: the completion code once work was
    done; after an exclusion, the study's code for it, else the completion code unless the
    person is to be asked to return the submission (``returned``); after the practice, its
    code. None: the person is asked to return the study instead."""
    if why in (COMPLETE, NO_WORK):
        return people.completion_code if at.done else None
    if why == EXCLUDED:
        return people.exclusion_code or (None if returned else people.completion_code)
    return people.practice_code


@router.get("/next")
def next_step(request: Request) -> Response:
    session = current_rater(request)
    if session is None:
        return see_other("/")
    return see_other(next_path(request, session))


@router.get("/done")
def done_page(request: Request) -> Response:
    session = current_rater(request)
    if session is None:
        return see_other("/")
    if not consent_current(request, session):
        return see_other("/consent?next=/next")
    why, at = ending(request, session)
    if why is None:
        return see_other(next_path(request, session, at))
    state = web(request)
    people = state.study.config.people
    decision, _, m = rater_decision(state.study.store, session.rater, people, agreement=False)
    returned = decision == RETURN
    code = finish_code(why, at, people, returned)
    saved = request.cookies.get(SAVED_COOKIE) is not None
    page = render(
        request,
        "done.html",
        why=why,
        done=at.done,
        prolific=session.entry == "prolific",
        code=code,
        link=RETURN_LINK,
        saved=saved,
        checks=(
            f"Your answers missed {m.attention_failed} of the {m.attention} instructions that "
            "asked for a given choice, so the study team may ask you to return this submission."
            if returned
            else None
        ),
    )
    if saved:
        page.delete_cookie(SAVED_COOKIE, path="/")
    return page
