"""The admin's page of one rater: how they came in and where their session stands, their
measures, flags, warnings and exclusion, every task they submitted with its time (and, for a
comparison, their choice and reason), and the button that reinstates an excluded rater."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy import and_, select

from heart.people import (
    QUALITY_COLUMNS,
    quality_cells,
    reinstate,
    review_quality,
    session_state,
)
from heart.store import JudgmentRow, RaterRow, TaskRow
from heart.web._admin import is_admin, refused
from heart.web._forms import Form, read_form
from heart.web._state import message, render, see_other, web

router = APIRouter()
FormDep = Annotated[Form, Depends(read_form)]


def _tasks(request: Request, rater: str) -> list[dict[str, Any]]:
    """The rater's submitted tasks in the order served: kind, target, check and whether it was
    passed, seconds from serving to sending, and a comparison's choice and reason."""
    with web(request).study.store.session() as s:
        rows = s.execute(
            select(TaskRow.kind, TaskRow.target, TaskRow.check, TaskRow.passed,
                   TaskRow.served_at, TaskRow.submitted_at, JudgmentRow.raw,
                   JudgmentRow.rationale)
            .outerjoin(JudgmentRow, and_(JudgmentRow.pair_id == TaskRow.target,
                                         JudgmentRow.judge == rater))
            .where(TaskRow.rater_id == rater, TaskRow.done)
            .order_by(TaskRow.served_at, TaskRow.id)
        ).all()  # fmt: skip
    out = []
    for kind, target, check, passed, served, submitted, raw, rationale in rows:
        seconds = submitted - served if served is not None and submitted is not None else None
        out.append(
            {"kind": kind, "target": target, "check": check or "",
             "passed": "" if passed is None else ("yes" if passed else "no"),
             "seconds": "–" if seconds is None else f"{seconds:.0f} s",
             "choice": _choice(raw), "rationale": rationale or ""}
        )  # fmt: skip
    return out


def _choice(raw: str | None) -> str:
    try:
        return str(json.loads(raw or "{}").get("choice", ""))
    except (ValueError, AttributeError):
        return ""


@router.get("/admin/raters/{rater}")
def rater_page(request: Request, rater: str) -> Response:
    if not is_admin(request):
        return refused(request)
    state = web(request)
    people = state.study.config.people
    quality = {q.rater: q for q in review_quality(state.study.store, people)}
    if rater not in quality:
        return message(request, 404, "No such rater", "The study has no rater by that id.",
                       "/admin")  # fmt: skip
    with state.study.store.session() as s:
        meta = dict(s.get_one(RaterRow, rater).meta or {})
    return render(
        request, "rater.html", q=quality[rater], meta=meta,
        at=session_state(state.study.store, rater, people, now=time.time()),
        columns=QUALITY_COLUMNS, cells=quality_cells(quality[rater].measures),
        tasks=_tasks(request, rater), csrf=state.signer.admin_csrf(),
    )  # fmt: skip


@router.post("/admin/raters/{rater}/reinstate")
def rater_reinstate(request: Request, rater: str, form: FormDep) -> Response:
    """Reinstate the rater, as the person named in the form."""
    if not is_admin(request):
        return refused(request)
    state = web(request)
    if not state.signer.admin_csrf_ok(form.get("csrf")):
        return message(request, 403, "Nothing was changed",
                       "The form could not be checked: reload the page and send it again.",
                       f"/admin/raters/{rater}")  # fmt: skip
    try:
        reinstate(state.study.store, rater, by=form.get("by"))
    except ValueError as exc:
        return message(request, 400, "Nothing was changed", f"{exc}.", f"/admin/raters/{rater}")
    return see_other(f"/admin/raters/{rater}")
