"""The fake server's prompt cache: which prompt prefixes a provider would have kept, and usage.

Both providers bill a prompt prefix they have seen recently at a fraction of the input price and
report how many prompt tokens were read from (and, for Anthropic, written to) their cache. This
module models that on a clock the server owns, so tests and benchmarks see usage shaped exactly
as the providers report it.

Tokens
    :class:`TokenUnit` ``"words"`` counts whitespace-separated words (the server's default) and
    ``"chars4"`` one token per 4 characters, rounded up, per message (closer to real
    tokenisers). A prompt's tokens are the sum over its turns (system, then messages); tool
    definitions take part in a prefix's identity but count no tokens, unless the cache is made
    with ``schema_tokens``: then, as the providers bill them, an Anthropic request's tools
    (their JSON, after the tool-use instructions a forced tool adds: 313 tokens) and an OpenAI
    request's ``response_format`` schema (its JSON) are prompt tokens ahead of the system
    prompt, part of every prefix that follows.

OpenAI (automatic)
    Prompts of at least ``min_tokens`` tokens are cached in prefixes of ``min_tokens + k*128``
    tokens. A request reads the longest such prefix seen before (``cached_tokens``), then every
    such prefix of it is kept for 300 s (86,400 s with ``prompt_cache_retention: "24h"``); the
    longest one less the read one counts as written (reported as ``cache_write_tokens`` only
    when the server is asked to: OpenAI does not bill writes).

Anthropic (explicit)
    Only prefixes that end at a ``cache_control`` breakpoint (a tool, a system block or a message
    content block; prefix order tools, system, messages) and hold at least ``min_tokens`` tokens
    are cached. A request reads the longest breakpoint prefix present, and writes the longer
    ones: the tokens between the read prefix and the longest written one are cache writes, each
    stretch billed at the ttl (``"5m"`` or ``"1h"``) of the breakpoint that ends it.

Entries expire after their ttl (300 s or 3600 s) and a hit refreshes the entry it read. The
cache is keyed by wire format and model, so two models never share prefixes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

TokenUnit = Literal["words", "chars4"]
TOKEN_UNITS: tuple[str, ...] = ("words", "chars4")
OPENAI_STEP = 128
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0, "24h": 86400.0}

_WORD = re.compile(r"\S+")


def count_tokens(text: str, unit: str = "words") -> int:
    """Tokens in ``text``: words, or characters / 4 rounded up."""
    if unit == "chars4":
        return math.ceil(len(text) / 4)
    return len(text.split())


def token_ends(text: str, unit: str) -> list[int]:
    """The character offset at which each token of ``text`` ends, in order."""
    if unit == "chars4":
        return [min(4 * k, len(text)) for k in range(1, count_tokens(text, unit) + 1)]
    return [m.end() for m in _WORD.finditer(text)]


@dataclass(frozen=True)
class Usage:
    """What one answer used: all prompt tokens (cache reads and writes included), output
    tokens, and the prompt tokens read from and written to the cache."""

    prompt: int
    output: int
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    def openai(self, *, report_writes: bool = False) -> dict[str, Any]:
        """``usage`` of a chat.completion (``prompt_tokens`` includes cached tokens)."""
        details: dict[str, Any] = {"cached_tokens": self.cache_read, "audio_tokens": 0}
        if report_writes:
            details["cache_write_tokens"] = self.cache_write
        return {
            "prompt_tokens": self.prompt,
            "completion_tokens": self.output,
            "total_tokens": self.prompt + self.output,
            "prompt_tokens_details": details,
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }

    def anthropic(self, *, output: int | None = None) -> dict[str, Any]:
        """``usage`` of a Message (``input_tokens`` leaves cache reads and writes out)."""
        return {
            "input_tokens": self.prompt - self.cache_read - self.cache_write,
            "output_tokens": self.output if output is None else output,
            "cache_creation_input_tokens": self.cache_write,
            "cache_read_input_tokens": self.cache_read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_write_5m,
                "ephemeral_1h_input_tokens": self.cache_write_1h,
            },
            "service_tier": "standard",
        }


@dataclass(frozen=True)
class CacheMark:
    """A ``cache_control`` breakpoint a request carried: where (``tools[0]``, ``system[0]``,
    ``messages[0].content[0]``), its ttl, and the prompt tokens up to its end."""

    where: str
    ttl: str
    tokens: int


@dataclass(frozen=True)
class CacheAsk:
    """What a request asked of the cache: OpenAI's ``prompt_cache_key`` and retention, and
    Anthropic's breakpoints."""

    prompt_cache_key: str | None = None
    retention: str | None = None
    marks: tuple[CacheMark, ...] = ()


