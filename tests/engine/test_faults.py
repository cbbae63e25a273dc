"""Generation through a fault-injecting server speaking the OpenAI and Anthropic wire formats:
every call ends stored or failed with its reason, nothing crashes, reruns finish the rest once."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..fakes.fault_server import FaultServer
from ..helpers import heart, set_items

KEYS = {
    "HEART_TEST_OPENAI_KEY": "sk-test-0penai-s3cret-value-123",
    "HEART_TEST_ANTHROPIC_KEY": "sk-ant-test-s3cret-value-456",
}
# one fault plan per item; the last entry of a plan repeats
PLANS = [
    "429:0.05, ok",
    "500, 429, ok",
    "503, 502, ok",
    "hang, ok",
    "cut, ok",
    "malformed, ok",
    "drop, reset, ok",
    "400",
]


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(key_includes_model=True) as fault_server:
        yield fault_server


def _study(root: Path, server: FaultServer) -> Path:
    heart("init", root, "--demo")
    set_items(root, len(PLANS))
    text = (root / "study.yaml").read_text()
    head = text.split("systems:\n", 1)[0]
    engine = "{concurrency: 4, max_retries: 3, timeout_s: 1.0, backoff_base_s: 0.01}"
    (root / "study.yaml").write_text(
        head
        + f"""systems:
  - name: remote-openai
    kind: model
    family: openai
    model:
      provider: openai
      base_url: {server.openai_base_url}
      model: gpt-fake
      api_key_env: HEART_TEST_OPENAI_KEY
      price: {{input_per_mtok: 2.0, output_per_mtok: 8.0}}
  - name: remote-anthropic
    kind: model
    family: anthropic
    model:
      provider: anthropic
      base_url: {server.anthropic_base_url}
      model: claude-fake
      api_key_env: HEART_TEST_ANTHROPIC_KEY
  - name: esconv-original
    kind: dataset
    family: dataset
engine:
  providers:
    openai: {engine}
    anthropic: {engine}
