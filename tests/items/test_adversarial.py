"""Adversarial items: profiles, the choice of conversations, the checks of a rewrite, and the
whole stage against a local server that answers scripted rewrites and hostility ratings."""

from __future__ import annotations

import json
import os
import re
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
from heart.corpus import load_corpus
from heart.items._profiles import Profile, assign_profiles, targets
from heart.items._rewrite_rules import (
    Source,
    rating_problems,
    select_sources,
    structure_problems,
    window,
)
from heart.study import create_study, open_study
from heart.types import Conversation, Role, Turn

from ..fakes.fault_server import FaultServer, conversation, last_user_text
from ..helpers import heart

DEMO = Path(__file__).resolve().parents[2] / "src" / "heart" / "demo" / "esconv_demo.jsonl"


def test_profiles_reach_ten_each_in_its_own_way() -> None:
    assert targets(Profile.ALWAYS_10, 4) == [10, 10, 10, 10]
    assert targets(Profile.LINEAR_RAMP, 5) == [2, 4, 6, 8, 10]
    assert targets(Profile.MID_SPIKE, 4) == [2, 2, 10, 10]
    assert targets(Profile.MID_RAMP, 5) == [2, 2, 5, 7, 10]
    assert targets(Profile.MID_RAMP, 4) == [2, 2, 6, 10]
    assert all(targets(p, 1) == [10] for p in Profile)
    assert Counter(assign_profiles(20)) == dict.fromkeys(Profile, 5)


def _conversation(roles: str, first: str = "Hello, how are you?") -> Conversation:
    turns = []
    for n, r in enumerate(roles):
        role = Role.SUPPORTER if r == "s" else Role.SEEKER
        text = first if n == roles.index("s") else f"{role.value} turn {n}"
        turns.append(Turn(role=role, text=text, parts=(text,)))
    return Conversation(id="c", problem_type="p", emotion_type="e", turns=tuple(turns))


def test_a_window_opens_on_the_greeting_and_ends_on_an_answered_seeker_turn() -> None:
    assert window(_conversation("ksksksks"), 10) == (1, 7)
    assert window(_conversation("sksksksks"), 10) == (0, 8)
    assert window(_conversation("sksksksks"), 5) == (0, 4)
    assert window(_conversation("sksk"), 10) is None  # the last seeker turn has no answer
    assert window(_conversation("sksksk", first="Tell me what is wrong."), 10) is None


def _source(roles: str = "sksksk") -> Source:
    conv = _conversation(roles + "s")
    return Source(conv, 0, len(roles), Profile.LINEAR_RAMP, (2, 6, 10))


def _answer(source: Source, **change: str) -> list[tuple[str, str]]:
    out = []
    for n, turn in enumerate(source.turns):
        text = change.get(f"t{n}", turn.text if turn.role is Role.SUPPORTER else f"angry {n}")
        out.append((turn.role.value, text))
    return out


def test_each_broken_rewrite_is_named() -> None:
    source = _source()
    assert structure_problems(source, _answer(source)) == []
    reasons = {
        "supporter_changed": _answer(source, t2="a different supporter turn"),
        "broken_alternation": _answer(source, t1="no.\nSupporter: fine then."),
        "empty_seeker_turn": _answer(source, t3="  "),
    }
    for reason, answer in reasons.items():
        assert [p.reason for p in structure_problems(source, answer)] == [reason]
    short = _answer(source)[:2]
    assert {p.reason for p in structure_problems(source, short)} == {
        "too_few_turns", "supporter_changed", "seeker_count_changed"
    }  # fmt: skip
    swapped = [(("seeker" if s == "supporter" else "supporter"), t) for s, t in _answer(source)]
    assert "no_greeting" in {p.reason for p in structure_problems(source, swapped)}
    unsafe = _answer(source, t5="call me at 555-123-4567, I give up")
    assert [p.reason for p in structure_problems(source, unsafe)] == ["unsafe:identifying_info"]
    assert rating_problems(source, [2, 6, 10], tolerance=2) == []
    assert [p.reason for p in rating_problems(source, [2, 6, 7], 2)] == [
        "mild_ending", "off_target"
    ]  # fmt: skip
    assert [str(p) for p in rating_problems(source, [5, 6, 9], 2)] == [
        "off_target: turn 1: 5 for 2"
    ]


