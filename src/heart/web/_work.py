"""The three workflows: write a reply, judge a pair, label strategies. A GET claims (or
resumes) the rater's seat of that kind, when their flow is at that kind, and shows it, with
where the rater stands; a POST submits it through heart.people and moves on to the next step of
the flow, which says the answer was saved. Both pass the journey's gate first (consent; for
judging, the practice pair). Pages never carry a task id, only a per-rater handle."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import bindparam, select

from heart.people import (
    CHARS_PER_WORD,
    CHOICES,
    JUDGE,
    LABEL,
    NOT_YOURS,
    WRITE,
    SessionState,
    Standing,
    Task,
    TaskRefused,
    claim_task,
    nudges_seen,
    open_to,
    pending_nudges,
    submit_judgment,
    submit_labels,
    submit_write,
)
from heart.store import TaskRow
from heart.strategies import load_taxonomy
from heart.web._finish import next_path, state_of
from heart.web._forms import Form, read_form
from heart.web._journey import SAVED_COOKIE, gate, progress
from heart.web._session import RaterSession, same
from heart.web._state import (
    ROLES,
    WebState,
    csrf_refused,
    current_rater,
    message,
    render,
    see_other,
    sentence,
    web,
)

router = APIRouter()

CHECKLIST = {
    "length": "I did not prefer a reply for being longer or shorter.",
    "format": "I did not let formatting (punctuation, line breaks, emoji) decide.",
    "position": "I did not prefer a reply for being shown first or second.",
}
"""What a judge confirms before sending: key → the reminder shown."""

NONE = "yes"
"""The value of the labelling page's "None of these" box."""
SAVED_SECONDS = 300
"""How long the "saved" note waits for the next page (it shows once)."""
Submit = Callable[[WebState, str, str, Form, float], None]


def _claim(state: WebState, rater: str, kind: str) -> tuple[Task, Standing] | None:
    """The rater's seat of ``kind`` to show and where they stand, claimed and read in one
    transaction, or None when no work is left for them."""
    people = state.study.config.people
    return claim_task(
        state.study.store, rater, kind, now=time.time(), seconds=people.claim_minutes * 60,
        cap=people.tasks_per_person,
    )  # fmt: skip


_MINE = select(TaskRow.id).where(
    TaskRow.kind == bindparam("p_kind"), TaskRow.rater_id == bindparam("p_rater")
)


def _resolve(state: WebState, rater: str, kind: str, handle: str) -> str:
    """The id of the rater's seat of ``kind`` a page's handle names, or TaskRefused."""
    if handle:
        with state.study.store.connection() as connection:
            mine = connection.scalars(_MINE, {"p_kind": kind, "p_rater": rater}).all()
        for task in mine:
            if same(handle, state.signer.task_handle(rater, task)):
                return task
    raise TaskRefused(NOT_YOURS)


def _page(
    request: Request,
    session: RaterSession,
    claimed: tuple[Task, Standing],
    *,
    status: int = 200,
    note: str | None = None,
    form: Form | None = None,
    saved: bool = False,
    flow: SessionState,
) -> HTMLResponse:
    """A task page; after a refusal, with the message and what the rater had entered. The
    instructions and the hold time are spelled out on a person's first task of a kind and
    folded away after it; every ``people.break_every`` tasks the page suggests a break; a
    warning quality control has for the person is shown on the next page."""
    state = web(request)
    people = state.study.config.people
    task, at = claimed
    form = form or Form({})
    text = form.get("text")
    every = people.break_every
    return render(
        request,
        f"{task.kind}.html",
        status,
        task=task,
        handle=state.signer.task_handle(session.rater, task.id),
        csrf=state.signer.csrf(session),
        message=note,
        saved=saved,
        progress=progress(at, people, time.time()),
        roles=ROLES,
        minutes=round(people.claim_minutes),
        text=text,
        words=len(text.split()),
        max_words=people.max_words,
        max_chars=people.max_words * CHARS_PER_WORD,
        choices=[(key, label) for key, (_, _, label) in CHOICES.items()],
        choice=form.get("choice"),
        rationale=form.get("rationale"),
        checklist_items=list(CHECKLIST.items()),
        checklist=form.all("checklist"),
        strategies=load_taxonomy().strategies,
        picked=form.all("strategies"),
        none_picked=form.get("none") == NONE,
        first=not flow.done_by_kind.get(task.kind),
        rest=bool(every and at.done and at.done % every == 0),
        nudges=pending_nudges(session.meta),
    )


