"""`heart gate` on simulated studies in real SQLite stores: a known regression on one axis exits
1, no regression 0, too little data 2, and the JSON verdict carries the numbers behind it; one
conversation, one judge, an unreliable judge and imports in either order each give an honest
answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from heart.analyses import load_comparisons, run_gate
from heart.cli import app
from heart.errors import HeartError
from heart.release import import_table
from heart.stats import bonferroni_level, fit_bradley_terry, win_matrix
from heart.store import open_store

from .gate_study import SYSTEMS, rater_file, simulate, study_file, write_gate_study
from .helpers import heart

runner = CliRunner()


def _gate(root: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    out = root / "gate.json"
    done = runner.invoke(
        app,
        ["gate", "--study", str(root), "--candidate", "candidate", "--baseline", "baseline",
         "--json", str(out), *args],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    return done.exit_code, done.output, json.loads(out.read_text(encoding="utf-8"))


def _scopes(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["scope"]: s for s in verdict["scopes"]}


def test_a_regression_on_one_axis_exits_1_and_names_that_axis(tmp_path: Path) -> None:
    root = write_gate_study(tmp_path / "s", items=80, drop={"E": 250}, seed=1)
    code, out, verdict = _gate(root)
    assert code == 1 and verdict["exit_code"] == 1 and verdict["call"] == "worse"
    scopes = _scopes(verdict)
    assert list(scopes) == ["overall", *"HEART"]
    assert [name for name, s in scopes.items() if s["call"] == "worse"] == ["E"]
    assert scopes["E"]["high"] < -50 and scopes["E"]["difference"] < -150
    assert verdict["reason"] == "worse than the baseline by more than 50 Elo on: E"
    # evidence: 80 items in 40 conversations, 6 pairs an item, each judged by 2 judges
    assert (verdict["items"], verdict["conversations"], verdict["verdicts"]) == (80, 40, 960)
    e = scopes["E"]
    assert (e["verdicts"], e["candidate_verdicts"], e["baseline_verdicts"]) == (960, 480, 480)
    assert (e["head_to_head"], e["candidate_conversations"]) == (160, 40)
    assert e["judges"] == ["judge-1", "judge-2"]
    assert [(j["judge"], j["verdicts"], j["flagged"]) for j in verdict["judges"]] == [
        ("judge-1", 480, False), ("judge-2", 480, False),
    ]  # fmt: skip
    # 6 scopes tested: each end of an interval is a one-sided 1 - 0.05/6 bound
    assert verdict["tests"] == 6 and verdict["bound_level"] == pytest.approx(1 - 0.05 / 6)
    assert verdict["interval_level"] == pytest.approx(1 - 0.1 / 6)
    assert "WORSE (exit 1): worse than the baseline by more than 50 Elo on: E" in out
    title = "98.3% intervals (each end a 99.17% bound: 6 scopes tested, 95% in all)"
    assert title in " ".join(out.split())  # the table's title wraps at the console's width


def test_the_gap_is_the_fit_on_the_shared_items(tmp_path: Path) -> None:
    """The overall difference is a Bradley–Terry fit by hand on the same verdicts."""
    root = write_gate_study(tmp_path / "s", items=40, seed=2)
    _, _, verdict = _gate(root, "--axes", "E")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    comparisons = load_comparisons(store)
    store.close()
    winner, loser, tie = comparisons.winner_loser()
    k = len(comparisons.systems)
    fit = fit_bradley_terry(win_matrix(winner, loser, comparisons.strength, k, tie=tie))
    c, b = comparisons.systems.index("candidate"), comparisons.systems.index("baseline")
    by_hand = (fit.theta[c] - fit.theta[b]) * 400 / np.log(10)
    overall = _scopes(verdict)["overall"]
    assert overall["difference"] == pytest.approx(by_hand, abs=1e-6)
    assert overall["low"] < overall["difference"] < overall["high"]
    assert verdict["tests"] == 2 and list(_scopes(verdict)) == ["overall", "E"]
    assert verdict["bound_level"] == pytest.approx(bonferroni_level(0.95, 2))


def test_no_regression_exits_0(tmp_path: Path) -> None:
    root = write_gate_study(tmp_path / "s", items=160, seed=3)
    code, out, verdict = _gate(root, "--margin", "100")
    assert code == 0 and verdict["call"] == "not worse", out
    assert all(s["call"] == "not worse" and s["low"] > -100 for s in verdict["scopes"])
    assert verdict["reason"] == (
        "not worse than the baseline by more than 100 Elo on any scope tested"
    )
    # the same intervals at a margin they hold cannot tell
    code, out, verdict = _gate(root, "--margin", "0")
    assert code == 2 and verdict["call"] == "cannot tell"
    assert "holds −0: the verdicts neither show a regression" in out


def test_too_little_data_exits_2_and_says_why(tmp_path: Path) -> None:
    root = write_gate_study(tmp_path / "s", items=8, drop={"E": 400}, seed=4)
    code, out, verdict = _gate(root)
    assert code == 2 and verdict["call"] == "cannot tell"
    overall = _scopes(verdict)["overall"]
    assert overall["call"] == "cannot tell"
    assert "candidate: 4 conversations: an interval needs 5, so none is shown" in overall["reasons"]
    assert "candidate: 48 comparisons (fewer than 50)" in overall["reasons"]
    assert overall["low"] is None and overall["high"] is None
    assert "CANNOT TELL (exit 2)" in out


def test_one_conversation_cannot_tell(tmp_path: Path) -> None:
    root = write_gate_study(tmp_path / "s", items=2, drop={"E": 400}, seed=5)
    code, _, verdict = _gate(root)
    assert code == 2 and verdict["conversations"] == 1 and verdict["items"] == 2
    assert all(s["call"] == "cannot tell" for s in verdict["scopes"])
    reasons = _scopes(verdict)["E"]["reasons"]
    assert "candidate: 1 conversation: an interval needs 5, so none is shown" in reasons


def test_one_judge_is_enough_to_show_a_regression(tmp_path: Path) -> None:
    root = write_gate_study(tmp_path / "s", items=80, drop={"T": 300}, judges=["solo"], seed=6)
    code, _, verdict = _gate(root, "--axes", "T,E")
    assert code == 1 and [j["judge"] for j in verdict["judges"]] == ["solo"]
    assert [s["scope"] for s in verdict["scopes"] if s["call"] == "worse"] == ["T"]
    assert verdict["verdicts"] == 80 * 6


def test_an_unreliable_judge_makes_the_gate_cannot_tell(tmp_path: Path) -> None:
    root = write_gate_study(
        tmp_path / "s", items=80, drop={"E": 300}, first_shown=["judge-2"], seed=7
    )
    code, out, verdict = _gate(root)
    assert code == 2 and verdict["call"] == "cannot tell"
    assert [j["judge"] for j in verdict["judges"] if j["flagged"]] == ["judge-2"]
    assert verdict["problems"] == [
        "the audit flags judge-2 as unreliable (verdicts that follow the order of presentation): "
        "see `heart judges audit`"
    ]
    assert "judge-2 (480, FLAGGED)" in out


def _imported(root: Path, order: str) -> dict[str, Any]:
    """A study whose verdicts are people's, from two files imported in ``order``."""
    root.mkdir(parents=True)
    (root / "study.yaml").write_text(study_file([], 200), encoding="utf-8")
    files = [root.parent / f"{root.name}-{n}.csv" for n in (1, 2)]
    rater_file(files[0], ["r1", "r2"], items=30, seed=8)
    rater_file(files[1], ["r3"], items=30, seed=9)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    simulate(store, items=30, judges=[], seed=10)
    for n in order:
        import_table(store, files[int(n) - 1], "judgments", seed=0)
    store.close()
    code, _, verdict = _gate(root, "--judges", "human")
    verdict["exit"] = code
    return verdict


