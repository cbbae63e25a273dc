"""A local fake LLM server with scripted faults, speaking two wire formats.

It lets the project's OpenAI-compatible and Anthropic providers be tested for real, through
their official SDKs, over real TCP connections on 127.0.0.1:

* OpenAI Chat Completions: ``POST /v1/chat/completions`` (stream or not) and ``GET /v1/models``.
  Base URL for ``openai.AsyncOpenAI``: ``server.openai_base_url`` (``http://127.0.0.1:PORT/v1``).
* Anthropic Messages: ``POST /v1/messages`` (stream or not) and ``GET /v1/models`` (answered in
  Anthropic's shape when the request carries an ``anthropic-version`` header). Base URL for
  ``anthropic.AsyncAnthropic``: ``server.anthropic_base_url`` (``http://127.0.0.1:PORT``).
* Batch APIs of both formats (OpenAI's Files + Batch API, Anthropic's Message Batches), in
  :mod:`tests.fakes.fake_batches`: each request of a batch is answered as a live one would be.
* A prompt cache whose reads and writes are reported in usage as each provider reports them, in
  :mod:`tests.fakes.prompt_cache`, for live and batched requests alike.

The HTTP/1.1 layer is hand-written on ``asyncio`` streams (keep-alive, Content-Length or chunked
request bodies; chunked responses for streams), so faults can do what a real network does: close
a connection mid-body, never answer, or reset it. Each connection is its own task on one event
loop, so a hanging request never blocks the others.

Usage::

    with FaultServer(reply_fn=None, retry_after="1") as server:
        client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="sk-test")
        ...
        assert server.attempts("some text of the last user message") == 2

Reply text
    ``reply_fn(request_json) -> str`` is called with the parsed request body (either format) on
    the server's event-loop thread; keep it fast and pure. The default, :func:`default_reply`, is
    ``"I hear how hard this is. "`` + the first 6 words of the last user message (fault markers
    removed). :func:`last_user_text` helps to write your own.

Token counts (``usage``)
    Input tokens = tokens of the system prompt plus the text of all messages (markers included,
    exactly as sent; tool definitions count none); output tokens = tokens of the reply text. A
    token is a whitespace-separated word by default (``token_unit="words"``), or 4 characters
    (``token_unit="chars4"``). OpenAI: ``prompt_tokens`` (cache reads included) /
    ``completion_tokens`` / ``total_tokens`` and ``prompt_tokens_details.cached_tokens`` (+
    ``cache_write_tokens`` when ``openai_cache_writes=True``); Anthropic: ``input_tokens`` (cache
    reads and writes excluded), ``output_tokens``, ``cache_read_input_tokens``,
    ``cache_creation_input_tokens`` and ``cache_creation.ephemeral_{5m,1h}_input_tokens``.

Prompt cache (:mod:`tests.fakes.prompt_cache`)
    OpenAI caches every prompt of at least ``cache_min_tokens`` (default 1024) tokens
    automatically, in prefixes of ``cache_min_tokens + k*128`` tokens; Anthropic only at
    ``cache_control`` breakpoints. Entries live 300 s (3600 s for ``ttl: "1h"``) and a hit
    refreshes them. The clock (``server.clock``) is real time, or with ``seconds_per_request=S``
    virtual: it starts at 0 and moves S seconds on per answered completion request, live or in a
    batch (``server.clock.advance(s)`` moves it by hand). Prompts shorter than the minimum are
    never cached, so the default server reports no cached tokens for short test prompts.

Batches (:mod:`tests.fakes.fake_batches`)
    Batches move on only when polled (a GET of the batch) and end at poll ``batch_polls``
    (default 2). Batch faults: ``server.fault_next_batch("expire" | "fail-half" |
    "malformed-line" | "refuse" | "refuse:NNN" | "slow:N", comma-separated to combine)`` for the
    next batch, or a ``[[batch: ...]]`` marker in a request's last user message for its batch.
    ``server.batches`` lists the batches (custom ids, bodies, outcomes, fault);
    ``server.batch_desk.file_content(file_id)`` reads an uploaded or output file.

Call key and attempts
    Every completion request has a *call key*: the sha256 (hex) of the canonical JSON of the
    conversation, ``[["system", SYSTEM]?, [role, text], ...]`` where the text blocks of a list
    content are joined together (a message split into blocks reads as the message it was split
    from). An Anthropic top-level ``system`` and an OpenAI ``role: system`` message therefore
    give the same key. The model is not part of the key unless
    ``key_includes_model=True``. The server counts attempts per key (1, 2, ...), under a lock.

Fault plans (which fault attempt N gets)
    1. A marker in the last user message: ``[[faults: 429, 500, ok]]`` - attempt 1 gets a 429,
       attempt 2 a 500, attempts 3+ the last entry (here ``ok``); the last entry repeats.
    2. Else the first plan registered with ``server.set_plan(substring, plan)`` whose substring
       occurs in the last user message (re-registering a substring replaces its plan).
    3. Else ``server.default_plan`` (a plan, or None; parsed and checked on assignment).
    4. Else ``ok``. A plan is a list of strings/:class:`Fault` or a comma-separated string.
    An invalid marker is answered with a 400 whose message says why (never retried).

Fault kinds
    ``ok``           normal answer.
    ``429``          429 + ``Retry-After: <retry_after>`` (+ ``retry-after-ms`` on the OpenAI path).
    ``429:0.3``      the same with ``Retry-After: 0.3`` / ``retry-after-ms: 300``.
    ``NNN``          any status 400-599 (e.g. 400, 401, 404, 422, 500, 502, 503, 529) with the
                     format's error JSON; ``NNN:S`` also sends a Retry-After of S seconds.
    ``hang``         read the request, never answer; the connection is held until the client
                     disconnects (or 600 s, or server shutdown).
    ``hang:2.5``     answer normally after 2.5 s (slow time-to-first-byte).
    ``cut``          stream: headers + the first (up to two) content chunks, then the
                     connection is closed mid-body (no ``[DONE]``/``message_stop``, no final
                     zero-length chunk); non-stream: headers + half the JSON body, then close.
    ``reset``        like ``cut`` but the connection is aborted with a TCP RST (SO_LINGER 0).
    ``stall``        like ``cut`` but then silent (connection kept open) until the client
                     gives up - a mid-stream read timeout.
    ``malformed``    200 whose body is not JSON (non-stream) or an SSE stream with a data line
                     that is not JSON (stream).
    ``drop``         close the connection without any response.
    ``prose``        normal answer with text :data:`PROSE_TEXT` (not JSON), ignoring reply_fn.
    ``badjson``      normal answer with text :data:`BADJSON_TEXT` (truncated JSON).
    ``outofrange``   normal answer: reply_fn's text if it is a JSON object, with ``strength``
                     set to 9; else ``{"winner": "A", "strength": 9}``.
    ``length``       normal answer truncated to half its words, ``finish_reason: "length"`` /
                     ``stop_reason: "max_tokens"``.

Capacity
    ``capacity=C`` holds at most C completion requests at once, as a server with C slots does:
    the rest queue (read, not yet begun or recorded) until one ends. ``server.max_in_flight`` is
    the most completion requests held at once since the start (or the last ``reset``), with or
    without a capacity.

Recording
    ``server.requests`` is a snapshot list of :class:`RequestRecord` (path, headers, parsed body,
    call key, attempt, fault, status, start/end on ``time.monotonic()``; ``batch_id`` for a
    request answered in a batch; ``cache``, what it asked of the prompt cache: OpenAI's
    ``prompt_cache_key`` and retention, Anthropic's ``cache_control`` marks with their ttl and
    prefix tokens; ``usage``, the usage it was answered with), taken under a lock.
    ``server.attempts(call_key_or_substring)``; ``server.reset()`` clears records, counters and
    (by default) plans. Exceptions raised inside the server (e.g. by a reply_fn) are answered with
    a 500, kept in ``server.errors`` and re-raised by ``__exit__``/``stop()`` when no other
    exception is in flight.

As a process (benchmarks)::

    python -m tests.fakes.fault_server --port 0 --print-port [--instant] [--token-unit chars4]
        [--cache-min-tokens 1024] [--seconds-per-request 2.5] [--batch-polls 2] [--schema-tokens]
        [--default-plan "hang:0.05"] [--capacity 4]
        [--reply-fn tests.fakes.judge_verdicts:verdict_reply]

prints the port as stdout's first line and serves until SIGTERM/SIGINT. ``--instant`` answers
every request ``ok`` at once, without parsing plans, hashing, recording or caching. The other
options are the constructor's ``token_unit``, ``cache_min_tokens``, ``seconds_per_request``,
``batch_polls``, ``schema_tokens``, ``capacity`` and ``reply_fn`` (``MODULE:NAME``, imported), and
``server.default_plan``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib
import itertools
import json
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from tests.fakes.fake_batches import BATCH_MARKER, BatchDesk, BatchFault
from tests.fakes.prompt_cache import TOKEN_UNITS, CacheAsk, Clock, PromptCache, Usage, count_tokens

ReplyFn = Callable[[dict[str, Any]], str]

PROSE_TEXT = "I think reply A is better because it is warmer."
BADJSON_TEXT = '{"winner": "A", "strength": '
HANG_FOREVER_S = 600.0
MALFORMED_BODY = b'{"id": "broken", "choices": [{"message": <<this is not json>>'

_MARKER = re.compile(r"\[\[\s*faults\s*:(.*?)\]\]", re.IGNORECASE | re.DOTALL)
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")
_MAX_HEADER_BYTES = 1 << 20
API_PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
_SIMPLE_KINDS = frozenset(
    {"ok", "cut", "reset", "stall", "malformed", "drop", "prose", "badjson", "outofrange", "length"}
)
_EXTRA_REASONS = {529: "Site Overloaded"}

_OPENAI_ERRORS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_denied", None),
    404: ("invalid_request_error", "model_not_found"),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}
_ANTHROPIC_ERRORS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------- request helpers


def content_text(content: Any) -> str:
    """The text of a message ``content``: a string, or its text parts joined together (a
    message split into blocks reads as the message it was split from)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return str(content)


