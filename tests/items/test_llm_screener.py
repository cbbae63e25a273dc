"""The optional LLM screener: a second pass that vetoes couplets, recorded with its reason,
cached so rebuilds ask nothing and choose the same items."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ..fakes.fault_server import FaultServer, last_user_text
from ..helpers import heart

VETO_WORD = "roommate"  # appears in some demo conversations' contexts


def _verdict(request: dict[str, Any]) -> str:
    text = last_user_text(request)
    if VETO_WORD in text.lower():
        return json.dumps({"keep": False, "reason": f"mentions a {VETO_WORD}"})
    return json.dumps({"keep": True, "reason": "clear distress, open to several replies"})


def _study(root: Path, server: FaultServer) -> Path:
    heart("init", root, "--demo")
    path = root / "study.yaml"
    text = path.read_text().replace(
        "  min_context_turns: 3\n",
        "  min_context_turns: 3\n"
        "  screener:\n"
        "    provider: openai\n"
        f"    base_url: {server.openai_base_url}\n"
        "    model: screener-fake\n",
    )
    path.write_text(text)
    return root


def _table(root: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(root / "heart.db") as conn:
        return conn.execute(sql).fetchall()


def test_screener_vetoes_are_recorded_and_cached(tmp_path: Path) -> None:
    with FaultServer(reply_fn=_verdict) as server:
        root = _study(tmp_path / "s", server)
        out = heart("items", "build", "--study", root).stdout
        asked = len(server.requests)
        assert asked > 0 and "llm_screen" in out

        vetoed = _table(root, "SELECT conversation_id, turn_index, detail FROM screening "
                              "WHERE rule = 'llm_screen'")  # fmt: skip
        assert vetoed and all(d == f"screener: mentions a {VETO_WORD}" for *_, d in vetoed)
        contexts = [json.loads(c) for (c,) in _table(root, "SELECT context FROM items")]
        for context in contexts:
            assert VETO_WORD not in " ".join(t["text"] for t in context).lower()
        assert len(contexts) == 12
        # every rule-eligible couplet was asked once; a rebuild asks nothing and changes nothing
        items = _table(root, "SELECT id, content_hash FROM items ORDER BY id")
        again = heart("items", "build", "--study", root).stdout
        assert "unchanged" in again and len(server.requests) == asked
        assert _table(root, "SELECT id, content_hash FROM items ORDER BY id") == items


def test_screener_failures_stop_the_build_and_keep_the_items(tmp_path: Path) -> None:
    with FaultServer(reply_fn=_verdict) as server:
        root = _study(tmp_path / "s", server)
        server.default_plan = "400"
        result = heart("items", "build", "--study", root, check=False)
        assert result.returncode == 1
        assert "The items were not changed: 0 regular and 0 adversarial items." in result.stdout
        assert "  bad request, " in result.stdout
        assert f"(finished work is skipped): heart items build --study {root}" in result.stdout
        assert _table(root, "SELECT count(*) FROM items") == [(0,)]
        server.default_plan = "ok"
        heart("items", "build", "--study", root)
        assert _table(root, "SELECT count(*) FROM items") == [(12,)]
