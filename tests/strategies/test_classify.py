"""The strategy classifier stage against a local server that answers scripted labels: valid
answers stored, invalid ones asked again then stored failed, a sample spread over systems, a
killed run resumed without asking twice, and classifications carried by bundles."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heart import pipeline
from heart.strategies import classifier_id, load_taxonomy
from heart.strategies.classify import InvalidClassification, parse_classification
from heart.study import create_study, open_study

from ..fakes.fault_server import FaultServer, conversation
from ..helpers import heart, rewrite_study

TAXONOMY = load_taxonomy()
REPLIES = {  # each control system's fixed reply, and how the classifier answers on it
    "valid": "I hear you. What happened next?",
    "elsewhere": "That sounds hard.",
    "prose": "You matter to me.",
    "broken": "Let's plan the week together.",
}
ITEMS = 3
SYSTEMS = len(REPLIES) + 1  # the controls and the ESConv original


def _labels(reply: str, evidence: str | None = None) -> dict[str, Any]:
    out = {
        name: {"status": "absent", "probability": 0.1, "evidence": ""} for name in TAXONOMY.names
    }
    out["Clarification"] = {
        "status": "present",
        "probability": 0.9,
        "evidence": evidence if evidence is not None else reply.split()[-1],
    }
    return out  # fmt: skip


def _reply_of(body: dict[str, Any]) -> str:
    """The reply a classifier call asks about."""
    first_user = next(text for role, text in conversation(body) if role == "user")
    return first_user.split("The reply to label:\n", 1)[1].split("\n\nLabel the reply", 1)[0]


def _answer(body: dict[str, Any]) -> str:
    """The classifier's answer, by the reply it is asked to label."""
    reply = _reply_of(body)
    if reply == REPLIES["elsewhere"]:
        return json.dumps(_labels(reply, "words from somewhere else"))
    if reply == REPLIES["prose"]:
        return "This reply affirms the person."
    if reply == REPLIES["broken"]:
        return '{"Affirmation": {"status": "pres'
    return json.dumps(_labels(reply))


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(_answer) as fault_server:
        yield fault_server


def _study(root: Path, server: FaultServer, completions: str = "null") -> Path:
    create_study(root, demo=True)
    model = f"{{provider: openai, base_url: '{server.openai_base_url}', model: local}}"
    rewrite_study(
        root,
        [
            *(
                f'{{name: {k}, kind: control, family: {k}, reply: "{r}"}}'
                for k, r in REPLIES.items()
            ),
            "{name: esconv-original, kind: dataset, family: dataset}",
        ],
        rest=f"strategies: {{classifier: {model}, completions: {completions}}}\n"
        "engine: {providers: {openai: {concurrency: 1}}}\n",
        items=ITEMS,
    )
    with open_study(root) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
    return root


def _rows(root: Path) -> list[tuple[str, str, str, str | None]]:
    with sqlite3.connect(root / "heart.db") as conn:
        return conn.execute(
            "SELECT c.text, s.status, s.labels, s.error FROM strategy_classifications s "
            "JOIN completions c ON c.id = s.completion_id ORDER BY c.id"
        ).fetchall()


def test_the_evidence_must_be_words_of_the_reply() -> None:
    reply = "I hear you.  What happened NEXT?"
    labels = parse_classification(json.dumps(_labels(reply, "what happened next")), reply, TAXONOMY)
    assert labels["Clarification"]["status"] == "present"  # case and spacing aside
    for bad, why in (
        (_labels(reply, "what happened later"), "is not words of the reply"),
        (_labels(reply, ""), "is present but quotes no evidence"),
        (
            {k: v for k, v in _labels(reply).items() if k != "Offer Hope"},
            r"missing \['Offer Hope'\]",
        ),
    ):
        with pytest.raises(InvalidClassification, match=why):
            parse_classification(json.dumps(bad), reply, TAXONOMY)


