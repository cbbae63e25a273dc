"""Failures are loud: a stage whose calls failed for good exits 1 with the failures by cause
(classified from the errors the real SDKs raise against a local fault server), their fix, and
the command that asks again for just those; `heart run` never judges while replies are missing,
and the Python API returns the same facts without printing or exiting."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heart import pipeline
from heart.models._errors import Cause
from heart.study import create_study, open_study

from .fakes.fault_server import FaultServer, last_user_text
from .helpers import heart, rewrite_study
from .servers import free_port

ENGINE = (
    "engine:\n  providers:\n"
    "    openai: {max_retries: 1, timeout_s: 1.0, backoff_base_s: 0.01, backoff_cap_s: 0.05}\n"
    "    anthropic: {max_retries: 1, timeout_s: 1.0, backoff_base_s: 0.01, backoff_cap_s: 0.05}\n"
    "ratings: {bootstrap_rounds: 50}\n"
)
KEY = {"HEART_TEST_KEY": "sk-test-key-for-the-fault-server"}


def _verdicts(body: dict[str, Any]) -> str:
    """Replies, and for a judge (asked for JSON) a valid verdict."""
    if "response_format" in body:
        axes = dict.fromkeys("HEART", "none")
        return json.dumps({"winner": "A", "strength": 2, "axes": axes, "rationale": "warmer"})
    return f"That sounds hard. {last_user_text(body).split()[-1]}"


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(_verdicts) as fault_server:
        yield fault_server


def _model(base_url: str, key: bool = True, provider: str = "openai", name: str = "fake") -> str:
    env = ", api_key_env: HEART_TEST_KEY" if key else ""
    return f"{{provider: {provider}, base_url: '{base_url}', model: {name}{env}}}"


def _system(name: str, family: str, model: str) -> str:
    return f"{{name: {name}, kind: model, family: {family}, model: {model}}}"


def _study(root: Path, systems: list[str], judge: str, items: int = 4, rest: str = "") -> Path:
    create_study(root, demo=True)
    rewrite_study(
        root,
        [*systems, "{name: esconv-original, kind: dataset, family: dataset}"],
        [f"{{name: judge, family: judges, model: {judge}}}"],
        ENGINE + rest,
        items=items,
    )
    return root


def _count(root: Path, table: str) -> int:
    with sqlite3.connect(root / "heart.db") as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_generate_with_every_call_failing_exits_1_by_cause_and_the_command_retries_just_those(
    server: FaultServer, tmp_path: Path
) -> None:
    """No API key for one system, a wrong URL for the other: every call fails."""
    wrong = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    root = _study(
        tmp_path / "s",
        [
            _system("no-key", "a", _model(server.openai_base_url)),
            _system("wrong-url", "b", _model(wrong, False, name="fake-b")),
        ],
        _model(server.openai_base_url),
        items=12,
    )
    heart("items", "build", "--study", root)
    failed = heart("generate", "--study", root, check=False)
    assert failed.returncode == 1, failed.stdout
    lines = failed.stdout.splitlines()
    assert "generate: 12 fixed replies stored, 0 completions already done, 24 model calls (0 " \
        "from cache, 24 failed)" in lines  # fmt: skip
    assert "24 completions failed for good (stored with their reason, never counted), by " \
        "cause:" in lines  # fmt: skip
    assert "  auth, 12 calls: check the API key in the variable the model's api_key_env names " \
        "(and that the key may use this model)" in lines  # fmt: skip
    assert f"    12 to openai fake at {server.openai_base_url}: the environment variable " \
        "HEART_TEST_KEY is not set; export your API key there (keys never go in study.yaml)" \
        in lines  # fmt: skip
    assert "  connection, 12 calls: check the model's base_url and that the server is up and " \
        "reachable" in lines  # fmt: skip
    assert any(line.startswith(f"    12 to openai fake-b at {wrong}: APIConnectionError")
               for line in lines)  # fmt: skip
    retry = f"heart generate --study {root}"
    assert f"Retry just these 24 calls (finished work is skipped): {retry}" in lines
    assert server.requests == []

    # fixed: the printed command asks again for exactly the 24 failed calls, and passes
    path = root / "study.yaml"
    path.write_text(path.read_text().replace(wrong, server.openai_base_url))
    again = heart(*retry.split()[1:], env=KEY)
    assert "24 model calls (0 from cache, 0 failed)" in again.stdout
    asked = len(server.requests)  # a try the busy machine timed out is asked once more
    assert len({(r.call_key, r.body["model"]) for r in server.requests}) == 24 and asked <= 48
    assert heart("generate", "--study", root, env=KEY).stdout.count("0 model calls") == 1
    assert len(server.requests) == asked


PLANS = {  # an item's fault plan (every try) → the cause its calls fail with
    "401": Cause.AUTH,
    "403": Cause.AUTH,
    "404": Cause.NOT_FOUND,
    "429:0": Cause.RATE_LIMIT,
    "hang": Cause.TIMEOUT,
    "drop": Cause.CONNECTION,
    "cut": Cause.CONNECTION,
    "503": Cause.SERVER,
    "malformed": Cause.SERVER,
    "422": Cause.BAD_REQUEST,
    "ok": None,
}


def test_causes_come_from_the_errors_both_sdks_raise(server: FaultServer, tmp_path: Path) -> None:
    root = _study(
        tmp_path / "s",
        [
            _system("oa", "a", _model(server.openai_base_url)),
            _system("an", "b", _model(server.anthropic_base_url, provider="anthropic")),
        ],
        _model(server.openai_base_url),
        items=len(PLANS),
    )
    with open_study(root) as study:
        pipeline.build_items(study)
        items = [item.context[-1].text for item in _items(study)]
        for text, plan in zip(items, PLANS, strict=True):
            server.set_plan(text, plan)
        with pytest.MonkeyPatch.context() as env:
            env.setenv("HEART_TEST_KEY", KEY["HEART_TEST_KEY"])
            summary = pipeline.generate(study).model_calls
    expected = Counter({c: 2 * n for c, n in Counter(PLANS.values()).items() if c is not None})
    assert summary.by_cause() == expected
    assert summary.failed == 2 * (len(PLANS) - 1) and not summary.complete
    by_model = Counter((f.provider, f.cause) for f in summary.failures)
    assert by_model[("openai", Cause.AUTH)] == by_model[("anthropic", Cause.AUTH)] == 2


def _items(study: Any) -> list[Any]:
    from heart.items import stored_items

    return sorted(stored_items(study.store), key=lambda item: item.id)


def test_invalid_verdicts_are_bad_output_and_the_printed_command_asks_only_for_them(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(
        tmp_path / "s",
        [_system("oa", "a", _model(server.openai_base_url))],
        _model(server.openai_base_url),
        rest="judging: {reasks: 0}\n",
    )
    heart("items", "build", "--study", root)
    heart("generate", "--study", root, env=KEY)
    server.default_plan = "prose"  # a judge that answers in prose: never a verdict
    before = len(server.requests)
    failed = heart("judge", "--study", root, env=KEY, check=False)
    assert failed.returncode == 1
    assert "4 verdicts failed for good (stored with their reason, never counted), by cause:" \
        in failed.stdout  # fmt: skip
    assert "  bad output, 4 calls: the answers did not pass the stage's checks" in failed.stdout
    assert f"    4 to openai fake at {server.openai_base_url}: invalid verdict after 1 ask" \
        in failed.stdout  # fmt: skip
    assert len(server.requests) - before == 4
    server.default_plan = "ok"
    again = heart("judge", "--study", root, env=KEY)
    assert "judge: 0 new pairs, 0 judgments already done, 4 model calls (0 from cache, 0 failed)" \
        in again.stdout  # fmt: skip
    assert len(server.requests) - before == 8


def test_run_stops_after_generate_and_never_judges_missing_replies(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(
        tmp_path / "s",
        [
            _system("good", "a", _model(server.openai_base_url)),
            _system("denied", "b", _model(server.anthropic_base_url, provider="anthropic")),
        ],
        _model(server.openai_base_url),
    )
    server.set_plan("Here is the conversation so far", "401")  # every reply request
    out = heart("run", "--study", root, env=KEY, check=False)
    assert out.returncode == 1
    assert "  auth, 8 calls: check the API key" in out.stdout
    assert f"Retry just these 8 calls (finished work is skipped): heart generate --study {root}" \
        in out.stdout  # fmt: skip
    assert "heart run stopped after generate: replies are missing, so judging did not start." \
        in out.stdout  # fmt: skip
    assert _count(root, "pairs") == 0 and _count(root, "judgments") == 0
    assert not (root / "report").exists()
    judge_calls = [r for r in server.requests if "response_format" in (r.body or {})]
    assert judge_calls == []

    server.reset()  # the key works again: the run goes on from where it stopped
    done = heart("run", "--study", root, env=KEY)
    assert "generate: 0 fixed replies stored, 4 completions already done, 8 model calls (0 " \
        "from cache, 0 failed)" \
        in done.stdout  # fmt: skip
    assert _count(root, "judgments") > 0 and (root / "report" / "index.html").is_file()


def test_the_python_api_returns_the_stop_and_the_causes(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(
        tmp_path / "s",
        [_system("oa", "a", _model(server.openai_base_url))],
        _model(server.openai_base_url),
    )
    server.default_plan = "404"
    with open_study(root) as study, pytest.MonkeyPatch.context() as env:
        env.setenv("HEART_TEST_KEY", KEY["HEART_TEST_KEY"])
        done = pipeline.run(study)
    assert done.stopped == "generate"
    assert done.judging is None and done.report is None and done.board is None
    assert done.generation is not None
    assert done.generation.model_calls.by_cause() == Counter({Cause.NOT_FOUND: 4})


def _failing_stage(root: Path, server: FaultServer, command: list[str]) -> str:
    server.default_plan = "401"
    out = heart(*command, "--study", root, env=KEY, check=False)
    assert out.returncode == 1, out.stdout
    assert f"(finished work is skipped): heart {' '.join(command)} --study {root}" in out.stdout
    return out.stdout


def test_strategies_adversarial_and_the_llm_coder_fail_loudly(
    server: FaultServer, tmp_path: Path
) -> None:
    model = _model(server.openai_base_url)
    root = _study(
        tmp_path / "s",
        [_system("oa", "a", model)],
        model,
        rest=f"strategies: {{classifier: {model}}}\nrationales: {{coder: {model}}}\n",
    )
    heart("items", "build", "--study", root)
    heart("generate", "--study", root, env=KEY)
    heart("judge", "--study", root, env=KEY)

    out = _failing_stage(root, server, ["strategies"])
    assert "8 classifications failed for good" in out and "  auth, 8 calls:" in out
    out = _failing_stage(root, server, ["rationales"])
    assert "4 codings failed for good" in out and "  auth, 4 calls:" in out

    path = root / "study.yaml"
    path.write_text(
        path.read_text().replace(
            "items: {esconv: esconv_demo.jsonl, regular: 4}",
            f"items: {{esconv: esconv_demo.jsonl, regular: 4, adversarial: 1, rewriter: {model}}}",
        )
    )
    out = _failing_stage(root, server, ["items", "adversarial"])
    assert "The adversarial items were not changed." in out and "  auth, 1 call:" in out
    assert _count(root, "rewrites") == 0


def test_a_reply_holding_a_refused_character_fails_with_its_reason_and_the_bundle_imports(
    tmp_path: Path,
) -> None:
    """A model reply with an invisible override is stored failed, naming the character, like any
    text from outside; so the study's own bundle still imports into a new folder."""

    def replies(body: dict[str, Any]) -> str:
        if "response_format" in body:
            return _verdicts(body)
        return "That sounds hard.\u202e Tell me more."

    with FaultServer(replies) as fault:
        root = _study(tmp_path / "s", [_system("oa", "a", _model(fault.openai_base_url))],
                      _model(fault.openai_base_url))  # fmt: skip
        heart("items", "build", "--study", root)
        failed = heart("generate", "--study", root, env=KEY, check=False)
    assert failed.returncode == 1 and "  bad output, 4 calls:" in failed.stdout
    with sqlite3.connect(root / "heart.db") as conn:
        rows = conn.execute(
            "SELECT status, text, error FROM completions WHERE system = 'oa'"
        ).fetchall()
    assert len(rows) == 4
    for status, text, error in rows:
        assert (status, text) == ("failed", "")
        assert "U+202E RIGHT-TO-LEFT OVERRIDE" in error and "at character 18" in error
    heart("export", tmp_path / "bundle", "--study", root)
    heart("import", tmp_path / "bundle", "--study", tmp_path / "copy")
    assert _count(tmp_path / "copy", "completions") == _count(root, "completions")