"""
    )
    heart("items", "build", "--study", root)
    return root


def _completions(root: Path) -> list[tuple[str, str, str, str | None]]:
    with sqlite3.connect(root / "heart.db") as conn:
        return conn.execute(
            "SELECT item_id, system, status, error FROM completions ORDER BY item_id, system"
        ).fetchall()


def _last_seeker_turn(root: Path, item_id: str) -> str:
    with sqlite3.connect(root / "heart.db") as conn:
        (context,) = conn.execute("SELECT context FROM items WHERE id = ?", (item_id,)).fetchone()
    return str(json.loads(context)[-1]["text"])


def _plan_items(root: Path, server: FaultServer) -> dict[str, str]:
    """Give each item its own fault plan, keyed by its last seeker turn."""
    with sqlite3.connect(root / "heart.db") as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM items ORDER BY id")]
    for item_id, plan in zip(ids, PLANS, strict=True):
        server.set_plan(_last_seeker_turn(root, item_id), plan)
    return dict(zip(ids, PLANS, strict=True))


def test_faults_end_stored_or_failed_and_reruns_finish(server: FaultServer, tmp_path: Path) -> None:
    root = _study(tmp_path / "s", server)
    plans = _plan_items(root, server)
    first = heart("generate", "--study", root, env=KEYS, check=False)
    assert "Traceback" not in first.stderr
    assert first.returncode == 1  # calls that failed for good make the stage fail
    assert "16 model calls (0 from cache, 2 failed)" in first.stdout
    lines = first.stdout.splitlines()
    assert (
        "2 completions failed for good (stored with their reason, never counted), by "
        "cause:" in lines
    )
    assert any(line.startswith("  bad request, 2 calls: the server refused") for line in lines)
    assert any(line.startswith(f"    1 to openai gpt-fake at {server.openai_base_url}: HTTP 400")
               for line in lines)  # fmt: skip
    assert (
        f"Retry just these 2 calls (finished work is skipped): heart generate --study {root}"
        in lines
    )

    rows = _completions(root)
    assert len(rows) == 3 * len(PLANS)  # one row per item and system, never two
    for item_id, system, status, error in rows:
        if system == "esconv-original":
            continue
        if plans[item_id] == "400":
            assert status == "failed"
            assert error is not None and "HTTP 400" in error
        else:
            assert status == "ok", (plans[item_id], system, error)
    # the server's own faults were retried until they passed; a client error was asked once
    faults = {str(r.fault).split(":")[0] for r in server.requests if r.fault is not None}
    assert faults >= {"429", "500", "503", "502", "hang", "cut", "malformed", "drop", "400"}
    for item_id, plan in plans.items():
        last = _last_seeker_turn(root, item_id)
        expected = 1 if plan == "400" else len(plan.split(","))
        assert server.attempts(last) == 2 * expected, plan  # two systems

    # the failed calls succeed on the next run; only they are asked again
    for item_id, plan in plans.items():
        if plan == "400":
            server.set_plan(_last_seeker_turn(root, item_id), "ok")
    before = len(server.requests)
    second = heart("generate", "--study", root, env=KEYS)
    assert "2 model calls (0 from cache, 0 failed)" in second.stdout
    assert len(server.requests) - before == 2
    assert all(status == "ok" for _, _, status, _ in _completions(root))
    assert len(_completions(root)) == 3 * len(PLANS)

    before = len(server.requests)
    third = heart("generate", "--study", root, env=KEYS)
    assert "0 model calls" in third.stdout
    assert len(server.requests) == before

    # API keys reach the server, and nowhere else: not the store, not the output
    sent = {
        r.headers.get("authorization", "") + r.headers.get("x-api-key", "") for r in server.requests
    }
    assert any(KEYS["HEART_TEST_OPENAI_KEY"] in h for h in sent)
    stored = b"".join(p.read_bytes() for p in root.iterdir() if p.name.startswith("heart.db"))
    for key in KEYS.values():
        assert key.encode() not in stored
        for run in (first, second, third):
            assert key not in run.stdout and key not in run.stderr


def test_missing_key_fails_the_call_with_a_clear_reason(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server)
    result = heart(
        "generate", "--study", root, env={"HEART_TEST_ANTHROPIC_KEY": "x" * 12}, check=False
    )
    assert "Traceback" not in result.stderr
    assert result.returncode == 1
    assert "  auth, 8 calls: check the API key" in result.stdout
    rows = [r for r in _completions(root) if r[1] == "remote-openai"]
    assert {status for _, _, status, _ in rows} == {"failed"}
    assert all("HEART_TEST_OPENAI_KEY is not set" in (error or "") for *_, error in rows)
    assert not [r for r in server.requests if r.path.endswith("/chat/completions")]


def _set_budget(root: Path, usd: float) -> None:
    path = root / "study.yaml"
    lines = [ln for ln in path.read_text().splitlines() if "budget_usd" not in ln]
    text = "\n".join(lines).replace("engine:", f"engine:\n  budget_usd: {usd}", 1)
    path.write_text(text + "\n")


def test_dry_run_calls_nothing_and_prices_the_work(server: FaultServer, tmp_path: Path) -> None:
    root = _study(tmp_path / "s", server)
    out = heart("generate", "--dry-run", "--study", root, env=KEYS).stdout
    assert "generate: what a run would call (8 fixed replies to store)" in out
    base = f"http://127.0.0.1:{server.port}"
    for provider, endpoint, model in (
        ("openai", f"{base}/v1", "gpt-fake"),
        ("anthropic", base, "claude-fake"),
    ):
        # 8 regular items and the demo's 2 adversarial ones, not built yet (estimates): 10
        # calls, none cached, 10 new, 2 estimated, at the endpoint the system names
        cells = rf"{provider}|{re.escape(endpoint)}|{model}|10|0|10|2|".replace("|", r"\s*│\s*")
        assert re.search(cells, out), out
    assert "  - 2 adversarial items are not built yet: priced on their source conversations' " \
        "turns (the rewrites, and which are kept, are estimates)" in out  # fmt: skip
    assert server.requests == []
    with sqlite3.connect(root / "heart.db") as conn:
        assert conn.execute("SELECT count(*) FROM completions").fetchone() == (0,)


def test_budget_stops_cleanly_and_a_rerun_finishes(server: FaultServer, tmp_path: Path) -> None:
    root = _study(tmp_path / "s", server)
    path = root / "study.yaml"
    path.write_text(
        path.read_text().replace(
            "price: {input_per_mtok: 2.0, output_per_mtok: 8.0}",
            "price: {input_per_mtok: 1000.0, output_per_mtok: 1000.0}",
        )
    )
    _set_budget(root, 1.0)
    first = heart("generate", "--study", root, env=KEYS, check=False)
    assert "Budget reached:" in first.stdout and "Traceback" not in first.stderr
    assert first.returncode == 1  # the stage did not finish
    assert f"(finished work is skipped): heart generate --study {root}" in first.stdout
    with sqlite3.connect(root / "heart.db") as conn:
        stored, spent = conn.execute(
            "SELECT count(*), sum(cost_usd) FROM completions WHERE system = 'remote-openai'"
        ).fetchone()
    assert 0 < stored < 8
    assert spent <= 1.0
    _set_budget(root, 1000.0)
    second = heart("generate", "--study", root, env=KEYS)
    assert "Budget reached" not in second.stdout
    assert len(_completions(root)) == 3 * len(PLANS)
    assert all(status == "ok" for _, _, status, _ in _completions(root))
