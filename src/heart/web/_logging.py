"""Keeping secrets out of the server's access log: an invite token (in the path of its link),
the admin token (in the query of the admin link), and a Prolific participant's and session's
ids (the store keeps only a hash of the participant) are logged as [redacted]."""

from __future__ import annotations

import logging
import re

ACCESS_LOGGER = "uvicorn.access"
REDACTED = "[redacted]"
SECRET_FIELDS = ("token", "PROLIFIC_PID", "SESSION_ID")
"""Query fields whose values are never logged."""

_INVITE = re.compile(r"(/invite/)[^?#\s]*")
_FIELDS = re.compile(rf"([?&](?:{'|'.join(SECRET_FIELDS)})=)[^&#\s]*", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` (a path with its query) with every secret in it replaced by [redacted]."""
    return _FIELDS.sub(rf"\g<1>{REDACTED}", _INVITE.sub(rf"\g<1>{REDACTED}", url))


class RedactSecrets(logging.Filter):
    """Redacts the secrets in every text argument of a log record (uvicorn logs a request's
    path and query as one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def redact_access_log() -> None:
    """Add RedactSecrets to uvicorn's access logger (once): whoever runs the app with uvicorn,
    `heart serve` or not, gets a log without secrets."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactSecrets) for f in logger.filters):
        logger.addFilter(RedactSecrets())
