"""The fake server's batch APIs: OpenAI's Batch API (with its Files API) and Anthropic's Message
Batches, faithful enough on the wire for the official SDKs to drive them unchanged.

OpenAI
    ``POST /v1/files`` (multipart/form-data, ``purpose=batch``, a JSONL file), ``GET
    /v1/files/{id}``, ``GET /v1/files/{id}/content``; ``POST /v1/batches``, ``GET
    /v1/batches/{id}``, ``GET /v1/batches`` (``after``, ``limit``), ``POST
    /v1/batches/{id}/cancel``. A batch is ``validating`` when created; an input file with a line
    that is not JSON, has no ``custom_id``, repeats one, or names another method or url makes it
    ``failed`` at its first poll, with ``errors`` naming the line. Successes go to the output
    file, failed requests (``response.status_code`` 4xx/5xx) and unanswered ones (``error.code``
    ``batch_expired`` / ``batch_cancelled``) to the error file.
Anthropic
    ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``, ``GET
    /v1/messages/batches`` (``after_id``, ``before_id``, ``limit``), ``POST
    /v1/messages/batches/{id}/cancel``, ``GET /v1/messages/batches/{id}/results`` (JSONL; the
    batch's ``results_url`` once it has ended). A ``custom_id`` outside ``^[a-zA-Z0-9_-]{1,64}$``,
    a repeated one, or a request without ``params`` is a 400.

Progress
    Only polls (a GET of one batch) move a batch on: after poll ``k`` of ``polls`` (the server's
    ``batch_polls``, default 2) the first ``ceil(k * n / polls)`` requests are answered, and at
    poll ``polls`` the batch ends. So tests need no sleeping. Each request is answered as a live
    one would be (``reply_fn``, fault plans and markers, the prompt cache, the clock) and counts
    as an attempt (its :class:`~tests.fakes.fault_server.RequestRecord` has ``batch_id``). A
    status fault gives an errored line; a connection fault (``hang``, ``cut``, ``reset``,
    ``stall``, ``drop``, ``malformed``) a 500 errored line; ``hang:S`` answers at once.
    Cancelling (any time before the end) keeps what was answered; the rest is cancelled at the
    next poll.

Batch faults
    ``server.fault_next_batch("expire, malformed-line")`` applies to the next batch created (a
    queue: one entry per batch), and a ``[[batch: ...]]`` marker in any request's last user
    message of a batch applies to that batch (both add up):

    ``expire``          only the first half (``n // 2``) of the requests is answered, the rest
                        expire (OpenAI status ``expired``; Anthropic ``expired`` results).
    ``fail-half``       the second half (index ``>= n // 2``) is errored with a retryable 500.
    ``malformed-line``  the first output line is not JSON (its ``custom_id`` still readable).
    ``refuse``          the batch is refused as a whole: OpenAI ``failed`` (at its first poll),
                        Anthropic a 400 on create. ``refuse:NNN`` answers the create with status
                        NNN in both formats instead.
    ``slow:N``          the batch ends after N polls instead of ``batch_polls``.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from tests.fakes.fault_server import FaultServer

BATCH_MARKER = re.compile(r"\[\[\s*batch\s*:(.*?)\]\]", re.IGNORECASE | re.DOTALL)
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DAY_S = 24 * 3600
BROKEN_KINDS = frozenset({"hang", "cut", "reset", "stall", "drop", "malformed"})
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."

Reply = tuple[int, bytes, str]
"""(status, body, content type) of an answer to a batch API call."""


@dataclass(frozen=True)
class BatchFault:
    """What a batch does wrong (module doc)."""

    expire: bool = False
    fail_half: bool = False
    malformed_line: bool = False
    refuse: int | None = None  # 0: refused the provider's usual way; else that HTTP status
    polls: int | None = None

    def __or__(self, other: BatchFault) -> BatchFault:
        return BatchFault(
            self.expire or other.expire,
            self.fail_half or other.fail_half,
            self.malformed_line or other.malformed_line,
            other.refuse if other.refuse is not None else self.refuse,
            other.polls if other.polls is not None else self.polls,
        )


def parse_batch_fault(spec: str | BatchFault) -> BatchFault:
    """``"expire"``, ``"fail-half, slow:4"``, ``"refuse:429"``... as a BatchFault."""
    if isinstance(spec, BatchFault):
        return spec
    fault = BatchFault()
    for item in (part.strip().lower() for part in spec.split(",")):
        if not item:
            continue
        name, sep, arg = (x.strip() for x in item.partition(":"))
        if name in ("expire", "fail-half", "malformed-line") and not sep:
            fault = fault | BatchFault(
                expire=name == "expire",
                fail_half=name == "fail-half",
                malformed_line=name == "malformed-line",
            )
        elif name == "refuse" and (not sep or (arg.isdigit() and 400 <= int(arg) <= 599)):
            fault = fault | BatchFault(refuse=int(arg) if sep else 0)
        elif name == "slow" and sep and arg.isdigit() and int(arg) >= 1:
            fault = fault | BatchFault(polls=int(arg))
        else:
            raise ValueError(
                f"batch fault {item!r}: use expire, fail-half, malformed-line, refuse, "
                "refuse:NNN (400-599) or slow:N (N >= 1)"
            )
    return fault


@dataclass
class Outcome:
    """One request's outcome: ``ok`` (``body`` a message), ``error`` (``status``, ``body`` the
    format's error JSON), ``expired`` or ``cancelled``."""

    kind: str
    body: dict[str, Any] | None = None
    status: int = 200


