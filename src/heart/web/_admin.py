"""The admin area, behind its own token and cookie: progress per kind of work, quality flags,
and downloads of what people produced. A rater's session opens none of it."""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import select

from heart.people import (
    KINDS,
    MIN_VERDICTS,
    QUALITY_COLUMNS,
    RATER_LEVEL,
    quality_cells,
    review_quality,
)
from heart.store import Store, TaskRow
from heart.strategies import load_taxonomy
from heart.web._export import (
    COLUMNS,
    FORMATS,
    TABLES,
    disagreements,
    export_rows,
    to_csv,
    to_jsonl,
)
from heart.web._live import WORK, live_context, work_of
from heart.web._live import router as live_router
from heart.web._seats import Seats
from heart.web._session import ADMIN_COOKIE, ADMIN_MAX_AGE
from heart.web._state import message, render, see_other, web

router = APIRouter()
router.include_router(live_router)  # the live part of the page, polled on its own


@dataclass(frozen=True)
class Progress:
    """Seats of one kind of work: submitted, held by someone right now, free to take."""

    kind: str
    seats: int
    done: int
    claimed: int
    open: int


def progress(store: Store, now: float) -> list[Progress]:
    """Seats per kind, with judge checks (gold and attention) on a row of their own."""
    with store.session() as s:
        rows = s.execute(
            select(TaskRow.kind, TaskRow.check, TaskRow.done, TaskRow.rater_id, TaskRow.expires_at)
        ).all()
    counts: dict[str, Counter[str]] = {}
    for kind, check, done, rater, expires in rows:
        name = work_of(kind, check)
        state = "done" if done else ("claimed" if rater and (expires or 0) >= now else "open")
        counts.setdefault(name, Counter())[state] += 1
    return [
        Progress(name, sum(c.values()), c["done"], c["claimed"], c["open"])
        for name in WORK
        if (c := counts.get(name, Counter())) or name in KINDS
    ]


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def seats_note(seats: Seats) -> str:
    """When seats were last added and how many of each kind, and how soon new work gets its
    seats."""
    if seats.added_at is None:
        said = (
            f"No seats added since the server started ({_when(seats.started_at)}): every item, "
            "pair and reply had its seats already."
        )
    else:
        kinds = ", ".join(f"{n} {kind}" for kind, n in seats.added.items())
        said = f"Seats last added {_when(seats.added_at)} ({kinds})."
    when = "when someone finds no work left or this page opens"
    if seats.every > 0:
        when = f"within {seats.every:g} s, and at once {when}"
    return f"{said} Items, pairs and replies stored while the server runs get their seats {when}."


def refused(request: Request) -> Response:
    return message(
        request, 403, "Admin only",
        "This page is for the study team. Open the admin link that `heart serve` printed.",
    )  # fmt: skip


def is_admin(request: Request) -> bool:
    return web(request).signer.admin_ok(request.cookies.get(ADMIN_COOKIE))


@router.get("/admin")
def admin(request: Request, token: str | None = None) -> Response:
    state = web(request)
    if token is not None:
        if not state.signer.admin_token_ok(token):
            return refused(request)
        response = see_other("/admin")
        response.set_cookie(
            ADMIN_COOKIE, state.signer.admin_cookie(), max_age=ADMIN_MAX_AGE, path="/admin",
            httponly=True, samesite="lax", secure=request.url.scheme == "https",
        )  # fmt: skip
        return response
    if not is_admin(request):
        return refused(request)
    state.seats.refresh()
    quality = review_quality(state.study.store, state.study.config.people)
    taxonomy = load_taxonomy(state.study.config.strategies.taxonomy)
    return render(
        request,
        "admin.html",
        study=state.study.config.name,
        progress=progress(state.study.store, time.time()),
        seats=seats_note(state.seats),
        quality=quality,
        quality_columns=QUALITY_COLUMNS,
        quality_cells=quality_cells,
        min_verdicts=MIN_VERDICTS,
        level=f"{100 * RATER_LEVEL:g}%",
        exclude_flags=state.study.config.people.exclude_flags,
        checks_to_exclude=state.study.config.people.checks_to_exclude,
        kinds=KINDS,
        median=lambda x: "–" if math.isnan(x) else f"{x:.0f} s",
        tables=TABLES,
        formats=FORMATS,
        disagreements=disagreements(state.study.store, taxonomy),
        live=live_context(state.study, time.time(), quality),
    )


@router.get("/admin/export/{table}.{fmt}")
def admin_export(request: Request, table: str, fmt: str) -> Response:
    if not is_admin(request):
        return refused(request)
    if table not in TABLES or fmt not in FORMATS:
        return message(
            request, 404, "No such download",
            f"Downloads are {', '.join(TABLES)}, each as .csv or .jsonl.",
        )  # fmt: skip
    state = web(request)
    config = state.study.config
    taxonomy = load_taxonomy(config.strategies.taxonomy)
    rows = export_rows(
        state.study.store, table, config.people.human_system, taxonomy, config.people
    )
    body = to_csv(rows, COLUMNS[table]) if fmt == "csv" else to_jsonl(rows)
    media = "text/csv" if fmt == "csv" else "application/jsonl"
    return Response(
        body, media_type=f"{media}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{table}.{fmt}"'},
    )  # fmt: skip
