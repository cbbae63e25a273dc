"""A call's key covers everything that chooses its answer and nothing else."""

from __future__ import annotations

import pytest

from heart.config import ModelSpec, parse_study
from heart.endpoints import IN_PROCESS, BadBaseUrl, endpoint_of, normalise_base_url
from heart.errors import ConfigError
from heart.models import CALL_KEY_VERSION, ChatRequest, Message, call_key
from heart.models.anthropic import AnthropicModel
from heart.models.openai_compat import OpenAICompatibleModel
from heart.types import canonical_json, sha256_hex

REQUEST = ChatRequest(messages=(Message(role="user", content="How are you?"),), max_tokens=20)
SCHEMA = {"type": "object", "properties": {"x": {"type": "string"}}}


def _openai(
    base_url: str | None = "http://127.0.0.1:8000/v1", **spec: object
) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        ModelSpec.model_validate(
            {"provider": "openai", "base_url": base_url, "model": "local", **spec}
        )
    )


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("HTTP://LocalHost:8000/v1/", "http://localhost:8000/v1"),
        ("https://api.example.com:443/v1", "https://api.example.com/v1"),
        ("http://host:80", "http://host"),
        ("http://host:8080/v1?api-version=2#frag", "http://host:8080/v1?api-version=2"),
        ("http://[::1]:9000/v1", "http://[::1]:9000/v1"),
    ],
)
def test_base_urls_are_spelt_one_way(given: str, normal: str) -> None:
    assert normalise_base_url(given) == normal


@pytest.mark.parametrize("bad", ["127.0.0.1:8000", "ftp://host/v1", "http://", "http://h:99999"])
def test_a_base_url_heart_cannot_call_is_refused(bad: str) -> None:
    with pytest.raises(BadBaseUrl):
        normalise_base_url(bad)


def test_the_endpoint_follows_the_sdk_when_no_base_url_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert endpoint_of("openai", None) == "https://api.openai.com/v1"
    assert endpoint_of("anthropic", None) == "https://api.anthropic.com"
    assert endpoint_of("embedded", "http://ignored") == IN_PROCESS
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.5:8000/v1/")
    assert endpoint_of("openai", None) == "http://10.0.0.5:8000/v1"
    assert endpoint_of("openai", "http://127.0.0.1:1/v1") == "http://127.0.0.1:1/v1"


def test_the_key_is_the_hash_of_a_versioned_identity() -> None:
    model = _openai()
    identity = {
        "key": CALL_KEY_VERSION,
        "provider": "openai",
        "endpoint": "http://127.0.0.1:8000/v1",
        "model": "local",
        "output": None,
        "context": None,
        "request": REQUEST.model_dump(mode="json", exclude={"stream", "cache_key", "shared_chars"}),
    }
    assert CALL_KEY_VERSION == 2
    assert call_key(model, REQUEST) == sha256_hex(canonical_json(identity))


def test_prompt_cache_hints_leave_the_key_as_it_was() -> None:
    """Answers cached before requests carried cache hints are still served for them."""
    model = _openai()
    hinted = REQUEST.model_copy(update={"cache_key": "item-7", "shared_chars": 120})
    assert call_key(model, hinted) == call_key(model, REQUEST)


def test_endpoint_and_output_mode_change_the_key_streaming_does_not() -> None:
    here, there = _openai(), _openai("http://127.0.0.1:8001/v1")
    same_place = _openai("HTTP://127.0.0.1:8000/v1/")
    assert call_key(here, REQUEST) != call_key(there, REQUEST)
    assert call_key(here, REQUEST) == call_key(same_place, REQUEST)
    streamed = REQUEST.model_copy(update={"stream": True})
    assert call_key(here, REQUEST) == call_key(here, streamed)

    with_schema = REQUEST.model_copy(update={"json_schema": SCHEMA})
    llama_cpp = _openai(structured_output="json_object_schema")
    # the output mode chooses the answer only when a schema is asked for
    assert call_key(here, REQUEST) == call_key(llama_cpp, REQUEST)
    assert call_key(here, with_schema) != call_key(llama_cpp, with_schema)

    claude = AnthropicModel(
        ModelSpec(provider="anthropic", base_url="http://127.0.0.1:8000/v1", model="local")
    )
    assert call_key(claude, REQUEST) != call_key(here, REQUEST)


def test_endpoint_limits_are_keyed_one_way_and_fall_back_to_the_provider() -> None:
    config = parse_study(
        """
name: s
systems: [{name: x, kind: dataset, family: d}]
engine:
  providers: {openai: {concurrency: 8, timeout_s: 30}}
  endpoints: {'HTTP://127.0.0.1:8000/v1/': {concurrency: 2}}
"""
    )
    own = config.engine.settings("openai", "http://127.0.0.1:8000/v1")
    assert (own.concurrency, own.timeout_s) == (2, 30)
    other = config.engine.settings("openai", "http://127.0.0.1:8001/v1")
    assert (other.concurrency, other.timeout_s) == (8, 30)
    assert config.engine.settings("anthropic", "https://api.anthropic.com").concurrency == 4


def test_bad_endpoint_settings_name_the_line_and_the_fix() -> None:
    text = """name: s
systems: [{name: x, kind: dataset, family: d}]
engine:
  endpoints:
    'http://a:1/v1': {concurrency: 2}
    'HTTP://A:1/v1/': {concurrency: 3}
"""
    with pytest.raises(ConfigError, match=r"line 4: 'engine.endpoints': two engine.endpoints keys"):
        parse_study(text)
    with pytest.raises(ConfigError, match=r"line 2: 'systems.0.model.base_url'.*not an http"):
        parse_study(
            "name: s\nsystems: [{name: x, kind: model, family: d, "
            "model: {provider: openai, base_url: 'localhost:8000'}}]\n"
        )


def test_a_base_url_with_credentials_or_too_long_is_refused() -> None:
    with pytest.raises(BadBaseUrl, match="user name or password"):
        normalise_base_url("http://user:secret@127.0.0.1:8000/v1")
    with pytest.raises(BadBaseUrl, match="at most 300 characters"):
        normalise_base_url("http://h/" + "v" * 300)


def test_a_bad_base_url_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    with pytest.raises(ConfigError, match=r"the environment variable OPENAI_BASE_URL: .*unset it"):
        endpoint_of("openai", None)


def test_the_embedded_models_context_window_is_part_of_its_key() -> None:
    from heart.models.embedded import EmbeddedModel

    small, large = EmbeddedModel("smollm2", n_ctx=2048), EmbeddedModel("smollm2", n_ctx=4096)
    assert call_key(small, REQUEST) != call_key(large, REQUEST)  # nothing is loaded to say so
