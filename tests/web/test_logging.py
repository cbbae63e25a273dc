"""The access log keeps no secret in whatever spelling the app itself reads it: a percent-encoded
or differently cased query name, in a log line exactly as uvicorn writes it."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from uvicorn.protocols.utils import get_path_with_query_string

from heart.web._logging import ACCESS_LOGGER, RedactSecrets, redact

from .conftest import ADMIN_TOKEN, WebStudy

MakeStudy = Callable[..., WebStudy]
PARTICIPANT, SESSION = "PID-5f3a9c1e77", "SESSION-8d2b41"


def _logged(path: str, query: str) -> str:
    """The access-log line of a request, as uvicorn formats it, after the app's filter."""
    scope = {"path": path, "query_string": query.encode("ascii")}
    record = logging.LogRecord(
        ACCESS_LOGGER, logging.INFO, __file__, 0, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", get_path_with_query_string(scope), "1.1", 303), None,
    )  # fmt: skip
    assert RedactSecrets().filter(record)
    return record.getMessage()


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
    answer = study.client(study.make_app()).get(f"/admin?{query}")
    assert answer.status_code == 303 and answer.headers["location"] == "/admin"  # signed in
    line = _logged("/admin", query)
    assert ADMIN_TOKEN not in line and "[redacted]" in line
    assert line.startswith('127.0.0.1:5000 - "GET /admin?') and line.endswith(' HTTP/1.1" 303')


def test_a_percent_encoded_prolific_link_enters_and_its_ids_are_not_logged(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1)
    query = f"%50ROLIFIC_PID={PARTICIPANT}&STUDY_ID=S1&SESSION%5FID={SESSION}"
    answer = study.client(study.make_app()).get(f"/prolific?{query}")
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    assert _logged("/prolific", query) == (
        '127.0.0.1:5000 - "GET /prolific?%50ROLIFIC_PID=[redacted]&STUDY_ID=S1'
        '&SESSION%5FID=[redacted] HTTP/1.1" 303'
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
