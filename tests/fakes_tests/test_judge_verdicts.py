"""The fake judge: a valid verdict from the replies a judge request shows, the same for the same
prompt in either wire format, and served by the fault server's process form."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from heart.config import JudgeSpec, ModelSpec
from heart.judging import judge_request, parse_verdict
from heart.prompts import load_prompt
from heart.types import Item, Role, Turn
from tests.fakes.judge_verdicts import shown_replies, verdict, verdict_reply

openai = pytest.importorskip("openai")

REPO = Path(__file__).resolve().parents[2]


def _turn(role: Role, text: str) -> Turn:
    return Turn(role=role, text=text, parts=(text,))


ITEM = Item(
    id="i1", content_hash="h", conversation_id="c1", turn_index=2,
    context=(_turn(Role.SEEKER, "I failed my exam."),
             _turn(Role.SUPPORTER, "That must hurt."),
             _turn(Role.SEEKER, "My parents will be so angry.")),
    reference="Tell me more.", problem_type="academic pressure", emotion_type="anxiety",
)  # fmt: skip
FIRST = "I'm sorry. Exams can feel like everything. What worries you most about telling them?"
SECOND = "That sounds frightening. You are more than one grade."


def _request_bodies() -> tuple[dict[str, object], dict[str, object]]:
    """One heart judge request as an OpenAI body and as an Anthropic body whose user message is
    split into a cache-marked head and the replies."""
    spec = JudgeSpec(name="j", family="x", model=ModelSpec(provider="openai", model="judge-m"))
    request = judge_request(ITEM, FIRST, SECOND, load_prompt("judge-heart", "v2"), spec)
    system, user = (m.content for m in request.messages)
    cut = request.shared_chars
    openai_body = {
        "model": "judge-m",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    }
    mark = {"type": "ephemeral", "ttl": "5m"}
    anthropic_body = {
        "model": "judge-m",
        "system": [{"type": "text", "text": system, "cache_control": mark}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": user[:cut], "cache_control": mark},
                    {"type": "text", "text": user[cut:]},
                ],
            }
        ],
    }
    return openai_body, anthropic_body


def test_the_verdict_is_valid_and_the_same_in_both_formats() -> None:
    openai_body, anthropic_body = _request_bodies()
    assert shown_replies(openai_body) == (FIRST, SECOND)
    text = verdict_reply(openai_body)
    assert verdict_reply(anthropic_body) == text
    parsed = parse_verdict(text)
    given = json.loads(text)
    assert (parsed.winner, parsed.strength, parsed.rationale) == (
        given["winner"], given["strength"], given["rationale"],
    )  # fmt: skip
    assert json.loads(text) == verdict("judge-m", FIRST, SECOND)
    assert len(parsed.rationale) <= 160 and parsed.rationale.endswith(".")


def test_the_verdict_follows_the_replies_and_the_model() -> None:
    verdicts = {
        (model, a, b): verdict(model, a, b)
        for model in ("m1", "m2", "m3", "m4")
        for a, b in ((FIRST, SECOND), (SECOND, FIRST), (FIRST, "Hm."), ("Hm.", SECOND))
    }
    for (_, a, b), given in verdicts.items():
        parse_verdict(json.dumps(given))  # every one valid
        flipped = verdicts.get((_, b, a))
        if flipped is not None:  # the same two replies swapped: the same reply wins
            assert (given["winner"] == "A") == (flipped["winner"] == "B")
    assert len({json.dumps(v, sort_keys=True) for v in verdicts.values()}) > 4


def test_a_request_without_replies_is_refused() -> None:
    with pytest.raises(ValueError, match="Reply A"):
        verdict_reply({"model": "m", "messages": [{"role": "user", "content": "hello"}]})


def test_the_process_form_answers_with_the_named_reply_fn() -> None:
    cmd = [
        sys.executable, "-m", "tests.fakes.fault_server", "--port", "0", "--print-port",
        "--reply-fn", "tests.fakes.judge_verdicts:verdict_reply", "--default-plan", "hang:0.01",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    openai_body, _ = _request_bodies()
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=5
        )
        answer = client.chat.completions.create(model="judge-m", messages=openai_body["messages"])
        client.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert answer.choices[0].message.content == verdict_reply(openai_body)


@pytest.mark.parametrize(
    ("target", "problem"),
    [("tests.fakes.judge_verdicts", "expected MODULE:NAME"),
     ("tests.fakes.judge_verdicts:nothing", "has no function nothing")],
)  # fmt: skip
def test_a_reply_fn_that_cannot_be_found_is_named(target: str, problem: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.fakes.fault_server", "--reply-fn", target],
        cwd=REPO, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode != 0
    assert problem in done.stderr and "Traceback" not in done.stderr
