"""Keeping secrets out of the server's access log: an invite token (in the path of its link),
the admin token (in the query of the admin link), and a Prolific participant's and session's
ids (the store keeps only a hash of the participant) are logged as [redacted].

A query field is known by its name as the app reads it, percent-decoded: ``?%74oken=`` signs in
as ``?token=`` does, so its value is redacted too (and so is any case of a secret name)."""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

ACCESS_LOGGER = "uvicorn.access"
REDACTED = "[redacted]"
SECRET_FIELDS = ("token", "PROLIFIC_PID", "SESSION_ID")
"""Query fields whose values are never logged."""

_SECRET_NAMES = frozenset(name.casefold() for name in SECRET_FIELDS)
_INVITE = re.compile(r"(/invite/)[^?#\s]*", re.IGNORECASE)
_FIELD_END = re.compile(r"([&;])")


def _secret(name: str) -> bool:
    """Whether a query field's raw ``name`` decodes to a secret field's, whatever its case."""
    return unquote_plus(name).strip().casefold() in _SECRET_NAMES


def _redact_query(query: str) -> str:
    """``query`` with the value of every secret field replaced by [redacted]; the other fields
    and the separators as they were."""
    parts = _FIELD_END.split(query)  # fields at even places, their separators between them
    for i in range(0, len(parts), 2):
        name, equals, _ = parts[i].partition("=")
        if equals and _secret(name):
            parts[i] = f"{name}={REDACTED}"
    return "".join(parts)


def redact(url: str) -> str:
    """``url`` (a path with its query) with every secret in it replaced by [redacted]."""
    path, mark, query = url.partition("?")
    return _INVITE.sub(rf"\g<1>{REDACTED}", path) + mark + _redact_query(query)


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
