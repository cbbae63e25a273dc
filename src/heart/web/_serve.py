"""Running the app under uvicorn: in one process, or in several that share one listening socket
(PostgreSQL only). Every process signs with the same secret and takes the same admin token, so
a session, a form's CSRF token or an admin cookie made by one is good in all of them."""

from __future__ import annotations

import logging
import math
import os
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from sqlalchemy import make_url

from heart.config import load_study, store_url
from heart.errors import HeartError
from heart.web._app import THREADS, create_app
from heart.web._session import study_admin_token, study_secret, token_digest

TOKEN_ENV = "HEART_ADMIN_TOKEN"
SECRET_ENV = "HEART_SECRET"
STUDY_ENV = "HEART_SERVE_STUDY"
REFRESH_ENV = "HEART_SERVE_SEAT_REFRESH"
THREADS_ENV = "HEART_SERVE_THREADS"
"""How `heart serve` tells its worker processes what to serve (set by the command itself)."""

log = logging.getLogger("heart.web")


@dataclass(frozen=True)
class Secrets:
    """The admin token's digest, the token itself when it is known (None: made for the study
    before, kept only hashed), whether the environment gave it, and the session secret."""

    digest: str
    token: str | None
    token_given: bool
    secret: bytes


def serve_secrets(root: Path) -> Secrets:
    """The admin token from HEART_ADMIN_TOKEN, else the study's own (made and kept hashed in
    .heart-admin on first use); the session secret from HEART_SECRET, else the study's
    .heart-secret (made on first use)."""
    given = os.environ.get(TOKEN_ENV)
    if given is not None and len(given) < 16:
        raise HeartError(f"{TOKEN_ENV} must be at least 16 characters; use a random one")
    token, digest = (given, token_digest(given)) if given else study_admin_token(root)
    text = os.environ.get(SECRET_ENV)
    if text is not None and len(text) < 16:
        raise HeartError(f"{SECRET_ENV} must be at least 16 characters; use a random one")
    secret = text.encode("utf-8") if text else study_secret(root)
    return Secrets(digest, token, bool(given), secret)


def check_workers(root: Path, workers: int) -> None:
    """Refuse several processes over a SQLite store, saying what to do instead."""
    if workers < 2:
        return
    backend = make_url(store_url(load_study(root), root)).get_backend_name()
    if backend != "postgresql":
        raise HeartError(
            f"--workers {workers} needs the study's store on PostgreSQL ({backend} lets one "
            "process write at a time): set store: postgresql+psycopg://user:password@host/db "
            "in study.yaml, or serve with --workers 1"
        )


def threads_per_worker(workers: int) -> int:
    return max(1, math.ceil(THREADS / workers))


def _log_config() -> dict[str, Any]:
    """uvicorn's logging, each line naming the process that wrote it."""
    from uvicorn.config import LOGGING_CONFIG

    config = deepcopy(LOGGING_CONFIG)
    for formatter in config["formatters"].values():
        formatter["fmt"] = formatter["fmt"].replace(
            "%(levelprefix)s", "%(levelprefix)s [%(process)d]"
        )
    return config


def prepare(root: Path, *, seat_refresh: float, workers: int, keys: Secrets) -> FastAPI:
    """The app of a one-process server; for several, the app that checked the study and added
    its seats before any worker starts (its store is closed: each worker opens its own)."""
    check_workers(root, workers)
    app = create_app(root, admin_digest=keys.digest, secret=keys.secret,
                     seat_refresh=seat_refresh)  # fmt: skip
    if workers > 1:
        app.state.web.study.close()
    return app


def run(
    root: Path, app: FastAPI, *, host: str, port: int, seat_refresh: float, workers: int,
    keys: Secrets,
) -> None:  # fmt: skip
    """Serve ``app`` (from `prepare`) until stopped, or ``workers`` processes that share the
    socket, each opening the study for itself."""
    import uvicorn

    if workers == 1:
        uvicorn.run(app, host=host, port=port, log_level="info")
        return
    os.environ |= {
        STUDY_ENV: str(root.resolve()),
        REFRESH_ENV: repr(seat_refresh),
        THREADS_ENV: str(threads_per_worker(workers)),
    }  # fmt: skip  (the workers read the token from where this process found it)
    uvicorn.run(
        "heart.web._serve:served_app", factory=True, host=host, port=port, workers=workers,
        log_level="info", log_config=_log_config(),
    )  # fmt: skip


def served_app() -> FastAPI:
    """The app of one of several processes `heart serve --workers N` runs, set up as the
    command said in the environment; the secret comes from where the command found it."""
    root = Path(os.environ[STUDY_ENV])
    keys = serve_secrets(root)
    return create_app(
        root, admin_digest=keys.digest, secret=keys.secret,
        seat_refresh=float(os.environ[REFRESH_ENV]), threads=int(os.environ[THREADS_ENV]),
    )  # fmt: skip