class Clock:
    """Seconds on ``time.monotonic()``, or virtual: 0 at start, ``seconds_per_request`` more
    after each answered completion request (:meth:`tick`), so a long run can be modelled."""

    def __init__(self, seconds_per_request: float | None = None) -> None:
        if seconds_per_request is not None and not seconds_per_request >= 0:
            raise ValueError("seconds_per_request must be >= 0")
        self.seconds_per_request = seconds_per_request
        self._virtual = 0.0
        self._lock = threading.Lock()

    @property
    def virtual(self) -> bool:
        return self.seconds_per_request is not None

    def now(self) -> float:
        if self.seconds_per_request is None:
            return time.monotonic()
        with self._lock:
            return self._virtual

    def tick(self) -> None:
        """One completion request answered."""
        if self.seconds_per_request is not None:
            self.advance(self.seconds_per_request)

    def advance(self, seconds: float) -> None:
        """Move a virtual clock on by ``seconds`` (a real clock cannot be moved)."""
        if self.seconds_per_request is None:
            raise RuntimeError("the clock is real time; pass seconds_per_request for a virtual one")
        with self._lock:
            self._virtual += seconds


@dataclass
class _Turn:
    role: str
    blocks: list[tuple[str, str | None, str]]  # (text, ttl of a breakpoint at its end, where)

    @property
    def text(self) -> str:
        return "".join(text for text, _, _ in self.blocks)


@dataclass
class _Prompt:
    """A request's prompt as the cache sees it: tools, then turns of text blocks."""

    scope: str
    tools: list[tuple[str, str | None]] = field(default_factory=list)  # (json, ttl)
    turns: list[_Turn] = field(default_factory=list)


FORCED_TOOL_TOKENS = 313
AUTO_TOOL_TOKENS = 346
"""The tool-use instructions Anthropic adds to a request with tools (Claude 4 models): with
tool_choice any or tool, and with auto or none."""


