"""What every request handler shares: the open study, the signer, the templates, and the
helpers that read the signed-in rater and render a page."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import ScalarSelect, bindparam, func, select

from heart.people import KINDS
from heart.store import ConsentRow, PracticeRow, RaterRow, TaskRow
from heart.study import Study
from heart.web._seats import Seats
from heart.web._session import RATER_COOKIE, RaterSession, Signer

HERE = Path(__file__).parent
ROLES = {"seeker": "Seeker", "supporter": "Supporter"}
"""How a page names the speakers of a conversation."""


@dataclass
class WebState:
    study: Study
    signer: Signer
    templates: Jinja2Templates
    seats: Seats


def make_templates() -> Jinja2Templates:
    """Jinja2 over templates/, escaping every value (whatever the file name). Templates ship
    with the package and are read once: no look at their files' times on every page."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
    )
    return Jinja2Templates(env=env)


def web(request: Request) -> WebState:
    state: WebState = request.app.state.web
    return state


def _done(kind: str) -> ScalarSelect[int]:
    return (
        select(func.count(TaskRow.id))
        .where(TaskRow.rater_id == RaterRow.id, TaskRow.kind == kind, TaskRow.done)
        .scalar_subquery()
    )


_STEPS = (
    select(RaterRow.id, RaterRow.meta, RaterRow.excluded_reason, ConsentRow.text_hash,
           PracticeRow.correct, PracticeRow.tries, *(_done(kind) for kind in KINDS))
    .outerjoin(ConsentRow, ConsentRow.rater_id == RaterRow.id)
    .outerjoin(PracticeRow, PracticeRow.rater_id == RaterRow.id)
    .where(RaterRow.id == bindparam("p_rater"))
)  # fmt: skip
"""A rater, the consent they accepted, their practice answers and the tasks they submitted of
each kind: one query every page runs."""


def current_rater(request: Request) -> RaterSession | None:
    """The signed-in rater, if the cookie is valid and the rater is still in the store, with
    the consent they accepted, their practice, and where their session stands (read in the
    same query)."""
    state = web(request)
    session = state.signer.read_rater(request.cookies.get(RATER_COOKIE))
    if session is None:
        return None
    with state.study.store.connection() as connection:
        row = connection.execute(_STEPS, {"p_rater": session.rater}).one_or_none()
    if row is None:
        return None
    return replace(
        session, consent_hash=row.text_hash, practised=bool(row.correct),
        practice_tries=int(row.tries or 0), meta=row.meta or {},
        excluded=bool(row.excluded_reason),
        done={kind: int(n) for kind, n in zip(KINDS, row[-len(KINDS):], strict=True) if n},
    )  # fmt: skip


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """``template`` with ``context``, and the study's support link for every page's footer."""
    state = web(request)
    context.setdefault("support_url", state.study.config.people.support_url)
    return state.templates.TemplateResponse(request, template, context, status_code=status)


def sentence(text: str) -> str:
    """``text`` (an error's message) as a sentence: capitalised, ending in a full stop."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def message(
    request: Request, status: int, title: str, text: str, onward: str = "/"
) -> HTMLResponse:
    """A page that only says what happened and what to do, with a link ``onward``."""
    return render(request, "message.html", status, title=title, text=text, onward=onward)


def csrf_refused(request: Request) -> HTMLResponse:
    """The answer to a form whose CSRF token is not the session's: nothing was saved."""
    return message(
        request, 403, "This form could not be checked",
        "It comes from an older session or from another site. Nothing was saved: go back, "
        "reload the page and send it again.",
    )  # fmt: skip


def form_sender(request: Request, csrf: str) -> RaterSession | Response:
    """The signed-in rater who sent a form carrying ``csrf``, or the answer to give instead:
    the start page without a session, a refusal when the token is not the session's."""
    session = current_rater(request)
    if session is None:
        return see_other("/")
    if not web(request).signer.csrf_ok(session, csrf):
        return csrf_refused(request)
    return session


def see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)