@dataclass
class FakeBatch:
    """One batch the server holds; ``outcomes`` has the answered requests, in request order."""

    id: str
    api: str
    requests: list[tuple[str, dict[str, Any]]]
    fault: BatchFault
    polls_to_end: int
    created_at: float
    metadata: dict[str, Any] | None = None
    input_file_id: str = ""
    errors: list[dict[str, Any]] = field(default_factory=list)  # input errors (OpenAI)
    polls: int = 0
    outcomes: list[tuple[str, Outcome]] = field(default_factory=list)
    cancel_at: float | None = None
    ended_at: float | None = None
    in_progress_at: float | None = None
    status: str = "validating"  # OpenAI's status words; Anthropic's are derived
    output_file_id: str | None = None
    error_file_id: str | None = None
    lines: list[bytes] = field(default_factory=list)  # Anthropic results

    @property
    def ended(self) -> bool:
        return self.ended_at is not None


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class BatchDesk:
    """The batches and files of one FaultServer, answering both batch APIs (module doc)."""

    def __init__(self, server: FaultServer) -> None:
        self.server = server
        self._lock = threading.RLock()
        self._batches: dict[str, FakeBatch] = {}
        self._files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self._next_faults: list[BatchFault] = []
        self._ids = itertools.count(1)

    # ----------------------------------------------------------------- test-facing API

    def fault_next(self, spec: str | BatchFault) -> None:
        fault = parse_batch_fault(spec)
        with self._lock:
            self._next_faults.append(fault)

    @property
    def batches(self) -> list[FakeBatch]:
        with self._lock:
            return list(self._batches.values())

    def file_content(self, file_id: str) -> bytes:
        with self._lock:
            return self._files[file_id][1]

    def reset(self, *, faults: bool = True) -> None:
        """Forget batches and files; also the queued batch faults if ``faults``."""
        with self._lock:
            self._batches.clear()
            self._files.clear()
            if faults:
                self._next_faults.clear()

    # ----------------------------------------------------------------- routing

    def route(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Reply | None:
        """The answer to a batch or file API call, or None when ``target`` is not one."""
        parts = urlsplit(target)
        path = parts.path.rstrip("/")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        segments = path.split("/")[1:]  # ["v1", ...]
        if segments[:1] != ["v1"]:
            return None
        rest = segments[1:]
        with self._lock:
            if rest[:2] == ["messages", "batches"]:
                return self._anthropic(method, rest[2:], query, body)
            if rest[:1] == ["batches"]:
                return self._openai_batches(method, rest[1:], query, body)
            if rest[:1] == ["files"]:
                return self._openai_files(method, rest[1:], headers, body)
        return None

    def _error(self, api: str, status: int, message: str) -> Reply:
        return status, _dumps(self.server.error_json(api, status, message)), "application/json"

    @staticmethod
    def _json(obj: Any, status: int = 200) -> Reply:
        return status, _dumps(obj), "application/json"

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}fake"

    def _take_fault(self, requests: list[tuple[str, dict[str, Any]]], api: str) -> BatchFault:
        fault = self._next_faults.pop(0) if self._next_faults else BatchFault()
        from tests.fakes.fault_server import last_user_text

        for _, body in requests:
            for spec in BATCH_MARKER.findall(last_user_text(body)):
                fault = fault | parse_batch_fault(spec)
        return fault

    def _new_batch(
        self, api: str, requests: list[tuple[str, dict[str, Any]]], fault: BatchFault, **kw: Any
    ) -> FakeBatch:
        prefix = "msgbatch_" if api == "anthropic" else "batch_"
        batch = FakeBatch(
            id=self._new_id(prefix),
            api=api,
            requests=requests,
            fault=fault,
            polls_to_end=fault.polls or self.server.batch_polls,
            created_at=time.time(),
            **kw,
        )
        if api == "anthropic":
            batch.status = "in_progress"
            batch.in_progress_at = batch.created_at
        self._batches[batch.id] = batch
        return batch

    # ----------------------------------------------------------------- progress

    def _poll(self, batch: FakeBatch) -> None:
        """One status poll: answer the next share of requests, end the batch at the last."""
        if batch.ended:
            return
        batch.polls += 1
        if batch.status == "validating":
            if batch.errors or batch.fault.refuse is not None:
                if not batch.errors:
                    batch.errors.append(
                        {
                            "code": "batch_refused",
                            "line": None,
                            "param": None,
                            "message": "fault_server: scripted refusal of the whole batch",
                        }
                    )
                batch.status = "failed"
                batch.ended_at = time.time()
                return
            batch.status = "in_progress"
            batch.in_progress_at = time.time()
        if batch.status in ("cancelling", "canceling"):
            self._end(batch, "cancelled")
            return
        n = len(batch.requests)
        target = min(n, math.ceil(batch.polls * n / batch.polls_to_end))
        if batch.fault.expire:
            target = min(target, n // 2)
        self._answer_up_to(batch, target)
        if batch.polls >= batch.polls_to_end:
            self._end(batch, "expired" if batch.fault.expire else "completed")

    def _answer_up_to(self, batch: FakeBatch, target: int) -> None:
        n = len(batch.requests)
        while len(batch.outcomes) < target:
            index = len(batch.outcomes)
            custom_id, body = batch.requests[index]
            failing = batch.fault.fail_half and index >= n // 2
            batch.outcomes.append((custom_id, self._answer(batch, body, failing)))

    def _answer(self, batch: FakeBatch, body: dict[str, Any], failing: bool) -> Outcome:
        server, api = self.server, batch.api
        record, fault, plan_error = server.begin(
            api, body, "POST", f"batch:{batch.id}", None, batch_id=batch.id
        )
        try:
            if failing:
                record.fault = "batch:fail-half"
                return self._failed(record, api, 500, "scripted failure of half the batch")
            if plan_error is not None:
                return self._failed(record, api, 400, plan_error)
            if fault.kind == "status":
                return self._failed(record, api, fault.status, f"scripted {fault.spec}")
            if fault.kind in BROKEN_KINDS and not (
                fault.kind == "hang" and fault.seconds is not None
            ):
                return self._failed(record, api, 500, f"scripted {fault.spec} in a batch")
            text, finish, usage = server.reply(fault, api, body, record)
            record.status = 200
            return Outcome("ok", server.message_json(api, body, text, usage, finish))
        finally:
            record.end = time.monotonic()

    def _failed(self, record: Any, api: str, status: int, message: str) -> Outcome:
        record.status = status
        error = self.server.error_json(api, status, f"fault_server: {message}")
        return Outcome("error", error, status)

    def _end(self, batch: FakeBatch, how: str) -> None:
        """End ``batch`` as ``completed``, ``expired`` or ``cancelled``: the rest of its
        requests expire or are cancelled, and its output is written."""
        answered = {custom_id for custom_id, _ in batch.outcomes}
        rest = "cancelled" if how == "cancelled" else "expired"
        for custom_id, _ in batch.requests:
            if custom_id not in answered:
                batch.outcomes.append((custom_id, Outcome(rest)))
        batch.status = how
        batch.ended_at = time.time()
        if batch.api == "anthropic":
            batch.lines = [self._anthropic_line(cid, o) for cid, o in batch.outcomes]
            if batch.fault.malformed_line and batch.lines:
                batch.lines[0] = _garbled(batch.outcomes[0][0], "result")
            return
        output = [self._openai_line(cid, o) for cid, o in batch.outcomes if o.kind == "ok"]
        errors = [self._openai_line(cid, o) for cid, o in batch.outcomes if o.kind != "ok"]
        if batch.fault.malformed_line:
            first = next((cid for cid, o in batch.outcomes if o.kind == "ok"), None)
            if first is not None:
                output[0] = _garbled(first, "response")
        if output:
            batch.output_file_id = self._store_file(batch.id + "_output.jsonl", output)
        if errors:
            batch.error_file_id = self._store_file(batch.id + "_error.jsonl", errors)

    def _store_file(self, name: str, lines: list[bytes], purpose: str = "batch_output") -> str:
        data = b"".join(line + b"\n" for line in lines)
        file_id = self._new_id("file-")
        self._files[file_id] = (
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": name,
                "purpose": purpose,
                "status": "processed",
                "expires_at": None,
                "status_details": None,
            },
            data,
        )
        return file_id

    # ----------------------------------------------------------------- OpenAI

    def _openai_files(
        self, method: str, rest: list[str], headers: dict[str, str], body: bytes
    ) -> Reply | None:
        if method == "POST" and not rest:
            return self._upload(headers, body)
        if method == "GET" and len(rest) in (1, 2) and (len(rest) == 1 or rest[1] == "content"):
            stored = self._files.get(rest[0])
            if stored is None:
                return self._error("openai", 404, f"No such File object: {rest[0]}")
            if len(rest) == 1:
                return self._json(stored[0])
            return 200, stored[1], "application/octet-stream"
        return None

    def _upload(self, headers: dict[str, str], body: bytes) -> Reply:
        content_type = headers.get("content-type", "")
        if not content_type.startswith("multipart/form-data"):
            return self._error("openai", 400, "files must be uploaded as multipart/form-data")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if "file" not in fields:
            return self._error("openai", 400, "Missing required parameter: 'file'.")
        purpose = fields.get("purpose", (None, b""))[1].decode()
        if purpose != "batch":
            return self._error("openai", 400, f"this fake takes purpose 'batch', not {purpose!r}")
        filename, data = fields["file"]
        file_id = self._new_id("file-")
        self._files[file_id] = (
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": filename or "upload.jsonl",
                "purpose": "batch",
                "status": "processed",
                "expires_at": int(time.time()) + 30 * DAY_S,
                "status_details": None,
            },
            data,
        )
        return self._json(self._files[file_id][0])

    def _openai_batches(
        self, method: str, rest: list[str], query: dict[str, str], body: bytes
    ) -> Reply | None:
        if method == "POST" and not rest:
            return self._openai_create(body)
        if method == "GET" and not rest:
            items = sorted(
                (b for b in self._batches.values() if b.api == "openai"),
                key=lambda b: (b.created_at, b.id),
                reverse=True,
            )
            page, has_more = _page(items, query.get("after"), None, query.get("limit"))
            return self._json(
                {
                    "object": "list",
                    "data": [self._openai_json(b) for b in page],
                    "first_id": page[0].id if page else None,
                    "last_id": page[-1].id if page else None,
                    "has_more": has_more,
                }
            )
        if not rest or rest[0] not in self._batches or self._batches[rest[0]].api != "openai":
            if rest and method in ("GET", "POST"):
                return self._error("openai", 404, f"No batch found with id '{rest[0]}'.")
            return None
        batch = self._batches[rest[0]]
        if method == "GET" and len(rest) == 1:
            self._poll(batch)
            return self._json(self._openai_json(batch))
        if method == "POST" and rest[1:] == ["cancel"]:
            if batch.ended:
                return self._error(
                    "openai", 409, f"Cannot cancel a batch with status '{batch.status}'."
                )
            batch.status = "cancelling"
            batch.cancel_at = time.time()
            return self._json(self._openai_json(batch))
        return None

    def _openai_create(self, raw: bytes) -> Reply:
        try:
            body = json.loads(raw)
        except ValueError:
            return self._error("openai", 400, "invalid JSON body")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if not isinstance(body.get(name), str):
                return self._error("openai", 400, f"Missing required parameter: '{name}'.")
        if body["endpoint"] != "/v1/chat/completions":
            return self._error("openai", 400, "this fake batches /v1/chat/completions only")
        if body["completion_window"] != "24h":
            return self._error("openai", 400, "completion_window must be '24h'")
        stored = self._files.get(body["input_file_id"])
        if stored is None or stored[0]["purpose"] != "batch":
            return self._error("openai", 400, f"No batch input file {body['input_file_id']!r}")
        requests, errors = _read_input(stored[1], body["endpoint"])
        fault = self._take_fault(requests, "openai")
        if fault.refuse:
            return self._error("openai", fault.refuse, "fault_server: scripted batch refusal")
        batch = self._new_batch(
            "openai",
            requests,
            fault,
            metadata=body.get("metadata"),
            input_file_id=body["input_file_id"],
            errors=errors,
        )
        return self._json(self._openai_json(batch))

    def _openai_json(self, batch: FakeBatch) -> dict[str, Any]:
        ok = sum(1 for _, o in batch.outcomes if o.kind == "ok")
        failed = sum(1 for _, o in batch.outcomes if o.kind == "error")
        created = int(batch.created_at)
        ended = None if batch.ended_at is None else int(batch.ended_at)
        status = batch.status
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": created,
            "in_progress_at": None if batch.in_progress_at is None else int(batch.in_progress_at),
            "expires_at": created + DAY_S,
            "finalizing_at": ended if status in ("completed", "expired") else None,
            "completed_at": ended if status == "completed" else None,
            "failed_at": ended if status == "failed" else None,
            "expired_at": ended if status == "expired" else None,
            "cancelling_at": None if batch.cancel_at is None else int(batch.cancel_at),
            "cancelled_at": ended if status == "cancelled" else None,
            "request_counts": {
                # OpenAI counts a batch's requests once it has validated them
                "total": 0 if status in ("validating", "failed") else len(batch.requests),
                "completed": ok,
                "failed": failed,
            },
            "metadata": batch.metadata,
        }

    def _openai_line(self, custom_id: str, outcome: Outcome) -> bytes:
        line: dict[str, Any] = {"id": self._new_id("batch_req_"), "custom_id": custom_id}
        if outcome.kind in ("ok", "error"):
            line["response"] = {
                "status_code": outcome.status,
                "request_id": self._new_id("req_"),
                "body": outcome.body,
            }
            line["error"] = None
        else:
            code = "batch_expired" if outcome.kind == "expired" else "batch_cancelled"
            message = EXPIRED_MESSAGE if outcome.kind == "expired" else CANCELLED_MESSAGE
            line["response"] = None
            line["error"] = {"code": code, "message": message}
        return _dumps(line)

    # ----------------------------------------------------------------- Anthropic

    def _anthropic(
        self, method: str, rest: list[str], query: dict[str, str], body: bytes
    ) -> Reply | None:
        if method == "POST" and not rest:
            return self._anthropic_create(body)
        if method == "GET" and not rest:
            items = sorted(
                (b for b in self._batches.values() if b.api == "anthropic"),
                key=lambda b: (b.created_at, b.id),
                reverse=True,
            )
            page, has_more = _page(
                items, query.get("after_id"), query.get("before_id"), query.get("limit")
            )
            return self._json(
                {
                    "data": [self._anthropic_json(b) for b in page],
                    "has_more": has_more,
                    "first_id": page[0].id if page else None,
                    "last_id": page[-1].id if page else None,
                }
            )
        if not rest or rest[0] not in self._batches or self._batches[rest[0]].api != "anthropic":
            if rest:
                return self._error("anthropic", 404, f"message batch {rest[0]!r} not found")
            return None
        batch = self._batches[rest[0]]
        if method == "GET" and len(rest) == 1:
            self._poll(batch)
            return self._json(self._anthropic_json(batch))
        if method == "GET" and rest[1:] == ["results"]:
            if not batch.ended:
                return self._error(
                    "anthropic", 400, f"message batch {batch.id} has not ended: no results yet"
                )
            data = b"".join(line + b"\n" for line in batch.lines)
            return 200, data, "application/binary"
        if method == "POST" and rest[1:] == ["cancel"]:
            if not batch.ended and batch.cancel_at is None:
                batch.status = "canceling"
                batch.cancel_at = time.time()
            return self._json(self._anthropic_json(batch))
        return None

    def _anthropic_create(self, raw: bytes) -> Reply:
        try:
            body = json.loads(raw)
        except ValueError:
            return self._error("anthropic", 400, "invalid JSON body")
        items = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(items, list) or not items:
            return self._error("anthropic", 400, "requests: a non-empty list is required")
        requests: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for i, item in enumerate(items):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            params = item.get("params") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                return self._error(
                    "anthropic",
                    400,
                    f"requests.{i}.custom_id: String should match pattern '{CUSTOM_ID.pattern}'",
                )
            if custom_id in seen:
                return self._error(
                    "anthropic", 400, f"requests.{i}.custom_id: {custom_id!r} is not unique"
                )
            if not isinstance(params, dict) or not isinstance(params.get("messages"), list):
                return self._error("anthropic", 400, f"requests.{i}.params: messages required")
            seen.add(custom_id)
            requests.append((custom_id, params))
        fault = self._take_fault(requests, "anthropic")
        if fault.refuse is not None:
            status = fault.refuse or 400
            return self._error("anthropic", status, "fault_server: scripted batch refusal")
        return self._json(self._anthropic_json(self._new_batch("anthropic", requests, fault)))

    def _anthropic_json(self, batch: FakeBatch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.ended:
            for _, outcome in batch.outcomes:
                name = {"ok": "succeeded", "error": "errored", "cancelled": "canceled"}
                counts[name.get(outcome.kind, outcome.kind)] += 1
        else:
            counts["processing"] = len(batch.requests)
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": (
                "ended" if batch.ended else "canceling" if batch.cancel_at else "in_progress"
            ),
            "request_counts": counts,
            "ended_at": _iso(batch.ended_at),
            "created_at": _iso(batch.created_at),
            "expires_at": _iso(batch.created_at + DAY_S),
            "archived_at": None,
            "cancel_initiated_at": _iso(batch.cancel_at),
            "results_url": (
                f"{self.server.anthropic_base_url}/v1/messages/batches/{batch.id}/results"
                if batch.ended
                else None
            ),
        }

    @staticmethod
    def _anthropic_line(custom_id: str, outcome: Outcome) -> bytes:
        result: dict[str, Any]
        if outcome.kind == "ok":
            result = {"type": "succeeded", "message": outcome.body}
        elif outcome.kind == "error":
            result = {"type": "errored", "error": outcome.body}
        else:
            result = {"type": "canceled" if outcome.kind == "cancelled" else "expired"}
        return _dumps({"custom_id": custom_id, "result": result})