class PromptCache:
    """Prefixes a provider keeps, with their expiry (see module doc). Thread-safe."""

    def __init__(
        self,
        *,
        unit: str = "words",
        min_tokens: int = 1024,
        clock: Clock | None = None,
        schema_tokens: bool = False,
    ) -> None:
        if unit not in TOKEN_UNITS:
            raise ValueError(f"token unit must be one of {', '.join(TOKEN_UNITS)}, not {unit!r}")
        if min_tokens < 1:
            raise ValueError("cache min tokens must be at least 1")
        self.unit = unit
        self.min_tokens = min_tokens
        self.clock = clock or Clock()
        self.schema_tokens = schema_tokens
        self._entries: dict[str, tuple[float, float]] = {}  # prefix hash -> (expiry, ttl s)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        now = self.clock.now()
        with self._lock:
            return sum(1 for expiry, _ in self._entries.values() if expiry > now)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    # ----------------------------------------------------------------- usage of one request

    def usage(self, api: str, body: dict[str, Any], output: int) -> tuple[Usage, CacheAsk]:
        """The usage of answering ``body`` (``output`` tokens), updating the cache."""
        prompt = _prompt_of(api, body, self._schema_text(api, body))
        total = sum(count_tokens(t.text, self.unit) for t in prompt.turns)
        if api == "anthropic":
            return self._anthropic(prompt, total, output)
        return self._openai(prompt, body, total, output)

    def plain_usage(self, api: str, body: dict[str, Any], output: int) -> Usage:
        """Usage without looking at the cache."""
        prompt = _prompt_of(api, body, self._schema_text(api, body))
        return Usage(sum(count_tokens(t.text, self.unit) for t in prompt.turns), output)

    def _schema_text(self, api: str, body: dict[str, Any]) -> str:
        """The text standing for the prompt tokens of a request's tools or output schema."""
        if not self.schema_tokens:
            return ""
        if api == "anthropic":
            tools = body.get("tools") or []
            if not tools:
                return ""
            choice = body.get("tool_choice") or {}
            forced = isinstance(choice, dict) and choice.get("type") in ("any", "tool")
            overhead = FORCED_TOOL_TOKENS if forced else AUTO_TOOL_TOKENS
            filler = ("tool " if self.unit == "words" else "tool") * overhead
            return filler + json.dumps(tools, sort_keys=True)
        schema = body.get("response_format")
        return json.dumps(schema, sort_keys=True) if isinstance(schema, dict) else ""

    def _openai(
        self, prompt: _Prompt, body: dict[str, Any], total: int, output: int
    ) -> tuple[Usage, CacheAsk]:
        key = body.get("prompt_cache_key")
        retention = body.get("prompt_cache_retention")
        ask = CacheAsk(
            prompt_cache_key=key if isinstance(key, str) else None,
            retention=retention if isinstance(retention, str) else None,
        )
        if total < self.min_tokens:
            return Usage(total, output), ask
        ttl = TTL_SECONDS["24h"] if retention == "24h" else TTL_SECONDS["5m"]
        wanted = set(range(self.min_tokens, total + 1, OPENAI_STEP))
        hashes = [h for _, h in _prefix_hashes(prompt, self.unit, wanted)]
        lengths = sorted(wanted)
        now = self.clock.now()
        read = 0
        with self._lock:
            for length, digest in zip(lengths, hashes, strict=True):
                if self._hit(digest, now):
                    read = length
            for digest in hashes:
                self._keep(digest, now, ttl)
        written = max(lengths, default=0) - read if hashes else 0
        return Usage(total, output, cache_read=read, cache_write_5m=written), ask

    def _anthropic(self, prompt: _Prompt, total: int, output: int) -> tuple[Usage, CacheAsk]:
        points = _breakpoints(prompt, self.unit)
        ask = CacheAsk(
            marks=tuple(CacheMark(where, ttl, tokens) for where, ttl, tokens, _ in points)
        )
        usable = [p for p in points if p[2] >= self.min_tokens]
        now = self.clock.now()
        read = 0
        with self._lock:
            for _, _, tokens, digest in usable:
                if tokens > read and self._hit(digest, now):
                    read = tokens
            written = {"5m": 0, "1h": 0}
            edge = read
            for _, ttl, tokens, digest in sorted(usable, key=lambda p: p[2]):
                if tokens <= read:
                    continue
                self._keep(digest, now, TTL_SECONDS[ttl])
                written[ttl] += tokens - edge
                edge = tokens
        return (
            Usage(
                total,
                output,
                cache_read=read,
                cache_write_5m=written["5m"],
                cache_write_1h=written["1h"],
            ),
            ask,
        )

    def _hit(self, digest: str, now: float) -> bool:
        entry = self._entries.get(digest)
        if entry is None:
            return False
        expiry, ttl = entry
        if expiry <= now:
            del self._entries[digest]
            return False
        self._entries[digest] = (now + ttl, ttl)  # a hit refreshes the entry
        return True

    def _keep(self, digest: str, now: float, ttl: float) -> None:
        expiry, kept_ttl = self._entries.get(digest, (0.0, 0.0))
        self._entries[digest] = (max(expiry, now + ttl), max(kept_ttl, ttl))


# --------------------------------------------------------------------------- reading a request


