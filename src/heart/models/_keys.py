"""API keys: read from the environment variable the study names, never from the study file."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from heart.config import ModelSpec
from heart.models._errors import Cause, ModelCallError

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
NO_KEY = "no-key-needed"
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The variable each API provider's key is read from when a model section names none."""


def key_variable(spec: ModelSpec) -> str | None:
    """The environment variable ``spec``'s key must be in: ``api_key_env``, else the provider's
    default; None when no key is needed (the embedded model, or local servers whose section
    names no variable)."""
    if spec.provider == "embedded":
        return None
    urls = spec.base_url if isinstance(spec.base_url, list) else [spec.base_url or ""]
    local = all(urlparse(url).hostname in LOCAL_HOSTS for url in urls)
    if spec.api_key_env is None and local:
        return None
    return spec.api_key_env or DEFAULT_KEY_ENV[spec.provider]


def missing_key(spec: ModelSpec) -> str | None:
    """The variable ``spec`` needs that is unset or empty, else None."""
    name = key_variable(spec)
    return name if name is not None and not os.environ.get(name) else None


def api_key(spec: ModelSpec) -> str:
    """The key for ``spec``; local servers need none (a variable they name is still read)."""
    name = spec.api_key_env or DEFAULT_KEY_ENV[spec.provider]
    value = os.environ.get(name)
    if value:
        return value
    if key_variable(spec) is None:
        return NO_KEY
    raise ModelCallError(
        f"the environment variable {name} is not set; export your API key there "
        "(keys never go in study.yaml)",
        retryable=False,
        cause=Cause.AUTH,
    )
