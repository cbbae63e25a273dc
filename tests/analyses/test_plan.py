"""`heart plan`: sizes that follow the target, pilots too small to resample, imports in either
order, and the command's numbers for scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heart.analyses import PlanTarget, Prices, assumed_pilot, load_comparisons, plan_study
from heart.store import Store

from ..helpers import heart
from ..rows import Verdict, seed_verdicts

PRICES = Prices(0.001, 30.0, False, 12.0, "£")


def test_halving_the_half_width_needs_about_four_times_the_conversations() -> None:
    pilot = assumed_pilot(4, 60.0, 0.8, conversations=120)
    wide = plan_study(pilot, PlanTarget(half_width=60), PRICES, studies=100)
    narrow = plan_study(pilot, PlanTarget(half_width=30), PRICES, studies=100)
    assert wide.conversations and narrow.conversations
    assert narrow.conversations / wide.conversations == pytest.approx(4.0, rel=0.35)
    assert wide.judge_verdicts == wide.conversations * 6  # one judge on the 6 pairs of each
    assert wide.judge_usd == pytest.approx(wide.judge_verdicts * 0.001)
    assert wide.rater_hours == pytest.approx(wide.people_verdicts * 30 / 3600)
    assert wide.people_verdicts_assisted is not None
    assert wide.people_verdicts_assisted <= wide.people_verdicts


def test_a_pilot_of_one_conversation_is_too_small_to_resample(store: Store) -> None:
    verdicts = [Verdict(0, "s1", "s2", "g", "a"), Verdict(0, "s2", "s3", "g", "b"),
                Verdict(0, "s1", "s2", "h", "a")]  # fmt: skip
    seed_verdicts(store, verdicts, sources={"h": "human"})
    found = plan_study(load_comparisons(store, source="all"), PlanTarget(gap=50), PRICES)
    assert found.conversations is None and found.people_verdicts is None
    assert "the LLM judges' verdicts come from one conversation: too few to resample" in (
        " ".join(found.notes)
    )
    assert found.have == {"conversations": 1, "items": 1, "judge_verdicts": 2, "people_verdicts": 1}


def test_plan_command_from_assumptions_and_its_json(tmp_path: Path) -> None:
    root = tmp_path / "study"
    heart("init", root, "--demo")
    out = root / "plan.json"
    shown = heart("plan", "--study", root, "--systems", "3", "--half-width", "80", "--json", out)
    assert "simulated from assumptions (3 systems" in shown.stdout
    numbers = json.loads(out.read_text(encoding="utf-8"))
    for key in ("items", "judge_verdicts", "people_verdicts", "people_verdicts_assisted", "usd",
                "rater_hours"):  # fmt: skip
        assert key in numbers
    assert numbers["basis"] == "assumptions" and numbers["items"] > 0
    assert numbers["have"]["judge_verdicts"] == 0
    missing = heart("plan", "--study", root, check=False)
    assert missing.returncode == 2
    assert "a plan needs one target" in missing.stdout and "Traceback" not in missing.stderr