def _blocks(content: Any, where: str) -> list[tuple[str, str | None, str]]:
    """(text, breakpoint ttl or None, where) of each text block of a content or system."""
    if content is None:
        return []
    if isinstance(content, str):
        return [(content, None, where)]
    blocks: list[tuple[str, str | None, str]] = []
    if isinstance(content, list):
        for i, part in enumerate(content):
            if isinstance(part, str):
                blocks.append((part, None, f"{where}[{i}]"))
            elif isinstance(part, dict):
                text = part.get("text") if isinstance(part.get("text"), str) else ""
                blocks.append((text, _ttl(part.get("cache_control")), f"{where}[{i}]"))
    return blocks


def _ttl(control: Any) -> str | None:
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        return None
    ttl = control.get("ttl", "5m")
    return ttl if ttl in ("5m", "1h") else "5m"


def _prompt_of(api: str, body: dict[str, Any], schema: str = "") -> _Prompt:
    prompt = _Prompt(scope=json.dumps([api, body.get("model")]))
    if schema:
        prompt.turns.append(_Turn("tools", [(schema, None, "tools")]))
    if api == "anthropic":
        for tool in body.get("tools") or []:
            if isinstance(tool, dict):
                plain = {k: v for k, v in tool.items() if k != "cache_control"}
                prompt.tools.append(
                    (json.dumps(plain, sort_keys=True), _ttl(tool.get("cache_control")))
                )
        if body.get("system") is not None:
            prompt.turns.append(_Turn("system", _blocks(body.get("system"), "system")))
    for i, message in enumerate(body.get("messages") or []):
        if isinstance(message, dict):
            where = f"messages[{i}].content"
            prompt.turns.append(
                _Turn(str(message.get("role", "")), _blocks(message.get("content"), where))
            )
    return prompt


def _head_hash(prompt: _Prompt) -> Any:
    digest = hashlib.sha256(prompt.scope.encode())
    for tool_json, _ in prompt.tools:
        digest.update(b"\x00tool\x00" + tool_json.encode())
    return digest


def _prefix_hashes(prompt: _Prompt, unit: str, at: set[int]) -> list[tuple[int, str]]:
    """(tokens, hash) of the prefixes of the prompt that end after ``at`` tokens, in order."""
    out: list[tuple[int, str]] = []
    digest = _head_hash(prompt)
    tokens = 0
    for turn in prompt.turns:
        text = turn.text
        digest.update(b"\x00" + turn.role.encode() + b"\x00")
        ends = token_ends(text, unit)
        start = 0
        for wanted in sorted(n for n in at if tokens < n <= tokens + len(ends)):
            end = ends[wanted - tokens - 1]
            digest.update(text[start:end].encode())
            start = end
            out.append((wanted, digest.copy().hexdigest()))
        digest.update(text[start:].encode())
        tokens += len(ends)
    return out


def _breakpoints(prompt: _Prompt, unit: str) -> list[tuple[str, str, int, str]]:
    """(where, ttl, tokens, hash) of each cache_control breakpoint, in prompt order."""
    points: list[tuple[str, str, int, str]] = []
    digest = _head_hash(prompt)
    if any(ttl for _, ttl in prompt.tools):
        head = hashlib.sha256(prompt.scope.encode())
        for i, (tool_json, ttl) in enumerate(prompt.tools):
            head.update(b"\x00tool\x00" + tool_json.encode())
            if ttl is not None:
                points.append((f"tools[{i}]", ttl, 0, head.copy().hexdigest()))
    tokens = 0
    for turn in prompt.turns:
        digest.update(b"\x00" + turn.role.encode() + b"\x00")
        seen = ""
        for text, ttl, where in turn.blocks:
            digest.update(text.encode())
            seen += text
            if ttl is not None:
                points.append(
                    (where, ttl, tokens + count_tokens(seen, unit), digest.copy().hexdigest())
                )
        tokens += count_tokens(seen, unit)
    return points
