"""The embedded model through llama.cpp: real calls, streaming TTFT, exact token counts."""

from __future__ import annotations

import asyncio
from importlib.resources import as_file

import pytest

from heart.judging import VERDICT_SCHEMA, InvalidVerdict, parse_verdict
from heart.models import ChatRequest, Message, call_key
from heart.models.embedded import EmbeddedModel, embedded_model_path

pytestmark = pytest.mark.slow

REQUEST = ChatRequest(
    messages=(
        Message(role="system", content="You are a supportive listener. Reply in one sentence."),
        Message(role="user", content="I failed my exam again and I feel so stupid."),
    ),
    max_tokens=48,
    stream=True,
)


def test_generates_with_ttft_and_token_counts() -> None:
    model = EmbeddedModel("smollm2-135m-instruct-q4_1", n_ctx=2048)
    response = asyncio.run(model.complete(REQUEST))
    assert response.text.strip()
    assert response.ttft_ms is not None and 0 < response.ttft_ms <= response.latency_ms
    assert 0 < response.tokens_out <= 48
    # the streamed counts agree with llama.cpp's own usage for the same call
    from llama_cpp import Llama

    llm = Llama(model_path=str(embedded_model_path()), n_ctx=2048, verbose=False)
    usage = llm.create_chat_completion(
        messages=[m.model_dump() for m in REQUEST.messages], max_tokens=48, temperature=0
    )["usage"]
    assert (response.tokens_in, response.tokens_out) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )


def test_temperature_zero_is_deterministic() -> None:
    model = EmbeddedModel("smollm2-135m-instruct-q4_1", n_ctx=2048)
    first = asyncio.run(model.complete(REQUEST))
    second = asyncio.run(model.complete(REQUEST))
    assert first.text == second.text


def test_schema_constrained_answer_is_json() -> None:
    model = EmbeddedModel("smollm2-135m-instruct-q4_1", n_ctx=2048)
    request = ChatRequest(
        messages=(
            Message(role="system", content="Compare two replies. Answer in JSON."),
            Message(
                role="user", content="Reply A: That sounds hard.\nReply B: ok.\nWhich is better?"
            ),
        ),
        max_tokens=200,
        json_schema=VERDICT_SCHEMA,
    )
    response = asyncio.run(model.complete(request))
    try:
        verdict = parse_verdict(response.text)
    except InvalidVerdict as exc:  # the grammar guarantees shape; validation may still object
        pytest.fail(f"grammar-constrained answer did not validate: {exc}: {response.text!r}")
    assert verdict.winner in ("A", "B")


def test_streaming_does_not_change_the_answer_or_its_cache_key() -> None:
    model = EmbeddedModel("smollm2-135m-instruct-q4_1", n_ctx=2048)
    plain = REQUEST.model_copy(update={"stream": False})
    streamed, whole = asyncio.run(model.complete(REQUEST)), asyncio.run(model.complete(plain))
    assert streamed.text == whole.text
    assert (streamed.tokens_in, streamed.tokens_out) == (whole.tokens_in, whole.tokens_out)
    assert whole.ttft_ms is None and streamed.ttft_ms is not None
    assert call_key(model, REQUEST) == call_key(model, plain)


def test_grammar_checked_greedy_picks_what_the_library_picks() -> None:
    """heart's greedy decoding under the verdict grammar gives llama-cpp-python's own answers
    token for token, including where the model's top token breaks the grammar."""
    from importlib.resources import files

    from llama_cpp import Llama

    from heart.config import JudgeSpec, JudgingSpec, ModelSpec
    from heart.corpus import load_corpus
    from heart.items import select_regular_items
    from heart.judging import judge_request
    from heart.models._greedy import GrammarGreedy
    from heart.models.embedded import _load, llama_settings
    from heart.prompts import load_prompt

    demo = files("heart.demo").joinpath("esconv_demo.jsonl")
    with as_file(demo) as path:
        conversations = load_corpus(path).conversations
    item = select_regular_items(conversations, n_items=1, seed=0).items[0]
    spec = JudgeSpec(name="j", family="huggingface", model=ModelSpec(provider="embedded"))
    prompt = load_prompt("judge-heart", JudgingSpec().prompt_version)
    replies = [item.reference, "That sounds so hard. What weighs on you most?", "ok."]
    shown = [(2, 0)]  # this verdict needs the whole-vocabulary pass a few times
    requests = [judge_request(item, replies[a], replies[b], prompt, spec) for a, b in shown]

    model = EmbeddedModel("smollm2-135m-instruct-q4_1", n_ctx=4096)
    plain = Llama(**llama_settings(embedded_model_path(), 4096))  # as heart opens it
    rejected = 0
    for request in requests:
        ours = asyncio.run(model.complete(request)).text
        sampler = _load(embedded_model_path(), 4096).llama.grammar_greedy
        assert isinstance(sampler, GrammarGreedy)
        rejected += sampler.rejected
        theirs = plain.create_chat_completion(
            messages=[m.model_dump() for m in request.messages],
            max_tokens=request.max_tokens,
            temperature=0.0,
            response_format={"type": "json_object", "schema": request.json_schema},
        )["choices"][0]["message"]["content"]
        assert ours == theirs
    assert rejected > 0  # the whole-vocabulary pass was needed, and agreed too
    plain.close()
