"""A person's browser against a real server: cookies of its own, redirects not followed,
every answer kept."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urlencode


@dataclass(frozen=True)
class Answer:
    path: str
    status: int
    location: str
    body: str
    sent: bool = False  # a form was sent (POST)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Browser:
    """One person's browser: cookies of its own, redirects not followed, every answer kept."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(CookieJar()), _NoRedirects()
        )
        self.answers: list[Answer] = []

    def open(self, path: str, form: dict[str, Any] | None = None) -> Answer:
        data = None if form is None else urlencode(form, doseq=True).encode()
        try:
            with self.opener.open(self.base + path, data=data, timeout=120) as response:
                status, headers, body = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, headers, body = error.code, error.headers, error.read()
        answer = Answer(path, status, headers.get("location", ""), body.decode(), form is not None)
        self.answers.append(answer)
        return answer