def _garbled(custom_id: str, key: str) -> bytes:
    """An output line that is not JSON but whose custom_id can still be read."""
    return f'{{"custom_id":"{custom_id}","{key}": <<this is not json>>'.encode()


def _page(
    items: list[FakeBatch], after: str | None, before: str | None, limit: str | None
) -> tuple[list[FakeBatch], bool]:
    """One page of ``items`` (newest first) after or before a cursor id, and whether more
    follow."""
    size = max(1, min(int(limit), 1000)) if limit and limit.isdigit() else 20
    ids = [b.id for b in items]
    if before and before in ids:
        chosen = items[: ids.index(before)]
        return chosen[-size:], len(chosen) > size
    if after and after in ids:
        items = items[ids.index(after) + 1 :]
    return items[:size], len(items) > size


def _read_input(
    data: bytes, endpoint: str
) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    """The (custom_id, body) requests of a batch input file, and the errors that fail it (each
    naming its 1-based line)."""
    requests: list[tuple[str, dict[str, Any]]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()

    def error(code: str, line: int, message: str, param: str | None = None) -> None:
        errors.append({"code": code, "line": line, "message": message, "param": param})

    lines = data.decode("utf-8", errors="replace").split("\n")  # JSONL: only \n ends a line
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            item = json.loads(text)
        except ValueError:
            error("invalid_json_line", number, f"Line {number} is not valid JSON.")
            continue
        if not isinstance(item, dict):
            error("invalid_json_line", number, f"Line {number} is not a JSON object.")
            continue
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            error(
                "missing_required_parameter",
                number,
                f"Line {number} has no custom_id.",
                "custom_id",
            )
            continue
        if custom_id in seen:
            error(
                "duplicate_custom_id",
                number,
                f"custom_id {custom_id!r} on line {number} is not unique.",
                "custom_id",
            )
            continue
        seen.add(custom_id)
        if item.get("method") != "POST":
            error("invalid_method", number, f"Line {number}: method must be POST.", "method")
            continue
        if item.get("url") != endpoint:
            error(
                "invalid_url",
                number,
                f"Line {number}: url {item.get('url')!r} does not match the batch's endpoint "
                f"{endpoint!r}.",
                "url",
            )
            continue
        body = item.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            error(
                "missing_required_parameter",
                number,
                f"Line {number}: body.messages is required.",
                "body",
            )
            continue
        requests.append((custom_id, body))
    if not requests and not errors:
        errors.append(
            {
                "code": "empty_file",
                "line": None,
                "param": None,
                "message": "The batch input file is empty.",
            }
        )
    return requests, errors
