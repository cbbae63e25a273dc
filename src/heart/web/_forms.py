"""Reading a posted form with a size limit, so an oversized post is refused before it is
parsed, and the small checks a form needs before its answer reaches heart.people."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

from fastapi import Request

MAX_FORM_BYTES = 64 * 1024
MAX_FIELDS = 64
URLENCODED = "application/x-www-form-urlencoded"


class FormRejected(Exception):
    """A post that cannot be read as one of our forms; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Form:
    """The fields of a posted form, each with all its values in the order sent."""

    fields: dict[str, list[str]]

    def get(self, name: str) -> str:
        """The first value of ``name``, or an empty string."""
        values = self.fields.get(name)
        return values[0] if values else ""

    def all(self, name: str) -> list[str]:
        return list(self.fields.get(name, []))


async def read_form(request: Request) -> Form:
    """The posted urlencoded form, read up to MAX_FORM_BYTES (FastAPI dependency)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != URLENCODED:
        raise FormRejected(415, "this page accepts only its own form; reload it and try again")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormRejected(
                413, "that is far more text than this form takes; shorten it and send it again"
            )
    try:
        pairs = parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, strict_parsing=False,
            max_num_fields=MAX_FIELDS,
        )  # fmt: skip
    except (UnicodeDecodeError, ValueError):
        raise FormRejected(
            400, "the form could not be read; reload the page and try again"
        ) from None
    fields: dict[str, list[str]] = {}
    for name, value in pairs:
        fields.setdefault(name, []).append(value)
    return Form(fields)