def test_imports_in_either_order_give_the_same_verdict(tmp_path: Path) -> None:
    one, two = _imported(tmp_path / "a", "12"), _imported(tmp_path / "b", "21")
    assert one == two
    assert one["verdicts"] == 30 * 6 * 3 and one["source"] == "human"
    # people judge no axis: the overall verdict alone is tested
    assert [s["scope"] for s in one["scopes"]] == ["overall"] and one["tests"] == 1
    assert one["notes"] == ["no verdict on the shared items judged the axes: overall only"]
    assert one["exit"] == one["exit_code"]


def test_a_candidate_not_judged_yet_cannot_tell(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    (root / "study.yaml").write_text(study_file(["judge-1"], 100), encoding="utf-8")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    simulate(store, items=20, judges=["judge-1"], seed=11)
    comparisons = load_comparisons(store)
    store.close()
    rest = comparisons.select(
        (comparisons.a != comparisons.systems.index("candidate"))
        & (comparisons.b != comparisons.systems.index("candidate"))
    )
    verdict = run_gate(rest, "candidate", "baseline")
    assert verdict.exit_code == 2 and verdict.scopes == []
    assert verdict.problems == (
        "the candidate candidate has no counted verdict from these judges yet: generate its "
        "replies and judge them first",
    )


def test_unknown_names_get_a_one_line_error(tmp_path: Path) -> None:
    root = write_gate_study(tmp_path / "s", items=4, seed=12)
    done = runner.invoke(
        app, ["gate", "--study", str(root), "--candidate", "cand", "--baseline", "baseline"]
    )
    assert isinstance(done.exception, HeartError)
    assert str(done.exception) == (
        f"--candidate 'cand': this study has no such system; it has: {', '.join(sorted(SYSTEMS))}"
    )
    done = runner.invoke(app, ["gate", "--study", str(root), "--candidate", "candidate",
                               "--baseline", "baseline", "--axes", "H,X"])  # fmt: skip
    assert str(done.exception) == "--axes H,X: X is not an axis; the axes are H,E,A,R,T"
    ran = heart("gate", "--study", root, "--candidate", "baseline", "--baseline", "baseline",
                check=False)  # fmt: skip
    assert ran.returncode == 2
    assert ran.stdout.strip().splitlines() == [
        "error: --candidate and --baseline are both 'baseline': name two systems"
    ]
