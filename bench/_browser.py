"""A lean HTTP/1.1 client for the web load bench: one kept-alive connection per simulated
person, their cookies, GET and form POST, redirects not followed.

A general client (httpx) spends about 3 ms of CPU on each request; with 200 people on a 2-core
machine the crowd then took a third of a core from the server and its database, and the bench
measured its own clients as much as the server. This one parses only what the bench reads: the
status, the headers that set cookies, close the connection or redirect, and the body."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from types import TracebackType
from urllib.parse import urlencode


class Closed(Exception):
    """The connection closed before an answer came: a kept-alive connection the server has
    just closed for being idle (uvicorn does after 5 s). The request was never read; a browser
    sends it again on a new connection."""


@dataclass(frozen=True)
class Answer:
    status: int
    text: str
    location: str = ""  # where a redirect points


@dataclass
class Browser:
    """One person's browser: a connection to ``host``:``port`` and the cookies the server set."""

    host: str
    port: int
    cookies: dict[str, str] = field(default_factory=dict)
    _reader: asyncio.StreamReader | None = None
    _writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Browser:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._close()

    async def get(self, path: str) -> Answer:
        return await self._request("GET", path, None)

    async def post(self, path: str, form: dict[str, str | list[str]]) -> Answer:
        return await self._request("POST", path, urlencode(form, doseq=True).encode())

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def _request(self, method: str, path: str, body: bytes | None) -> Answer:
        if self._reader is not None and self._reader.at_eof():
            self._close()  # the server closed it while this person was reading a page
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        if self.cookies:
            head.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if body is not None:
            head += ["Content-Type: application/x-www-form-urlencoded",
                     f"Content-Length: {len(body)}"]  # fmt: skip
        self._writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b""))
        try:
            await self._writer.drain()
            status = await self._reader.readline()
            if not status:
                raise Closed
            headers = []
            while (line := await self._reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers.append((name.strip().lower(), value.strip()))
            named = dict(headers)  # the last of a repeated header; cookies are read from the list
            text = await self._body(named)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            self._close()
            raise Closed from exc
        except Closed:
            self._close()
            raise
        for name, value in headers:
            if name == "set-cookie":
                self._keep_cookie(value)
        if named.get("connection", "").lower() == "close":
            self._close()
        return Answer(int(status.split()[1]), text, named.get("location", ""))

    async def _body(self, headers: dict[str, str]) -> str:
        assert self._reader is not None
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int((await self._reader.readline()).split(b";")[0], 16):
                parts.append(await self._reader.readexactly(size))
                await self._reader.readline()
            await self._reader.readline()
            return b"".join(parts).decode()
        length = int(headers.get("content-length", "0"))
        return (await self._reader.readexactly(length)).decode() if length else ""

    def _keep_cookie(self, header: str) -> None:
        """Store or, when it has expired, remove the cookie ``header`` sets."""
        pair, *attributes = header.split(";")
        name, _, value = pair.strip().partition("=")
        expired = False
        for attribute in attributes:
            key, _, said = attribute.strip().partition("=")
            if key.lower() == "max-age":
                expired = int(said) <= 0
            elif key.lower() == "expires":
                expired = parsedate_to_datetime(said).timestamp() <= time.time()
        if expired:
            self.cookies.pop(name, None)
        else:
            self.cookies[name] = value