def _shuffled(conversations: list[Conversation]) -> list[Conversation]:
    return sorted(conversations, key=lambda c: c.id[::-1])


def test_the_choice_of_conversations_is_seeded_stratified_and_order_free() -> None:
    corpus = load_corpus(DEMO).conversations
    chosen = select_sources(corpus, 7, seed=3, max_turns=6)
    again = select_sources(_shuffled(list(corpus)), 7, seed=3, max_turns=6)
    assert [s.key for s in chosen] == [s.key for s in again]
    assert [s.key for s in chosen] != [s.key for s in select_sources(corpus, 7, 4, 6)]
    shares = Counter(c.problem_type for c in corpus)  # 14 conversations: 7 asked for is half
    picked = Counter(s.conversation.problem_type for s in chosen)
    assert all(abs(picked[problem] - n / 2) < 1 for problem, n in shares.items())
    assert all(s.turns[0].role is Role.SUPPORTER and len(s.turns) >= 4 for s in chosen)


def test_on_real_esconv_twenty_conversations_follow_the_corpus_shares(
    esconv_splits: Path,
) -> None:
    corpus = load_corpus(esconv_splits).conversations
    chosen = select_sources(corpus, 20, seed=0, max_turns=10)
    assert [s.key for s in chosen] == [
        s.key for s in select_sources(_shuffled(list(corpus)), 20, seed=0, max_turns=10)
    ]
    assert len(chosen) == 20 and Counter(s.profile for s in chosen) == dict.fromkeys(Profile, 5)
    shares = Counter(c.problem_type for c in corpus)
    picked = Counter(s.conversation.problem_type for s in chosen)
    for problem, n in shares.items():
        assert abs(picked[problem] - 20 * n / len(corpus)) < 1.0 + 1e-9, problem
    assert all(4 <= len(s.turns) <= 10 and s.turns[-1].role is Role.SEEKER for s in chosen)


# --- the stage, against scripted answers -------------------------------------------------

LEVEL = re.compile(r"\[level (\d+)\]")
SCENARIOS = [
    "valid",
    "alternation-then-valid",
    "supporter-changed",
    "too-few-turns",
    "mild-ending",
    "off-target",
    "not-json",
]


def _chat(user: str) -> list[tuple[str, str, int | None]]:
    """(speaker, text, target) of the numbered chat lines of a rewrite request."""
    out = []
    for line in user.splitlines():
        found = re.match(r"\d+\. (Supporter|Seeker)(?: \(target hostility (\d+)\))?: (.*)", line)
        if found:
            speaker, target, text = found.groups()
            out.append((speaker.lower(), text, int(target) if target else None))
    return out


class Script:
    """Answers rewrites by scenario (chosen per conversation by its situation) and rates each
    rewritten seeker turn by the level the rewrite wrote into it."""

    def __init__(self, situations: dict[str, str]) -> None:
        self.situations = situations

    def __call__(self, body: dict[str, Any]) -> str:
        system = conversation(body)[0][1]
        if system.startswith("You rate how hostile"):
            user = last_user_text(body)
            levels = [int(n) for n in LEVEL.findall(user)]  # an original turn is calm: 1
            return json.dumps({"hostility": levels or [1] * user.count("Seeker turn")})
        first_user = next(text for role, text in conversation(body) if role == "user")
        situation = first_user.splitlines()[0].removeprefix("Situation: ")
        scenario = self.situations[situation]
        retried = sum(role == "assistant" for role, _ in conversation(body))
        return self.rewrite(scenario, _chat(first_user), retried)

    def rewrite(self, scenario: str, chat: list[tuple[str, str, int | None]], retried: int) -> str:
        if scenario == "not-json":
            return "Here is the rewrite: the seeker is angry."
        turns = {}
        last = max(n for n, (_, _, target) in enumerate(chat, 1) if target is not None)
        for n, (speaker, text, target) in enumerate(chat, 1):
            if target is not None:
                level = target
                if scenario == "mild-ending" and n == last:
                    level = 5
                elif scenario == "off-target" and n != last:  # earlier turns off by 5
                    level = target - 5 if target >= 5 else target + 5
                text = f"You are not listening to me. [level {level}]"
            elif scenario == "supporter-changed" and n == 3:
                text = "I have changed what the supporter said."
            if scenario == "alternation-then-valid" and not retried and n == 2:
                speaker = "supporter"
            turns[f"turn_{n}"] = {"speaker": speaker, "text": text}
        if scenario == "too-few-turns":
            turns = {k: v for k, v in turns.items() if k in ("turn_1", "turn_2")}
        return json.dumps(turns)


