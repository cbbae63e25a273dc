"""Where a model is reached: one normalised name per endpoint, for call keys and limits.

Two systems naming the same model on two servers are two endpoints: their answers are cached
apart and they never share a concurrency slot or a rate budget.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from heart.errors import ConfigError

IN_PROCESS = "in-process"
"""The endpoint of the embedded model, which runs inside heart's own process."""

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
"""The variables the SDKs read a base URL from when none is given; heart reads them the same
way, so the endpoint it names is the one the SDK calls."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_LENGTH = 300  # the store keeps an endpoint in 300 characters


class BadBaseUrl(ValueError):
    """A base URL heart cannot call."""


def normalise_base_url(url: str) -> str:
    """One spelling per endpoint: lower-case scheme and host, no default port, no trailing
    slash, no fragment (``HTTP://Host:80/v1/`` → ``http://host/v1``)."""
    text = url.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise BadBaseUrl(f"{url!r} is not an http(s) URL like http://127.0.0.1:8000/v1")
    if parts.username is not None or parts.password is not None:
        raise BadBaseUrl(
            "a base URL must not hold a user name or password; put the key in the variable "
            "that api_key_env names"
        )
    if len(text) > MAX_LENGTH:
        raise BadBaseUrl(f"a base URL may be at most {MAX_LENGTH} characters, not {len(text)}")
    try:
        port = parts.port
    except ValueError:
        raise BadBaseUrl(f"{url!r} has a port that is not a number from 0 to 65535") from None
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, host, path, parts.query, ""))


def endpoint_of(provider: str, base_url: str | None) -> str:
    """The endpoint a model section reaches: its base URL, else the SDK's environment variable,
    else the provider's public API; the embedded model runs in-process."""
    if provider == "embedded":
        return IN_PROCESS
    if base_url:
        return normalise_base_url(base_url)
    variable = BASE_URL_ENV[provider]
    given = os.environ.get(variable, "")
    try:
        return normalise_base_url(given or DEFAULT_BASE_URLS[provider])
    except BadBaseUrl as exc:
        raise ConfigError(f"the environment variable {variable}: {exc}; fix or unset it") from None
