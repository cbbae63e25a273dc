"""Dry runs price every stage before its inputs exist: on a study with no items and no replies,
`heart run --dry-run` counts the calls each stage will make (checked against a real run), marks
the ones that read projected work as estimates, and says what it assumed; when the assumption
holds (every reply as long as its system's max_tokens), the estimate is what the same dry run
says once the replies exist."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heart import pipeline
from heart.projection import ASSUMED_WORD, assumed_text
from heart.strategies import load_taxonomy
from heart.study import create_study, open_study
from heart.types import sha256_hex

from .fakes.fault_server import FaultServer, last_user_text
from .helpers import heart, rewrite_study

STRATEGIES = load_taxonomy().names


def _kind(body: dict[str, Any]) -> str:
    """Which stage a request comes from, by the JSON schema it asks for."""
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema")
    if schema is None:
        return "generate"
    properties = schema["properties"]
    return (
        "judge"
        if "winner" in properties
        else "rationales"
        if "codes" in properties
        else ("strategies")
    )


def _answer(body: dict[str, Any]) -> str:
    """Every stage's answer, valid; a reply is as long as the stand-in a dry run assumes (its
    max_tokens), its first word telling the item apart."""
    kind = _kind(body)
    if kind == "generate":
        tag = sha256_hex(last_user_text(body))[: len(ASSUMED_WORD) - 1]
        return tag + assumed_text(body["max_tokens"])[len(tag) :]
    if kind == "judge":
        axes = dict.fromkeys("HEART", "none")
        return json.dumps({"winner": "A", "strength": 2, "axes": axes, "rationale": "warmer"})
    if kind == "strategies":
        absent = {"status": "absent", "probability": 0.0, "evidence": ""}
        return json.dumps(dict.fromkeys(STRATEGIES, absent))
    return json.dumps({"codes": []})


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(_answer, key_includes_model=True) as fault_server:
        yield fault_server


def _study(root: Path, server: FaultServer, *, more: tuple[str, ...] = ()) -> Path:
    """The demo study with two priced models, the original, a control and one judge (``more``:
    further model systems, by name), 3 items; a new study unless it exists."""
    if not (root / "study.yaml").exists():
        create_study(root, demo=True)

    def model(name: str, more: str = "") -> str:
        return f"{{provider: openai, base_url: '{server.openai_base_url}', model: {name}{more}}}"

    priced = ", price: {input_per_mtok: 1.0, output_per_mtok: 4.0}"
    ma, mb = model("ma", priced + ", max_tokens: 20"), model("mb", ", max_tokens: 30")
    rewrite_study(
        root,
        [
            f"{{name: sys-a, kind: model, family: a, model: {ma}}}",
            f"{{name: sys-b, kind: model, family: b, model: {mb}}}",
            "{name: esconv-original, kind: dataset, family: dataset}",
            "{name: warmth, kind: control, family: control, reply: That sounds so hard.}",
            *(f"{{name: {m}, kind: model, family: {m}, model: {model(m)}}}" for m in more),
        ],
        [f"{{name: judge, family: j, model: {model('mj', priced)}}}"],
        f"strategies: {{classifier: {model('mc')}}}\nrationales: {{coder: {model('mr')}}}\n"
        "ratings: {bootstrap_rounds: 50}\n",
        items=3,
    )
    return root


def _planned(plan: pipeline.DryRun) -> dict[str, tuple[int, int, int, float]]:
    """Per stage: new calls, of them estimated, tokens in, most cost."""
    return {
        s.stage: (
            sum(m.calls - m.cached for m in s.models),
            sum(m.estimated for m in s.models),
            sum(m.tokens_in for m in s.models),
            round(s.max_cost_usd, 9),
        )
        for s in plan.stages
    }


def test_a_dry_run_before_anything_exists_prices_every_stage_a_run_then_makes(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server)
    with open_study(root) as study:
        before = pipeline.dry_run(study)
    planned = _planned(before)
    # 3 items by the rules; 2 model systems; 4 systems make 6 pairs an item, each judged once;
    # 12 replies labelled; 18 rationales coded
    assert {stage: counts[:2] for stage, counts in planned.items()} == {
        "generate": (6, 0),  # the items the rules choose are the ones a build stores
        "judge": (18, 15),  # only the 3 pairs of the two fixed replies read no projected reply
        "strategies": (12, 6),
        "rationales": (18, 18),
    }
    assert before.notes == [
        "the 3 regular items are not built yet: the rules choose them now, as `heart items "
        "build` will",
        "6 replies are not generated yet: assumed each system's max_tokens long (sys-a 20, sys-b "
        "30 tokens)",
        "18 verdicts are not given yet: their rationales are assumed as long as each judge's "
        "max_tokens (an upper bound)",
    ]
    assert server.requests == []

    heart("run", "--study", root)  # the real run asks exactly what the dry run counted
    asked = Counter(_kind(r.body) for r in server.requests)
    assert asked == {stage: counts[0] for stage, counts in planned.items()}

    # once the replies exist (as long as assumed), judging's price is exact and the same
    for table in ("calls", "rationale_codes", "rationale_codings", "judgments", "pairs",
                  "strategy_classifications"):  # fmt: skip
        _delete(root, table)
    with open_study(root) as study:
        after = _planned(pipeline.dry_run(study, ("judge", "strategies")))
    assert after["judge"][:2] == (18, 0) and after["strategies"][:2] == (12, 0)
    assert after["judge"][2:] == planned["judge"][2:]  # the same tokens in, the same cost
    assert after["strategies"][2:] == planned["strategies"][2:]


def test_a_system_added_to_a_finished_study_costs_only_its_replies_and_pairs(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server)
    heart("run", "--study", root)
    with open_study(root) as study:
        done = _planned(pipeline.dry_run(study))
        before = _verdicts(study)
    assert {stage: counts[0] for stage, counts in done.items()} == dict.fromkeys(done, 0)

    _study(root, server, more=("sys-c",))
    with open_study(root) as study:
        added = _planned(pipeline.dry_run(study))
    # 3 items: 3 replies of sys-c; it meets the 4 other systems on each item: 12 pairs, each
    # judged once; its 3 replies labelled; the 12 new verdicts' rationales coded
    assert {stage: counts[0] for stage, counts in added.items()} == {
        "generate": 3, "judge": 12, "strategies": 3, "rationales": 12,
    }  # fmt: skip
    table = heart("run", "--dry-run", "--study", root).stdout.splitlines()
    row = next(line for line in table if " mj " in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    # only the new pairs are listed: 12 calls, none cached, all new, all reading a reply not
    # generated yet
    assert cells[2:7] == ["mj", "12", "0", "12", "12"]

    server.reset()
    heart("run", "--study", root)  # the real run asks just that
    asked = Counter(_kind(r.body) for r in server.requests)
    assert asked == {stage: counts[0] for stage, counts in added.items()}
    judged = [r for r in server.requests if _kind(r.body) == "judge"]
    with open_study(root) as study:
        after = _verdicts(study)
    assert {k: after[k] for k in before} == before  # old verdicts untouched
    assert len(after) == len(before) + 12 == len(judged) + len(before)


def _verdicts(study: Any) -> dict[str, tuple[str | None, str]]:
    from sqlalchemy import select

    from heart.store import JudgmentRow

    with study.store.session() as s:
        return {r.id: (r.winner, r.judge) for r in s.scalars(select(JudgmentRow))}


def _delete(root: Path, table: str) -> None:
    import sqlite3

    with sqlite3.connect(root / "heart.db") as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute(f"DELETE FROM {table}")


def test_the_judge_dry_run_says_which_calls_are_estimates_and_on_what_assumption(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server)
    heart("items", "build", "--study", root)
    out = heart("judge", "--dry-run", "--study", root).stdout
    lines = out.splitlines()
    row = next(line for line in lines if " mj " in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells[:7] == ["openai", server.openai_base_url, "mj", "18", "0", "18", "15"]
    assert "15 of these calls are estimates: they read work not done yet, so their tokens in " \
        "(and the pairs and samples they come from) are projected. Assumed:" in lines  # fmt: skip
    assert "  - 6 replies are not generated yet: assumed each system's max_tokens long (sys-a " \
        "20, sys-b 30 tokens)" in lines  # fmt: skip
    stated = heart("judge", "--dry-run", "--reply-tokens", "50", "--study", root).stdout
    assert "  - 6 replies are not generated yet: assumed the stated length long (sys-a 50, " \
        "sys-b 50 tokens)" in stated.splitlines()  # fmt: skip
    # the judge's price grows with the assumed reply length
    with open_study(root) as study:
        short = _planned(pipeline.dry_run(study, ("judge",), reply_tokens=10))["judge"]
        long = _planned(pipeline.dry_run(study, ("judge",), reply_tokens=100))["judge"]
    assert short[:2] == long[:2] == (18, 15)
    # per item, 5 of the 6 pairs read a stand-in reply, one of them two: 18 stand-ins in all,
    # each 90 tokens longer
    assert long[2] - short[2] == 18 * 90
    assert server.requests == []
