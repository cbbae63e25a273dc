"""The access log keeps no secret in whatever spelling the app itself reads it: a percent-encoded
or differently cased query name, in the log line a real uvicorn server writes for the request."""

from __future__ import annotations

import http.client
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI

from heart.web._logging import ACCESS_LOGGER, redact

from .conftest import ADMIN_TOKEN, WebStudy, serving

MakeStudy = Callable[..., WebStudy]
PARTICIPANT, SESSION = "PID-5f3a9c1e77", "SESSION-8d2b41"
_CLIENT = re.compile(r"^127\.0\.0\.1:\d+ - ")


class _Lines(logging.Handler):
    """Keeps the message of every record that reaches it, after the logger's filters."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _access_log() -> Iterator[list[str]]:
    """The access-log lines written while inside, each without the client's address."""
    handler = _Lines()
    logger = logging.getLogger(ACCESS_LOGGER)
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        handler.lines[:] = [_CLIENT.sub("", line) for line in handler.lines]


def _served(app: FastAPI, target: str) -> tuple[int, str | None, str]:
    """GET ``target`` (sent as written, percent-encoding and all) from ``app`` behind uvicorn:
    the status, the redirect, and the access-log line uvicorn wrote for it."""
    with serving(app, log_level="info") as url, _access_log() as lines:
        address = urlsplit(url)
        connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
        try:
            connection.request("GET", target)
            answer = connection.getresponse()
            status, location = answer.status, answer.getheader("location")
            answer.read()
        finally:
            connection.close()
    assert len(lines) == 1, lines
    return status, location, lines[0]


@pytest.mark.parametrize(
    "query",
    [
        f"%74oken={ADMIN_TOKEN}",
        f"%74%6F%6B%65%6E={ADMIN_TOKEN}",
        f"%74%6f%6b%65%6e={ADMIN_TOKEN}",
        f"x=1&%74oken={ADMIN_TOKEN}",
    ],
)
def test_a_percent_encoded_admin_token_signs_in_and_is_not_logged(
    web_study: MakeStudy, query: str
) -> None:
    study = web_study(items=1)
    status, location, line = _served(study.make_app(), f"/admin?{query}")
    assert status == 303 and location == "/admin"  # signed in
    assert ADMIN_TOKEN not in line and "[redacted]" in line
    assert line.startswith('"GET /admin?') and line.endswith(' HTTP/1.1" 303'), line


def test_a_percent_encoded_prolific_link_enters_and_its_ids_are_not_logged(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1)
    query = f"%50ROLIFIC_PID={PARTICIPANT}&STUDY_ID=S1&SESSION%5FID={SESSION}"
    status, location, line = _served(study.make_app(), f"/prolific?{query}")
    assert status == 303 and location == "/"
    assert line == (
        '"GET /prolific?%50ROLIFIC_PID=[redacted]&STUDY_ID=S1&SESSION%5FID=[redacted] HTTP/1.1" 303'
    )


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        ("/admin?token=abc", "/admin?token=[redacted]"),
        ("/admin?TOKEN=abc&Token=def", "/admin?TOKEN=[redacted]&Token=[redacted]"),
        ("/admin?to%6Ben=abc#x", "/admin?to%6Ben=[redacted]"),
        ("/admin?+token+=abc", "/admin?+token+=[redacted]"),
        ("/prolific?prolific%5fpid=p&study_id=s", "/prolific?prolific%5fpid=[redacted]&study_id=s"),
        ("/invite/abc?session_id=s", "/invite/[redacted]?session_id=[redacted]"),
        ("/Invite/abc", "/Invite/[redacted]"),
        ("/admin?x=1;token=abc&y=2", "/admin?x=1;token=[redacted]&y=2"),  # other separators
        # not secrets: other names, a secret name's look-alikes, a name with no value
        ("/admin?tokens=abc&x=token%3Dabc", "/admin?tokens=abc&x=token%3Dabc"),
        ("/admin?%2574oken=abc&token", "/admin?%2574oken=abc&token"),
        ("/work?STUDY_ID=s", "/work?STUDY_ID=s"),
    ],
)
def test_secrets_are_known_by_their_decoded_name(url: str, logged: str) -> None:
    assert redact(url) == logged
