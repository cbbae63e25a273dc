"""People's access: invite tokens (only their hash is stored) and Prolific-style entry."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from heart.config import WORK_KINDS
from heart.people._text import plain_text
from heart.store import RaterRow, Store, add_if_missing, now_iso
from heart.types import stable_id


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def flow_meta(flow: str | Sequence[str] | None) -> dict[str, Any]:
    """What a rater's ``meta`` keeps of the flow their link names (``judge`` or
    ``write,judge``; the study's flow when None), or ValueError naming the fix."""
    if flow is None:
        return {}
    kinds = [k.strip() for k in flow.split(",")] if isinstance(flow, str) else list(flow)
    unknown = [k for k in kinds if k not in WORK_KINDS]
    if not kinds or unknown or len(set(kinds)) != len(kinds):
        raise ValueError(
            f"a flow names each kind of work once, from {', '.join(WORK_KINDS)} "
            f"(as write,judge); got {','.join(kinds) or 'nothing'}"
        )
    return {"flow": [{"kind": kind} for kind in kinds]}


def invite(
    store: Store, n: int, note: str = "", flow: str | Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """Create ``n`` raters, each with a random invite token; returns (rater id, token). The
    token is shown once: the store keeps only its sha256. ``flow`` (kinds of work, in order,
    even shares) replaces the study's flow for these raters."""
    if n < 1:
        raise ValueError(f"the number of invites must be positive, got {n}")
    plain_text(note, "note")
    steps = flow_meta(flow)
    out = []
    with store.session() as session:
        for _ in range(n):
            token = secrets.token_urlsafe(24)
            rater = "r-" + secrets.token_hex(6)
            session.add(
                RaterRow(id=rater, token_hash=token_hash(token),
                         meta={"entry": "invite", "note": note, **steps}, created_at=now_iso())
            )  # fmt: skip
            out.append((rater, token))
    return out


def rater_for_token(store: Store, token: str) -> str | None:
    """The rater an invite token belongs to, if any."""
    with store.session() as session:
        return session.scalar(select(RaterRow.id).where(RaterRow.token_hash == token_hash(token)))


def prolific_rater(
    store: Store, participant: str, study: str, session_id: str, flow: str | None = None
) -> str:
    """The rater for a Prolific-style entry. The participant id is stored only as a hash; the
    same participant in the same study always gets the same rater, however many of their
    first entries arrive at once. A ``flow`` the link names is kept from the first entry."""
    if not participant.strip():
        raise ValueError("the entry link has no participant id")
    for value, what in (
        (participant, "participant id"),
        (study, "study id"),
        (session_id, "session id"),
    ):
        plain_text(value, what)
    steps = flow_meta(flow)
    rater = stable_id("p-", study, participant, length=12)
    with store.session() as session:
        if session.get(RaterRow, rater) is None:  # first entry (perhaps several at once)
            add_if_missing(
                session, RaterRow, id=rater, token_hash=None, created_at=now_iso(),
                meta={"entry": "prolific", "study": study, "session": session_id,
                      "participant_hash": token_hash(f"{study}\x1f{participant}"), **steps},
            )  # fmt: skip
    return rater