def conversation(body: dict[str, Any]) -> list[tuple[str, str]]:
    """``[(role, text), ...]`` of a request body of either format, a top-level system first."""
    turns: list[tuple[str, str]] = []
    system = body.get("system")
    if system is not None:
        turns.append(("system", content_text(system)))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            turns.append((str(message.get("role", "")), content_text(message.get("content"))))
    return turns


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last ``role: user`` message of a request body (``""`` if none)."""
    for role, text in reversed(conversation(body)):
        if role == "user":
            return text
    return ""


def strip_markers(text: str) -> str:
    """``text`` without ``[[faults: ...]]`` and ``[[batch: ...]]`` markers."""
    return BATCH_MARKER.sub(" ", _MARKER.sub(" ", text))


def default_reply(body: dict[str, Any]) -> str:
    """``"I hear how hard this is. "`` + the first 6 words of the last user message."""
    words = strip_markers(last_user_text(body)).split()[:6]
    return ("I hear how hard this is. " + " ".join(words)).rstrip()


def call_key(
    messages: Sequence[dict[str, Any]], system: Any = None, model: str | None = None
) -> str:
    """The call key the server computes for these messages (+ system, + model if keyed so)."""
    body: dict[str, Any] = {"messages": list(messages)}
    if system is not None:
        body["system"] = system
    return _key_of(conversation(body), model)


def _key_of(turns: list[tuple[str, str]], model: str | None) -> str:
    payload: list[Any] = [[role, text] for role, text in turns]
    if model is not None:
        payload = [["model", model], *payload]
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def count_words(text: str) -> int:
    return len(text.split())


# --------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Fault:
    """One scripted behaviour. ``kind`` is ``status``, ``hang`` or one of the simple kinds."""

    kind: str
    status: int = 200
    seconds: float | None = None
    spec: str = "ok"

    def __str__(self) -> str:
        return self.spec


OK = Fault("ok")


def parse_fault(spec: str | Fault) -> Fault:
    """Parse ``"429"``, ``"429:0.3"``, ``"hang"``, ``"hang:2.5"``, ``"cut"``... (module doc)."""
    if isinstance(spec, Fault):
        return spec
    text = str(spec).strip().lower()
    name, sep, arg = text.partition(":")
    name, arg = name.strip(), arg.strip()
    seconds: float | None = None
    if sep:
        try:
            seconds = float(arg)
        except ValueError:
            raise ValueError(f"fault {spec!r}: {arg!r} is not a number of seconds") from None
        if not seconds >= 0:
            raise ValueError(f"fault {spec!r}: seconds must be >= 0")
    canonical = f"{name}:{arg}" if sep else name
    if name.isdigit():
        status = int(name)
        if not 400 <= status <= 599:
            raise ValueError(f"fault {spec!r}: status must be 400-599")
        return Fault("status", status=status, seconds=seconds, spec=canonical)
    if name == "hang":
        return Fault("hang", seconds=seconds, spec=canonical)
    if name in _SIMPLE_KINDS:
        if sep:
            raise ValueError(f"fault {spec!r}: {name} takes no argument")
        return Fault(name, spec=name)
    raise ValueError(f"unknown fault kind {spec!r}")


def parse_plan(plan: str | Fault | Iterable[str | Fault]) -> list[Fault]:
    """A plan from a list of specs or a comma-separated string; never empty."""
    if isinstance(plan, str | Fault):
        items: list[str | Fault] = (
            [p for p in plan.split(",") if p.strip()] if isinstance(plan, str) else [plan]
        )
    else:
        items = list(plan)
    faults = [parse_fault(item) for item in items]
    if not faults:
        raise ValueError("a fault plan needs at least one entry")
    return faults


def _marker_plan(text: str) -> list[Fault] | None:
    matches = _MARKER.findall(text)
    if not matches:
        return None
    return parse_plan(matches[-1])


# --------------------------------------------------------------------------- records


@dataclass
class RequestRecord:
    """One request the server read. ``status`` is None when no response head was sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    api: str | None = None
    call_key: str | None = None
    attempt: int = 0
    fault: str | None = None
    last_user: str = ""
    status: int | None = None
    start: float = 0.0
    end: float | None = None
    plan_source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    batch_id: str | None = None
    cache: CacheAsk | None = None
    usage: Usage | None = None


