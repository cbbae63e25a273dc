"""The web app: one open study, its seats synced at start and kept in step with the store while
it runs, the entry, work and admin routes, the vendored static files, and security headers on
every answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heart.config import STUDY_FILE
from heart.errors import HeartError
from heart.people import TaskRefused
from heart.study import open_study
from heart.web import _admin, _entry, _finish, _raters, _work
from heart.web._forms import FormRejected
from heart.web._logging import redact_access_log
from heart.web._seats import SEAT_REFRESH, study_seats
from heart.web._session import Signer, token_digest
from heart.web._state import HERE, WebState, make_templates, message, sentence

THREADS = 8
"""Requests the server runs at once, shared out over its processes: each request runs on a
thread of its process and, while it uses the store, holds one of its connections. More threads
serve no more requests (a process runs one thread of Python at a time) and, on PostgreSQL,
made each request slower: under 200 people, 40 threads gave a p95 of 250 ms where 8 gave 80 ms,
their waits for the interpreter lock after each round trip to the database adding up."""
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


class SecurityHeaders:
    """Sets SECURITY_HEADERS on every answer, and Cache-Control: no-store on all but the static
    files. A plain ASGI middleware: an ``@app.middleware("http")`` function costs a task group
    and a body stream per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        no_store = not scope["path"].startswith("/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.update(SECURITY_HEADERS)
                if no_store:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(
    study_root: Path,
    *,
    secret: bytes,
    admin_token: str | None = None,
    admin_digest: str | None = None,
    seat_refresh: float = SEAT_REFRESH,
    threads: int = THREADS,
) -> FastAPI:
    """The app over the study in ``study_root``: every seat of human work is added to the store
    now, so links work as soon as the server is up, and seats for items, pairs and replies
    stored later are added every ``seat_refresh`` seconds (and whenever someone finds no work
    left, or opens the admin page); uvicorn's access log leaves secrets out. It runs up to
    ``threads`` requests at once. The admin signs in with ``admin_token`` (or the token whose
    digest is ``admin_digest``)."""
    if admin_token is not None and len(admin_token) < 16:
        raise ValueError("the admin token must be at least 16 characters")
    digest = admin_digest or (token_digest(admin_token) if admin_token else None)
    if digest is None:
        raise ValueError("give the admin token, or its digest")
    study = open_study(study_root)
    try:
        study.config.human_system(str(study_root / STUDY_FILE))  # people's replies need it
    except HeartError:
        study.close()
        raise
    seats = study_seats(study, every=seat_refresh)
    seats.refresh()
    redact_access_log()
    state = WebState(
        study=study, signer=Signer(secret, digest), templates=make_templates(), seats=seats
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = threads
        async with seats.running():
            yield
        study.close()

    app = FastAPI(
        title="HEART study", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.web = state

    app.add_middleware(SecurityHeaders)

    @app.exception_handler(FormRejected)
    async def rejected(request: Request, exc: FormRejected) -> Response:
        return message(request, exc.status, "Nothing was saved", exc.message)

    @app.exception_handler(TaskRefused)
    async def refused(request: Request, exc: TaskRefused) -> Response:
        """A task that changed while its page was made (the same person in another tab)."""
        return message(request, 409, "Nothing was saved", sentence(str(exc)))

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    for module in (_entry, _work, _finish, _admin, _raters):
        app.include_router(module.router)
    return app
