"""Signed cookies for raters and for the admin, the CSRF token each form carries, and the
opaque handle a page uses for its task (a task id names items and pairs, so it never leaves
the server)."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from heart.errors import HeartError

RATER_COOKIE = "heart_session"
ADMIN_COOKIE = "heart_admin"
RATER_MAX_AGE = 30 * 24 * 3600
ADMIN_MAX_AGE = 12 * 3600
SECRET_FILE = ".heart-secret"
ADMIN_FILE = ".heart-admin"
"""Where a study keeps the digest of the admin token `heart serve` made for it."""


@dataclass(frozen=True)
class RaterSession:
    """Who is signed in: a rater id, how they came in (invite or prolific), and a nonce that
    the CSRF token is derived from; once checked against the store, the hash of the consent
    text they accepted (None: none yet), whether their latest answer to the practice pair was
    right, how many times they answered it, what the store keeps of them (``meta``: how they
    came in, the flow their link named), whether quality control excluded them, and the tasks
    they submitted by kind."""

    rater: str
    entry: str
    nonce: str
    consent_hash: str | None = None
    practised: bool = False
    practice_tries: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict)
    excluded: bool = False
    done: Mapping[str, int] = field(default_factory=dict)


def same(given: str | None, expected: str) -> bool:
    """Whether ``given`` equals ``expected``, in constant time, whatever characters it holds."""
    return given is not None and hmac.compare_digest(
        given.encode("utf-8", "replace"), expected.encode("utf-8")
    )


def _mac(secret: bytes, *parts: str) -> str:
    return hmac.new(secret, "\x1f".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()


def token_digest(token: str) -> str:
    """What is kept of an admin token: its sha256, in hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Signer:
    """Issues and checks every signed value of the app with one secret; the admin token is
    known by its digest (`token_digest`)."""

    def __init__(self, secret: bytes, admin_digest: str) -> None:
        if len(secret) < 16:
            raise ValueError("the session secret must be at least 16 bytes")
        self._secret = secret
        self._raters = URLSafeTimedSerializer(secret, salt="heart-rater")
        self._admins = URLSafeTimedSerializer(secret, salt="heart-admin")
        self._admin_digest = admin_digest
        # An admin cookie is bound to the token it was issued for: a new token voids old ones.
        self._admin_id = _mac(secret, "admin-token", admin_digest)[:32]

    def rater_cookie(self, rater: str, entry: str) -> str:
        return self._raters.dumps({"r": rater, "e": entry, "n": secrets.token_hex(16)})

    def read_rater(self, cookie: str | None) -> RaterSession | None:
        if not cookie:
            return None
        try:
            data = self._raters.loads(cookie, max_age=RATER_MAX_AGE)
        except BadSignature:
            return None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in "ren"):
            return None
        return RaterSession(rater=data["r"], entry=data["e"], nonce=data["n"])

    def csrf(self, session: RaterSession) -> str:
        """The token every form of this session carries."""
        return _mac(self._secret, "csrf", session.rater, session.nonce)[:40]

    def csrf_ok(self, session: RaterSession, token: str | None) -> bool:
        return same(token, self.csrf(session))

    def admin_token_ok(self, token: str | None) -> bool:
        return token is not None and same(token_digest(token), self._admin_digest)

    def admin_csrf(self) -> str:
        """The token every admin form carries (bound to the admin token, like the cookie)."""
        return _mac(self._secret, "admin-csrf", self._admin_id)[:40]

    def admin_csrf_ok(self, token: str | None) -> bool:
        return same(token, self.admin_csrf())

    def admin_cookie(self) -> str:
        return self._admins.dumps({"a": self._admin_id})

    def admin_ok(self, cookie: str | None) -> bool:
        if not cookie:
            return False
        try:
            data = self._admins.loads(cookie, max_age=ADMIN_MAX_AGE)
        except BadSignature:
            return False
        return isinstance(data, dict) and same(str(data.get("a", "")), self._admin_id)

    def task_handle(self, rater: str, task: str) -> str:
        """What a page names its task by: meaningless to the rater, different per rater."""
        return _mac(self._secret, "task", rater, task)[:32]


def study_secret(root: Path) -> bytes:
    """The session secret kept in ``root/.heart-secret``, created (mode 0600) on first use so
    that sessions survive a restart."""
    path = root / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            secret = bytes.fromhex(path.read_text(encoding="ascii").strip())
        except (UnicodeDecodeError, ValueError):
            secret = b""
        if len(secret) < 16:
            raise HeartError(
                f"{path} holds no usable secret; delete it and a new one is made"
            ) from None
        return secret
    with os.fdopen(fd, "w", encoding="ascii") as out:
        value = secrets.token_hex(32)
        out.write(value + "\n")
    return bytes.fromhex(value)


def study_admin_token(root: Path) -> tuple[str | None, str]:
    """The study's admin token and its digest: on first use a new token, whose digest is kept
    in ``root/.heart-admin`` (mode 0600); after that only the digest is known (None for the
    token), so the link printed the first time keeps working across restarts."""
    path = root / ADMIN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        digest = path.read_text(encoding="ascii", errors="replace").strip()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise HeartError(
                f"{path} holds no admin token digest; delete it and a new token is made"
            ) from None
        return None, digest
    token = secrets.token_urlsafe(24)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(token_digest(token) + "\n")
    return token, token_digest(token)