@dataclass
class _Request:
    method: str
    target: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


class _Proto(asyncio.StreamReaderProtocol):
    """Stream protocol that also signals when the peer has gone (EOF or connection lost)."""

    def __init__(self, server: FaultServer) -> None:
        self.gone = asyncio.Event()
        reader = asyncio.StreamReader(limit=_MAX_HEADER_BYTES)
        super().__init__(reader, lambda r, w: server._serve_connection(r, w, self))

    def eof_received(self) -> bool:
        self.gone.set()
        return bool(super().eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone.set()
        super().connection_lost(exc)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return _EXTRA_REASONS.get(status, "Unknown")


def _seconds_text(seconds: float) -> str:
    return f"{seconds:g}"


# --------------------------------------------------------------------------- the server


class FaultServer:
    """Fake OpenAI + Anthropic server on 127.0.0.1 with scripted faults (see module doc)."""

    def __init__(
        self,
        reply_fn: ReplyFn | None = None,
        retry_after: str = "1",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        instant: bool = False,
        key_includes_model: bool = False,
        models: Sequence[str] = ("fake-model",),
        raise_server_errors: bool = True,
        token_unit: str = "words",
        cache_min_tokens: int = 1024,
        seconds_per_request: float | None = None,
        batch_polls: int = 2,
        openai_cache_writes: bool = False,
        schema_tokens: bool = False,
        capacity: int | None = None,
    ) -> None:
        if batch_polls < 1:
            raise ValueError("batch_polls must be at least 1")
        if capacity is not None and capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.reply_fn: ReplyFn = reply_fn or default_reply
        self.retry_after = str(retry_after)
        self.host = host
        self.instant = instant
        self.key_includes_model = key_includes_model
        self.models = list(models)
        self.raise_server_errors = raise_server_errors
        self.clock = Clock(seconds_per_request)
        self.prompt_cache = PromptCache(
            unit=token_unit,
            min_tokens=cache_min_tokens,
            clock=self.clock,
            schema_tokens=schema_tokens,
        )
        self.batch_polls = batch_polls
        self.openai_cache_writes = openai_cache_writes
        self.batch_desk = BatchDesk(self)
        self._default_plan: list[Fault] | None = None
        self.errors: list[BaseException] = []
        self._requested_port = port
        self._port: int | None = None
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._counts: dict[str, int] = {}
        self._plans: dict[str, list[Fault]] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.capacity = capacity
        self._seats = asyncio.Semaphore(capacity) if capacity else None
        self._in_flight = 0
        self.max_in_flight = 0

    # ----------------------------------------------------------------- public API

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FaultServer is not running")
        return self._port

    @property
    def openai_base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def default_plan(self) -> list[Fault] | None:
        """The plan of requests that no marker or set_plan covers (None: always ``ok``)."""
        return self._default_plan

    @default_plan.setter
    def default_plan(self, plan: str | Iterable[str | Fault] | None) -> None:
        parsed = None if plan is None else parse_plan(plan)
        with self._lock:
            self._default_plan = parsed

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of the records so far, oldest first."""
        with self._lock:
            return list(self._records)

    def set_plan(self, substring: str, plan: str | Iterable[str | Fault] | None) -> None:
        """Requests whose last user message contains ``substring`` follow ``plan`` (None: drop)."""
        with self._lock:
            self._plans.pop(substring, None)
            if plan is not None:
                self._plans[substring] = parse_plan(plan)

    def attempts(self, key_or_substring: str) -> int:
        """Attempts seen for a call key, or completion requests whose last user text has it."""
        with self._lock:
            if key_or_substring in self._counts:
                return self._counts[key_or_substring]
            return sum(
                1
                for r in self._records
                if r.call_key is not None and key_or_substring in r.last_user
            )

    def fault_next_batch(self, spec: str | BatchFault) -> None:
        """The next batch created (either format) does ``spec`` wrong: ``"expire"``,
        ``"fail-half"``, ``"malformed-line"``, ``"refuse"``, ``"refuse:NNN"``, ``"slow:N"``, or
        several, comma-separated (see tests/fakes/fake_batches.py). Calls queue up, one per
        batch."""
        self.batch_desk.fault_next(spec)

    @property
    def batches(self) -> list[Any]:
        """The batches created so far (:class:`~tests.fakes.fake_batches.FakeBatch`)."""
        return self.batch_desk.batches

    def reset(self, *, plans: bool = True) -> None:
        """Forget records, attempt counters, errors, batches and files, and empty the prompt
        cache; also plans, default_plan and queued batch faults if ``plans``."""
        with self._lock:
            self._records.clear()
            self._counts.clear()
            self.errors.clear()
            self.max_in_flight = self._in_flight
            if plans:
                self._plans.clear()
                self._default_plan = None
        self.prompt_cache.clear()
        self.batch_desk.reset(faults=plans)

    def start(self) -> FaultServer:
        if self._thread is not None:
            raise RuntimeError("FaultServer already started")
        self._thread = threading.Thread(target=self._run, name="fault-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("FaultServer did not start within 10 s")
        if self._startup_error is not None:
            raise RuntimeError("FaultServer failed to start") from self._startup_error
        return self

    def stop(self, *, raise_errors: bool | None = None) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
        self._thread = None
        self._port = None
        if raise_errors is None:
            raise_errors = self.raise_server_errors
        if raise_errors and self.errors:
            first = self.errors[0]
            raise RuntimeError(f"FaultServer handler raised {len(self.errors)} error(s)") from first

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop(raise_errors=self.raise_server_errors and exc_type is None)

    # ----------------------------------------------------------------- loop and lifecycle

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                loop.create_server(
                    lambda: _Proto(self), self.host, self._requested_port, backlog=1024
                )
            )
            self._port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(self._shutdown())
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    # ----------------------------------------------------------------- HTTP/1.1 layer

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proto: _Proto
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._writers.add(writer)
        try:
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                request = await self._read_request(reader, writer)
                if request is None:
                    break
                keep = await self._dispatch(request, writer, proto)
                if not keep or not request.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        except asyncio.CancelledError:
            # Server shutdown. Returning normally keeps asyncio's client_connected_cb
            # callback (which calls task.exception()) from logging the cancellation.
            pass
        except Exception as exc:  # a bug in the fake or a reply_fn (instant mode): keep it
            self.errors.append(exc)
        finally:
            self._writers.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.transport.close()

    async def _read_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> _Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None  # the client closed an idle keep-alive connection
        except asyncio.LimitOverrunError:
            await self._send_plain(writer, 431, b"request head too large", keep_alive=False)
            return None
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError:
            await self._send_plain(writer, 400, b"bad request line", keep_alive=False)
            return None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked(reader)
        else:
            length = int(headers.get("content-length") or 0)
            body = await reader.readexactly(length) if length else b""
        connection = headers.get("connection", "").lower()
        keep_alive = (
            "close" not in connection
            if version.upper() == "HTTP/1.1"
            else "keep-alive" in connection
        )
        path = target.split("?", 1)[0]
        if len(path) > 1:
            path = path.rstrip("/")
        return _Request(method.upper(), target, path, headers, body, keep_alive)

    @staticmethod
    async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
        parts = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                # trailers, ended by an empty line
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)

    @staticmethod
    def _head(status: int, headers: Sequence[tuple[str, str]]) -> bytes:
        lines = [f"HTTP/1.1 {status} {_reason(status)}"]
        lines.extend(f"{k}: {v}" for k, v in headers)
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send_full(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: bytes,
        *,
        content_type: str = "application/json",
        extra: Sequence[tuple[str, str]] = (),
        keep_alive: bool = True,
    ) -> None:
        headers = [
            ("content-type", content_type),
            ("content-length", str(len(payload))),
            ("connection", "keep-alive" if keep_alive else "close"),
            *extra,
        ]
        writer.write(self._head(status, headers) + payload)
        await writer.drain()

    async def _send_plain(
        self, writer: asyncio.StreamWriter, status: int, text: bytes, *, keep_alive: bool
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            await self._send_full(
                writer, status, text, content_type="text/plain", keep_alive=keep_alive
            )

    @staticmethod
    async def _flush(writer: asyncio.StreamWriter) -> None:
        """Wait until everything written has been handed to the kernel."""
        writer.transport.set_write_buffer_limits(high=0)
        await writer.drain()

    @staticmethod
    def _close(writer: asyncio.StreamWriter, *, rst: bool = False) -> None:
        if rst:
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:
            writer.transport.close()

    # ----------------------------------------------------------------- routing

    async def _dispatch(self, req: _Request, writer: asyncio.StreamWriter, proto: _Proto) -> bool:
        if req.method == "POST" and req.path == "/v1/chat/completions":
            return await self._completion(req, writer, proto, "openai")
        if req.method == "POST" and req.path == "/v1/messages":
            return await self._completion(req, writer, proto, "anthropic")
        api = "anthropic" if "anthropic-version" in req.headers else "openai"
        routed = self.batch_desk.route(req.method, req.target, req.headers, req.body)
        if routed is not None:
            status, payload, content_type = routed
            self._record_plain(req, status, api)
            await self._send_full(writer, status, payload, content_type=content_type)
            return True
        if req.method == "GET" and req.path == "/v1/models":
            self._record_plain(req, 200, api)
            await self._send_full(writer, 200, self._models_body(api))
            return True
        self._record_plain(req, 404, api)
        status, payload = self._error_body(api, 404, f"no route for {req.method} {req.path}")
        await self._send_full(writer, status, payload)
        return True

    def _record_plain(self, req: _Request, status: int, api: str) -> None:
        if self.instant:
            return
        now = time.monotonic()
        record = RequestRecord(
            req.method,
            req.target,
            dict(req.headers),
            None,
            api=api,
            status=status,
            start=now,
            end=now,
        )
        with self._lock:
            self._records.append(record)

    def _models_body(self, api: str) -> bytes:
        if api == "anthropic":
            data = [
                {
                    "type": "model",
                    "id": m,
                    "display_name": m,
                    "created_at": "2025-01-01T00:00:00Z",
                }
                for m in self.models
            ]
            return _dumps(
                {
                    "data": data,
                    "has_more": False,
                    "first_id": self.models[0] if self.models else None,
                    "last_id": self.models[-1] if self.models else None,
                }
            )
        data = [
            {"id": m, "object": "model", "created": 1735689600, "owned_by": "heart-fakes"}
            for m in self.models
        ]
        return _dumps({"object": "list", "data": data})

    # ----------------------------------------------------------------- completions

    async def _completion(
        self, req: _Request, writer: asyncio.StreamWriter, proto: _Proto, api: str
    ) -> bool:
        try:
            body = json.loads(req.body)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._record_plain(req, 400, api)
            status, payload = self._error_body(api, 400, f"invalid JSON body: {exc}")
            await self._send_full(writer, status, payload)
            return True

        if self.instant:
            text = self.reply_fn(body)
            usage = self.prompt_cache.plain_usage(api, body, self._count(text))
            await self._answer(writer, api, body, text, usage, "stop")
            return True
        if self._seats is None:
            return await self._held(req, writer, proto, api, body)
        async with self._seats:
            return await self._held(req, writer, proto, api, body)

    async def _held(
        self, req: _Request, writer: asyncio.StreamWriter, proto: _Proto, api: str, body: Any
    ) -> bool:
        """Answer one completion request the server has taken in (counted as in flight)."""
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            return await self._completed(req, writer, proto, api, body)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _completed(
        self, req: _Request, writer: asyncio.StreamWriter, proto: _Proto, api: str, body: Any
    ) -> bool:
        record, fault, plan_error = self.begin(api, body, req.method, req.target, req.headers)
        try:
            if plan_error is not None:
                record.status = 400
                status, payload = self._error_body(api, 400, f"fault_server: {plan_error}")
                await self._send_full(writer, status, payload)
                return True
            return await self._apply(fault, record, writer, proto, api, body)
        except (ConnectionError, OSError):
            raise
        except Exception as exc:
            self.errors.append(exc)
            record.status = 500
            record.extra["error"] = repr(exc)
            status, payload = self._error_body(api, 500, f"fault_server internal error: {exc!r}")
            await self._send_full(writer, status, payload, keep_alive=False)
            return False
        finally:
            record.end = time.monotonic()

    def begin(
        self,
        api: str,
        body: dict[str, Any],
        method: str = "POST",
        target: str = "",
        headers: dict[str, str] | None = None,
        batch_id: str | None = None,
    ) -> tuple[RequestRecord, Fault, str | None]:
        """Count and record one completion request (live, or a line of a batch) and choose its
        fault; the third value is why its fault marker is invalid, if it is."""
        turns = conversation(body)
        last_user = next((text for role, text in reversed(turns) if role == "user"), "")
        key = _key_of(turns, str(body.get("model")) if self.key_includes_model else None)
        record = RequestRecord(
            method,
            target or API_PATHS[api],
            dict(headers or {}),
            body,
            api=api,
            call_key=key,
            last_user=last_user,
            start=time.monotonic(),
            batch_id=batch_id,
        )
        plan_error: str | None = None
        with self._lock:
            attempt = self._counts[key] = self._counts.get(key, 0) + 1
            record.attempt = attempt
            try:
                plan, source = self._resolve_plan(last_user)
            except ValueError as exc:
                plan, source, plan_error = [OK], "invalid", str(exc)
            fault = plan[min(attempt, len(plan)) - 1]
            record.fault = "invalid-plan" if plan_error else fault.spec
            record.plan_source = source
            self._records.append(record)
        return record, fault, plan_error

    def _resolve_plan(self, last_user: str) -> tuple[list[Fault], str]:
        marked = _marker_plan(last_user)
        if marked is not None:
            return marked, "marker"
        for substring, plan in self._plans.items():
            if substring in last_user:
                return plan, f"set_plan:{substring}"
        if self._default_plan is not None:
            return self._default_plan, "default"
        return [OK], "none"

    async def _apply(
        self,
        fault: Fault,
        record: RequestRecord,
        writer: asyncio.StreamWriter,
        proto: _Proto,
        api: str,
        body: dict[str, Any],
    ) -> bool:
        kind = fault.kind
        if kind == "status":
            record.status = fault.status
            await self._send_error(writer, api, fault)
            return True
        if kind == "drop":
            self._close(writer)
            return False
        if kind == "hang":
            if fault.seconds is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proto.gone.wait(), HANG_FOREVER_S)
                self._close(writer)
                return False
            try:
                await asyncio.wait_for(proto.gone.wait(), fault.seconds)
            except TimeoutError:
                pass
            else:
                self._close(writer)  # the client gave up while we were "thinking"
                return False

        text, finish, usage = self.reply(fault, api, body, record)
        stream = bool(body.get("stream"))
        record.status = 200
        if kind in ("cut", "reset", "stall"):
            await self._answer_broken(writer, proto, api, body, text, usage, kind, stream)
            return False
        if kind == "malformed":
            await self._answer_malformed(writer, api, body, text, usage, stream)
            return True
        await self._answer(writer, api, body, text, usage, finish)
        return True

    def reply(
        self, fault: Fault, api: str, body: dict[str, Any], record: RequestRecord
    ) -> tuple[str, str, Usage]:
        """The text, finish reason and usage of answering ``body`` under ``fault`` (an answering
        kind): the prompt cache is consulted and the clock ticks, once per answer."""
        text = self._text_for(fault, body)
        finish = "length" if fault.kind == "length" else "stop"
        if fault.kind == "length":
            words = text.split()
            text = " ".join(words[: max(1, len(words) // 2)])
        usage, ask = self.prompt_cache.usage(api, body, self._count(text))
        self.clock.tick()
        record.cache = ask
        record.usage = usage
        return text, finish, usage

    def _count(self, text: str) -> int:
        return count_tokens(text, self.prompt_cache.unit)

    def _text_for(self, fault: Fault, body: dict[str, Any]) -> str:
        if fault.kind == "prose":
            return PROSE_TEXT
        if fault.kind == "badjson":
            return BADJSON_TEXT
        text = self.reply_fn(body)
        if not isinstance(text, str):
            raise TypeError(f"reply_fn returned {type(text).__name__}, not str")
        if fault.kind == "outofrange":
            try:
                obj = json.loads(text)
            except ValueError:
                obj = None
            if not isinstance(obj, dict):
                obj = {"winner": "A"}
            obj["strength"] = 9
            return json.dumps(obj)
        return text

    # ----------------------------------------------------------------- payloads

    def _error_body(self, api: str, status: int, message: str) -> tuple[int, bytes]:
        return status, _dumps(self.error_json(api, status, message))

    def error_json(self, api: str, status: int, message: str) -> dict[str, Any]:
        """The error body of the format for ``status``."""
        if api == "anthropic":
            etype = _ANTHROPIC_ERRORS.get(
                status, "api_error" if status >= 500 else "invalid_request_error"
            )
            return {
                "type": "error",
                "error": {"type": etype, "message": message},
                "request_id": f"req_fake{next(self._ids)}",
            }
        etype, code = _OPENAI_ERRORS.get(
            status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
        )
        return {"error": {"message": message, "type": etype, "param": None, "code": code}}

    async def _send_error(self, writer: asyncio.StreamWriter, api: str, fault: Fault) -> None:
        status = fault.status
        extra: list[tuple[str, str]] = []
        retry_after: str | None = None
        if fault.seconds is not None:
            retry_after = _seconds_text(fault.seconds)
        elif status == 429:
            retry_after = self.retry_after
        if retry_after is not None:
            extra.append(("retry-after", retry_after))
            if api == "openai":
                with contextlib.suppress(ValueError):
                    extra.append(("retry-after-ms", str(round(float(retry_after) * 1000))))
        rid = f"req_fake{next(self._ids)}"
        extra += [("x-request-id", rid), ("request-id", rid)]
        message = f"fault_server: scripted {fault.spec} ({_reason(status)})"
        _, payload = self._error_body(api, status, message)
        await self._send_full(writer, status, payload, extra=extra)

    def message_json(
        self, api: str, body: dict[str, Any], text: str, usage: Usage, finish: str
    ) -> dict[str, Any]:
        """A whole (not streamed) answer: a chat.completion or a Message."""
        model = body.get("model", "fake-model")
        n = next(self._ids)
        if api == "anthropic":
            return {
                "id": f"msg_fake{n:08d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if finish == "length" else "end_turn",
                "stop_sequence": None,
                "usage": usage.anthropic(),
            }
        return {
            "id": f"chatcmpl-fake{n:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": usage.openai(report_writes=self.openai_cache_writes),
            "system_fingerprint": None,
        }

    def _stream_events(
        self, api: str, body: dict[str, Any], text: str, usage: Usage, finish: str
    ) -> tuple[list[bytes], int]:
        """The SSE events of a streamed answer, and how many come before the first content."""
        pieces = [p for p in _WORD_BOUNDARY.split(text) if p]
        model = body.get("model", "fake-model")
        n = next(self._ids)
        if api == "anthropic":

            def event(name: str, data: dict[str, Any]) -> bytes:
                return b"event: " + name.encode() + b"\ndata: " + _dumps(data) + b"\n\n"

            events = [
                event(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            "id": f"msg_fake{n:08d}",
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": usage.anthropic(output=1),
                        },
                    },
                ),
                event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                event("ping", {"type": "ping"}),
            ]
            prelude = len(events)
            events += [
                event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
                for piece in pieces
            ]
            events += [
                event("content_block_stop", {"type": "content_block_stop", "index": 0}),
                event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {
                            "stop_reason": "max_tokens" if finish == "length" else "end_turn",
                            "stop_sequence": None,
                        },
                        "usage": {"output_tokens": usage.output},
                    },
                ),
                event("message_stop", {"type": "message_stop"}),
            ]
            return events, prelude

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": f"chatcmpl-fake{n:08d}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            data: dict[str, Any] = {
                **base,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                ],
            }
            if include_usage:
                data["usage"] = None
            return b"data: " + _dumps(data) + b"\n\n"

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        prelude = len(events)
        events += [chunk({"content": piece}) for piece in pieces]
        events.append(chunk({}, finish))
        if include_usage:
            final = usage.openai(report_writes=self.openai_cache_writes)
            events.append(b"data: " + _dumps({**base, "choices": [], "usage": final}) + b"\n\n")
        events.append(b"data: [DONE]\n\n")
        return events, prelude

    # ----------------------------------------------------------------- answers

    _SSE_HEADERS = (
        ("content-type", "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
        ("transfer-encoding", "chunked"),
        ("connection", "keep-alive"),
    )

    def _sse_head(self) -> bytes:
        rid = f"req_fake{next(self._ids)}"
        return self._head(200, [*self._SSE_HEADERS, ("x-request-id", rid), ("request-id", rid)])

    @staticmethod
    def _chunk(data: bytes) -> bytes:
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"

    async def _answer(
        self,
        writer: asyncio.StreamWriter,
        api: str,
        body: dict[str, Any],
        text: str,
        usage: Usage,
        finish: str,
    ) -> None:
        if body.get("stream"):
            events, _ = self._stream_events(api, body, text, usage, finish)
            writer.write(self._sse_head())
            for event in events:
                writer.write(self._chunk(event))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return
        payload = _dumps(self.message_json(api, body, text, usage, finish))
        await self._send_full(writer, 200, payload)

    async def _answer_broken(
        self,
        writer: asyncio.StreamWriter,
        proto: _Proto,
        api: str,
        body: dict[str, Any],
        text: str,
        usage: Usage,
        kind: str,
        stream: bool,
    ) -> None:
        if stream:
            events, prelude = self._stream_events(api, body, text, usage, "stop")
            sent = events[: prelude + 2]
            # never send the whole stream: keep at least the terminal events back
            sent = sent[: max(prelude, min(len(sent), len(events) - 2))]
            writer.write(self._sse_head() + b"".join(self._chunk(e) for e in sent))
        else:
            payload = _dumps(self.message_json(api, body, text, usage, "stop"))
            head = self._head(
                200,
                [
                    ("content-type", "application/json"),
                    ("content-length", str(len(payload))),
                    ("connection", "keep-alive"),
                ],
            )
            writer.write(head + payload[: len(payload) // 2])
        await self._flush(writer)
        if kind == "stall":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proto.gone.wait(), HANG_FOREVER_S)
        self._close(writer, rst=kind == "reset")

    async def _answer_malformed(
        self,
        writer: asyncio.StreamWriter,
        api: str,
        body: dict[str, Any],
        text: str,
        usage: Usage,
        stream: bool,
    ) -> None:
        if not stream:
            await self._send_full(writer, 200, MALFORMED_BODY)
            return
        events, prelude = self._stream_events(api, body, text, usage, "stop")
        if api == "anthropic":
            bad = b'event: content_block_delta\ndata: {"type": <<this is not json>>\n\n'
        else:
            bad = b'data: {"choices": <<this is not json>>\n\n'
        out = [*events[:prelude], bad, events[-1]]
        writer.write(self._sse_head() + b"".join(self._chunk(e) for e in out) + b"0\r\n\r\n")
        await writer.drain()


# --------------------------------------------------------------------------- process mode


def _imported(target: str) -> ReplyFn:
    """The function ``MODULE:NAME`` names."""
    module, sep, name = target.partition(":")
    if not sep or not module or not name:
        raise SystemExit(f"--reply-fn {target!r}: expected MODULE:NAME")
    found = getattr(importlib.import_module(module), name, None)
    if not callable(found):
        raise SystemExit(f"--reply-fn {target!r}: {module} has no function {name}")
    reply_fn: ReplyFn = found
    return reply_fn


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.fault_server", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--print-port", action="store_true", help="print the port on line 1")
    parser.add_argument("--instant", action="store_true", help="answer everything ok at once")
    parser.add_argument("--retry-after", default="1", help="Retry-After of scripted 429s")
    parser.add_argument("--default-plan", default=None, help='e.g. "429, ok"')
    parser.add_argument(
        "--token-unit", choices=TOKEN_UNITS, default="words", help="what usage counts as a token"
    )
    parser.add_argument(
        "--cache-min-tokens", type=int, default=1024, help="shortest prompt prefix cached"
    )
    parser.add_argument(
        "--seconds-per-request",
        type=float,
        default=None,
        help="a virtual clock for the prompt cache, moved on this much per answer "
        "(default: real time)",
    )
    parser.add_argument(
        "--batch-polls", type=int, default=2, help="status polls after which a batch ends"
    )
    parser.add_argument(
        "--schema-tokens",
        action="store_true",
        help="count tool definitions and output schemas as prompt tokens, as providers bill them",
    )
    parser.add_argument(
        "--capacity", type=int, default=None, help="most completion requests held at once"
    )
    parser.add_argument(
        "--reply-fn",
        default=None,
        metavar="MODULE:NAME",
        help="the function that writes each reply text (default: default_reply)",
    )
    args = parser.parse_args(argv)

    server = FaultServer(
        reply_fn=_imported(args.reply_fn) if args.reply_fn else None,
        retry_after=args.retry_after,
        host=args.host,
        port=args.port,
        instant=args.instant,
        raise_server_errors=False,
        token_unit=args.token_unit,
        cache_min_tokens=args.cache_min_tokens,
        seconds_per_request=args.seconds_per_request,
        batch_polls=args.batch_polls,
        schema_tokens=args.schema_tokens,
        capacity=args.capacity,
    )
    if args.default_plan:
        server.default_plan = args.default_plan
    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    server.start()
    if args.print_port:
        print(server.port, flush=True)
    else:
        print(f"fault_server listening on http://{args.host}:{server.port}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop(raise_errors=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