def _adversarial_study(root: Path, server: FaultServer, n: int, retries: int = 1) -> Path:
    create_study(root, demo=True)
    model = f"{{provider: openai, base_url: '{server.openai_base_url}', model: local}}"
    head = (root / "study.yaml").read_text().split("items:\n", 1)[0]
    (root / "study.yaml").write_text(
        head + "items:\n  esconv: esconv_demo.jsonl\n  regular: 12\n"
        f"  adversarial: {n}\n  adversarial_max_turns: 6\n  rewrite_retries: {retries}\n"
        f"  rewriter: {model}\n"
        f"systems:\n  - {{name: model-a, kind: model, family: a, model: {model}}}\n"
        "  - {name: esconv-original, kind: dataset, family: dataset}\n"
        "  - {name: warm, kind: control, family: control, reply: 'That sounds so hard.'}\n"
        f"judges:\n  - {{name: judge, family: j, model: {model}}}\n"
    )
    return root


def _chosen(root: Path) -> list[Source]:
    """The conversations the stage chooses for this study, in its order."""
    with open_study(root) as study:
        items = study.config.items
        return select_sources(
            load_corpus(study.esconv_path()).conversations,
            items.adversarial,
            study.config.seed,
            items.adversarial_max_turns,
        )


def _scenarios(root: Path) -> dict[str, str]:
    """Each chosen conversation's situation → its scenario."""
    return {s.conversation.situation: SCENARIOS[k] for k, s in enumerate(_chosen(root))}


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FaultServer]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    with FaultServer() as server:
        root = _adversarial_study(tmp_path / "study", server, len(SCENARIOS))
        script = Script(_scenarios(root))
        server.reply_fn = lambda body: (
            script(body) if "hostil" in json.dumps(body)[:4000] else _verdict_or_reply(body)
        )
        yield root, server


def _verdict_or_reply(body: dict[str, Any]) -> str:
    if "response_format" in body:
        axes = dict.fromkeys("HEART", "none")
        return json.dumps({"winner": "A", "strength": 1, "axes": axes, "rationale": "ok"})
    return "That sounds really hard, and you have every right to be upset."


def _rewrites(root: Path) -> dict[str, tuple[str, list[str], int]]:
    with sqlite3.connect(root / "heart.db") as conn:
        rows = conn.execute("SELECT id, status, reasons, attempts FROM rewrites").fetchall()
    return {key: (status, json.loads(reasons), tries) for key, status, reasons, tries in rows}