def test_valid_labels_are_stored_and_invalid_ones_asked_again_then_failed(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    root = _study(tmp_path / "s", server)
    with open_study(root) as study:
        plan = pipeline.dry_run(study, ("strategies",)).stages[0]
        summary = pipeline.classify_strategies(study)
    assert plan.models[0].calls == summary.plan.sampled == ITEMS * SYSTEMS
    rows = _rows(root)
    by_reply = {text: (status, error) for text, status, _, error in rows}
    assert by_reply[REPLIES["valid"]][0] == "ok"
    errors = {k: by_reply[REPLIES[k]][1] or "" for k in ("elsewhere", "prose", "broken")}
    assert "is not words of the reply" in errors["elsewhere"]
    assert "not JSON" in errors["prose"] and "not JSON" in errors["broken"]
    assert all("after 2 asks" in e for e in errors.values())
    ok = [json.loads(labels) for _, status, labels, _ in rows if status == "ok"]
    assert len(ok) == 2 * ITEMS  # the valid reply and the ESConv originals
    assert all(set(labels) == set(TAXONOMY.names) for labels in ok)
    assert {labels["Clarification"]["status"] for labels in ok} == {"present"}
    # a rerun asks again only what failed
    asked = len(server.requests)
    with open_study(root) as study:
        again = pipeline.classify_strategies(study)
    assert again.plan.already_done == sum(1 for _, s, _, _ in rows if s == "ok")
    assert len(server.requests) - asked == 2 * again.model_calls.failed


def test_a_sample_spreads_over_systems_and_stays_as_the_study_grows(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    root = _study(tmp_path / "s", server, completions="6")
    with open_study(root) as study:
        first = pipeline.classify_strategies(study)
        classifier = first.plan.classifier
        assert classifier == classifier_id(study.config.strategies.classifier)  # type: ignore[arg-type]
    with sqlite3.connect(root / "heart.db") as conn:
        systems = Counter(
            system for (system,) in conn.execute(
                "SELECT c.system FROM strategy_classifications s JOIN completions c "
                "ON c.id = s.completion_id"
            )
        )  # fmt: skip
        sampled = set(conn.execute("SELECT completion_id FROM strategy_classifications"))
    assert max(systems.values()) - min(systems.values()) <= 1 and sum(systems.values()) == 6
    with open_study(root) as study:
        again = pipeline.classify_strategies(study)
    with sqlite3.connect(root / "heart.db") as conn:
        assert set(conn.execute("SELECT completion_id FROM strategy_classifications")) == sampled
    assert again.plan.sampled == 6


def test_a_killed_run_resumes_without_asking_twice(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    root = _study(tmp_path / "s", server)
    server.reset(plans=False)
    server.default_plan = "hang:0.15"
    env = {**os.environ, "OPENAI_API_KEY": "sk-local"}
    process = subprocess.Popen(
        [sys.executable, "-m", "heart", "strategies", "--study", str(root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while len(_rows(root)) < 4:
        assert process.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    rerun = heart("strategies", "--study", root, env={"OPENAI_API_KEY": "sk-local"}, check=False)
    assert rerun.returncode == 1 and "  bad output, " in rerun.stdout  # by design, some fail
    assert len(_rows(root)) == ITEMS * SYSTEMS
    # the replies whose labels were usable were asked for once each, but for at most the calls
    # in flight or waiting for their write at the kill
    usable = [text for text, status, _, _ in _rows(root) if status == "ok"]
    asked = [_reply_of(r.body) for r in server.requests]
    assert len(usable) == 2 * ITEMS
    assert len(usable) <= sum(reply in usable for reply in asked) <= len(usable) + 2


def test_a_bundle_carries_classifications_and_labels(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    root = _study(tmp_path / "s", server, completions="3")
    labels = tmp_path / "labels.csv"
    with open_study(root) as study:
        pipeline.classify_strategies(study)
        with sqlite3.connect(root / "heart.db") as conn:
            (cid,) = conn.execute("SELECT id FROM completions ORDER BY id LIMIT 1").fetchone()
        labels.write_text(
            "completion_id,rater,strategies\n"
            f"{cid},r1,Clarification; Emotional Validation\n{cid},r2,\n"
        )
        assert pipeline.import_into(root, labels, "labels").added == {
            "raters.jsonl": 2, "strategy_labels.jsonl": 2
        }  # fmt: skip
        rows = pipeline.export(study, tmp_path / "bundle")
    assert rows["strategy_classifications.jsonl"] == 3 and rows["strategy_labels.jsonl"] == 2
    summary = pipeline.import_into(tmp_path / "copy", tmp_path / "bundle")
    assert summary.added["strategy_classifications.jsonl"] == 3
    assert summary.added["strategy_labels.jsonl"] == 2