def _show(request: Request, kind: str) -> Response:
    """A task page of ``kind``, when that is the step the person's flow is at; anywhere else,
    the page they are due at (a held seat of another kind waits for them)."""
    session = current_rater(request)
    if session is None:
        return see_other("/")
    if (elsewhere := gate(request, session, kind)) is not None:
        return elsewhere
    state = web(request)
    claimed: tuple[Task, Standing] | None = None

    def has_work(of: str) -> bool:  # for the kind asked for, the claim itself tells
        nonlocal claimed
        if of != kind:
            return open_to(state.study.store, session.rater, of, now=time.time()) > 0
        claimed = _claim(state, session.rater, kind)
        return claimed is not None

    at = state_of(request, session, has_work)
    if at.kind != kind:
        return see_other(next_path(request, session, at))
    if claimed is None:  # seats added by the look for new work, or taken by others meanwhile
        claimed = _claim(state, session.rater, kind)
    if claimed is None:
        at = state_of(request, session)
        if at.kind == kind:  # still said to be open: no redirect to this same page
            return message(request, 200, "Nothing free just now",
                           "Every task of this kind is held by someone else for the moment. "
                           "Wait a minute, then go on.", "/next")  # fmt: skip
        return see_other(next_path(request, session, at))
    saved = request.cookies.get(SAVED_COOKIE) is not None
    page = _page(request, session, claimed, saved=saved, flow=at)
    if pending_nudges(session.meta):  # shown once
        nudges_seen(state.study.store, session.rater)
    if saved:
        page.delete_cookie(SAVED_COOKIE, path="/")
    return page


def _submit(request: Request, form: Form, kind: str, submit: Submit) -> Response:
    """Check the session and the CSRF token, store the answer, and go on to the next task; a
    refused answer comes back with its message and nothing stored."""
    session = current_rater(request)
    if session is None:
        return see_other("/")
    if (elsewhere := gate(request, session, kind)) is not None:
        return elsewhere
    state = web(request)
    if not state.signer.csrf_ok(session, form.get("csrf")):
        return csrf_refused(request)
    handle = form.get("task")
    try:
        submit(
            state, session.rater, _resolve(state, session.rater, kind, handle), form, time.time()
        )
    except TaskRefused as exc:
        note = sentence(str(exc))
        at = state_of(request, session)
        claimed = _claim(state, session.rater, kind) if at.kind == kind else None
        if claimed is None:
            return message(request, 400, "Nothing was saved", note, next_path(request, session))
        kept = same(handle, state.signer.task_handle(session.rater, claimed[0].id))
        return _page(
            request, session, claimed, status=400, note=note, form=form if kept else None, flow=at
        )
    # On to the step the flow is at with this answer counted, taking its work to be open: the
    # page there looks, and leads on when there is none (one look, not one per kind, here).
    sent = replace(session, done={**session.done, kind: session.done.get(kind, 0) + 1})
    moved = see_other(next_path(request, sent, state_of(request, sent, lambda _: True)))
    moved.set_cookie(
        SAVED_COOKIE, kind, max_age=SAVED_SECONDS, path="/", httponly=True, samesite="lax",
        secure=request.url.scheme == "https",
    )  # fmt: skip
    return moved


def _write(state: WebState, rater: str, task: str, form: Form, now: float) -> None:
    submit_write(state.study.store, state.study.config.people, rater, task, form.get("text"),
                 now=now)  # fmt: skip


def _judge(state: WebState, rater: str, task: str, form: Form, now: float) -> None:
    rationale = form.get("rationale")
    checklist = form.all("checklist")
    if form.get("choice") not in CHOICES:
        raise TaskRefused("choose one of the five options before sending")
    if not rationale.strip():
        raise TaskRefused("write a short reason for your choice (a sentence is enough)")
    if not set(checklist) <= set(CHECKLIST):
        raise TaskRefused("the checklist holds an answer this page does not offer; reload it")
    submit_judgment(state.study.store, rater, task, form.get("choice"), rationale, now=now,
                    checklist=sorted(set(checklist)), spec=state.study.config.people)  # fmt: skip


def _label(state: WebState, rater: str, task: str, form: Form, now: float) -> None:
    """Labels: the strategies ticked, or none when "None of these" is ticked instead."""
    strategies = form.all("strategies")
    none = form.get("none") == NONE
    if not strategies and not none:
        raise TaskRefused('tick every strategy the reply uses, or "None of these"')
    if strategies and none:
        raise TaskRefused('tick either strategies or "None of these", not both')
    submit_labels(state.study.store, rater, task, strategies, now=now)


FormDep = Annotated[Form, Depends(read_form)]


@router.get("/write")
def write_page(request: Request) -> Response:
    return _show(request, WRITE)


@router.post("/write")
def write_submit(request: Request, form: FormDep) -> Response:
    return _submit(request, form, WRITE, _write)


@router.get("/judge")
def judge_page(request: Request) -> Response:
    return _show(request, JUDGE)


@router.post("/judge")
def judge_submit(request: Request, form: FormDep) -> Response:
    return _submit(request, form, JUDGE, _judge)


@router.get("/label")
def label_page(request: Request) -> Response:
    return _show(request, LABEL)


@router.post("/label")
def label_submit(request: Request, form: FormDep) -> Response:
    return _submit(request, form, LABEL, _label)


@router.post("/words")
def word_count(request: Request, form: FormDep) -> Response:
    """The live word count under the reply box (htmx swaps it in as the rater types)."""
    if current_rater(request) is None:
        return Response(status_code=403)
    context: dict[str, Any] = {
        "words": len(form.get("text").split()),
        "max_words": web(request).study.config.people.max_words,
    }
    return render(request, "_words.html", **context)
