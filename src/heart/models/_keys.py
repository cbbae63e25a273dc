"""API keys: read from the environment variable the study names, never from the study file."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from heart.config import ModelSpec
from heart.models._errors import ModelCallError

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
NO_KEY = "no-key-needed"


def api_key(spec: ModelSpec, *, default_env: str) -> str:
    """The key for ``spec`` from ``api_key_env`` (else ``default_env``); local servers need none."""
    name = spec.api_key_env or default_env
    value = os.environ.get(name)
    if value:
        return value
    host = urlparse(spec.base_url or "").hostname
    if spec.api_key_env is None and host in LOCAL_HOSTS:
        return NO_KEY
    raise ModelCallError(
        f"the environment variable {name} is not set; export your API key there "
        "(keys never go in study.yaml)",
        retryable=False,
    )