def test_valid_rewrites_are_kept_and_each_invalid_kind_is_retried_then_rejected(
    scripted: tuple[Path, FaultServer],
) -> None:
    root, server = scripted
    with open_study(root) as study:
        summary = pipeline.build_adversarial(study)
    assert summary.sources == len(SCENARIOS) and summary.kept == 2
    by_scenario = dict(zip(SCENARIOS, _rewrites(root).values(), strict=False))
    outcome = {
        key: (status, [r.split(":")[0] for r in reasons], tries)
        for key, (status, reasons, tries) in _rewrites(root).items()
    }
    expected = {
        "valid": ("kept", [], 1),
        "alternation-then-valid": ("kept", [], 2),
        "supporter-changed": ("rejected", ["supporter_changed"], 2),
        "too-few-turns": (
            "rejected",
            ["too_few_turns", "supporter_changed", "seeker_count_changed"],
            2,
        ),
        "mild-ending": ("rejected", ["mild_ending", "off_target"], 2),
        "off-target": ("rejected", ["off_target"], 2),
        "not-json": ("rejected", ["not_json"], 2),
    }
    chosen = _chosen_keys(root)
    assert {chosen[key]: value for key, value in outcome.items()} == expected
    assert len(by_scenario) == len(SCENARIOS)
    # the retry carried the reasons back to the rewriter
    retries = [
        r for r in server.requests if "cannot be used: broken_alternation" in json.dumps(r.body)
    ]
    assert len(retries) == 1

    with open_study(root) as study:
        pipeline.generate(study)
        pipeline.judge(study)
    with sqlite3.connect(root / "heart.db") as conn:
        items = dict(conn.execute("SELECT id, subset FROM items"))
        adversarial = {i for i, subset in items.items() if subset == "adversarial"}
        kept = {i for (i,) in conn.execute("SELECT item_id FROM rewrites WHERE status='kept'")}
        used = {i for (i,) in conn.execute("SELECT DISTINCT item_id FROM completions")}
        original = {
            i for (i,) in conn.execute(
                "SELECT item_id FROM completions WHERE system = 'esconv-original'"
            )
        }  # fmt: skip
        paired = {i for (i,) in conn.execute("SELECT DISTINCT item_id FROM pairs")}
        meta = json.loads(
            conn.execute("SELECT meta FROM items WHERE subset='adversarial'").fetchone()[0]
        )
    assert adversarial == kept and len(kept) == 2
    assert adversarial <= used and adversarial <= paired  # generated and judged like any item
    assert not adversarial & original  # ESConv's reply answered the calm seeker
    assert set(meta) >= {"profile", "targets", "ratings", "source_conversation", "calls"}
    assert meta["ratings"] == meta["targets"]


def _chosen_keys(root: Path) -> dict[str, str]:
    """Each chosen conversation's rewrite key → its scenario."""
    return {s.key: SCENARIOS[k] for k, s in enumerate(_chosen(root))}


def test_a_rebuild_asks_nothing_and_a_dry_run_counts_first_tries(
    scripted: tuple[Path, FaultServer],
) -> None:
    root, server = scripted
    with open_study(root) as study:
        (stage,) = pipeline.dry_run(study, ("adversarial",)).stages
        assert [(m.calls, m.cached) for m in stage.models] == [(len(SCENARIOS), 0)]
        pipeline.build_adversarial(study)
        asked = len(server.requests)
        again = pipeline.build_adversarial(study)
    assert len(server.requests) == asked and again.model_calls.cached == again.model_calls.calls
    assert not again.changed and again.kept == 2


def test_a_killed_build_resumes_without_asking_anything_twice(
    scripted: tuple[Path, FaultServer], tmp_path: Path
) -> None:
    root, server = scripted
    server.default_plan = "hang:0.15"  # every answer takes a moment, one at a time
    (root / "study.yaml").write_text(
        (root / "study.yaml").read_text() + "engine: {providers: {openai: {concurrency: 1}}}\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "heart", "items", "adversarial", "--study", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENAI_API_KEY": "sk-local"},
    )
    deadline = time.monotonic() + 120
    while len([r for r in server.requests if r.end is not None]) < 4:
        assert process.poll() is None, "the build finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    heart("items", "adversarial", "--study", root, env={"OPENAI_API_KEY": "sk-local"})
    outcome = {key: status for key, (status, _, _) in _rewrites(root).items()}
    assert Counter(outcome.values()) == {"kept": 2, "rejected": 5}
    asked = Counter(r.call_key for r in server.requests)
    # asked again: at most the call in flight at the kill and one answer still waiting for its
    # write (results are written every 0.1 s; each answer here takes 0.15 s)
    assert sum(n > 1 for n in asked.values()) <= 2
