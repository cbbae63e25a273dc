"""A fake judge for the fault server: a valid HEART verdict computed from the two replies shown.

:func:`verdict_reply` reads ``Reply A:`` and ``Reply B:`` from a judge request (heart's or any
client's: only the text counts, so the same prompt always gets the same verdict, whatever the
request's cache marks, blocks or order of arrival) and answers the verdict JSON a judge would:
a winner, a strength, the five axis codes and a one-sentence rationale. The verdict depends on
the model asked too, so judges of an ensemble disagree now and then, as real ones do.

As a fault server's reply (process form)::

    python -m tests.fakes.fault_server --reply-fn tests.fakes.judge_verdicts:verdict_reply
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tests.fakes.fault_server import conversation, strip_markers

AXES = "HEART"
_REPLY = re.compile(r"Reply A: (?P<a>.*?)\n\nReply B: (?P<b>.*?)\n\n", re.DOTALL)
RATIONALES = (
    "Reply {w} names the seeker's feeling and invites them to say more, while reply {l} moves "
    "on to advice too soon.",
    "Reply {w} stays with what the seeker just said; reply {l} sounds kind but generic.",
    "Reply {w} reflects the seeker's situation back before suggesting a small next step; reply "
    "{l} does not.",
    "Reply {w} asks one open question that fits the moment, and reply {l} reads like a script.",
)


def _score(*parts: str) -> int:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def shown_replies(body: dict[str, Any]) -> tuple[str, str]:
    """The two replies a judge request shows, in the order shown (the first user message that
    has them: a re-ask's later messages do not)."""
    for role, text in conversation(body):
        found = _REPLY.search(strip_markers(text)) if role == "user" else None
        if found:
            return found["a"], found["b"]
    raise ValueError("the request shows no 'Reply A: ... Reply B: ...' pair")


def verdict(model: str, first: str, second: str) -> dict[str, Any]:
    """The verdict of ``model`` on ``first`` (A) against ``second`` (B)."""
    a, b = _score(model, first) % 1000, _score(model, second) % 1000
    winner, loser = ("A", "B") if a >= b else ("B", "A")
    strength = 1 + min(abs(a - b) // 200, 4)
    axes = {}
    for axis in AXES:
        draw = _score(model, axis, first, second) % 10
        axes[axis] = "none" if draw == 0 else f"{loser if draw == 1 else winner}{1 + draw % 5}"
    rationale = RATIONALES[_score(model, "why", first, second) % len(RATIONALES)]
    return {
        "winner": winner,
        "strength": strength,
        "axes": axes,
        "rationale": rationale.format(w=winner, l=loser),
    }


def verdict_reply(body: dict[str, Any]) -> str:
    """The fault server's reply to a judge request: the verdict JSON (see module doc)."""
    first, second = shown_replies(body)
    return json.dumps(verdict(str(body.get("model", "")), first, second))
