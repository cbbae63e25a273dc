"""The five-axis profile and the weighted composite: per-axis Elo and intervals, and the
composite against a weighted sum worked out by hand and against a bootstrap loop written out
round by round."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from heart.analyses import Board, build_boards, build_leaderboard, load_comparisons
from heart.stats import fit_bradley_terry
from heart.store import Store

from ..rows import Verdict, seed_verdicts

ELO_SCALE = 400 / math.log(10)
SYSTEMS = ["m1", "m2", "m3"]


def _axes(**sides: tuple[str, int]) -> dict[str, dict[str, object]]:
    return {axis: {"winner": w, "strength": s} for axis, (w, s) in sides.items()}


def test_composite_of_two_systems_is_the_weighted_sum_of_their_axis_fits(store: Store) -> None:
    """Six conversations: on H m1 wins four verdicts of strength 3 and m2 two of strength 1
    (m1 ahead by ln 6); on E m1 wins one of strength 1 and m2 five of strength 1 (m2 ahead by
    ln 5); A, R, T have no clear advantage (ties)."""
    verdicts = []
    for i in range(6):
        h = ("a", 3) if i < 4 else ("b", 1)
        e = ("a", 1) if i == 0 else ("b", 1)
        axes = _axes(H=h, E=e, A=("none", 0), R=("none", 0), T=("none", 0))
        verdicts.append(Verdict(i, "m1", "m2", "g", "a", 2, axes=axes))
    seed_verdicts(store, verdicts)
    board = build_leaderboard(
        load_comparisons(store), rounds=200, seed=1, weights={"H": 0.25, "E": 0.75}
    )
    m1 = next(s for s in board.standings if s.system == "m1")
    h_elo = 1500 + ELO_SCALE * math.log(6) / 2
    e_elo = 1500 - ELO_SCALE * math.log(5) / 2
    assert m1.axis_elo["H"] == pytest.approx(h_elo)
    assert m1.axis_elo["E"] == pytest.approx(e_elo)
    assert m1.axis_elo["A"] == pytest.approx(1500)
    assert m1.composite_elo == pytest.approx(0.25 * h_elo + 0.75 * e_elo)
    # centred on 1500 like every axis: the two composites sum to 3000
    m2 = next(s for s in board.standings if s.system == "m2")
    assert m1.composite_elo + m2.composite_elo == pytest.approx(3000)
    # the evidence behind each axis: six verdicts from six conversations, an interval each
    assert m1.axis_comparisons == dict.fromkeys("HEART", 6)
    assert m1.axis_conversations == dict.fromkeys("HEART", 6)
    assert m1.axis_low["H"] < h_elo < m1.axis_high["H"]
    assert m1.composite_low < m1.composite_elo < m1.composite_high
    assert board.weights == {"H": 0.25, "E": 0.75}
    assert board.axis_judges == dict.fromkeys("HEART", ("g",))
    # 6 verdicts, fewer than 10 conversations: preliminary on every axis, but with intervals
    assert board.axis_preliminary(m1, "H") == (
        "6 conversations (fewer than 10)", "6 comparisons (fewer than 50)",
    )  # fmt: skip


def _correlated_verdicts() -> list[Verdict]:
    """Nine conversations, each comparing every two of three systems once. The judge's H and E
    verdicts mostly move together (a reply that wins on warmth tends to sound human too), so the
    axes' bootstrap rounds are correlated; T varies on its own."""
    rng = np.random.default_rng(7)
    strength = {"m1": 0.8, "m2": 0.0, "m3": -0.5}
    out = []
    for i in range(9):
        for x in range(3):
            for y in range(x + 1, 3):
                a, b = SYSTEMS[x], SYSTEMS[y]
                p = 1 / (1 + math.exp(strength[b] - strength[a]))
                shared = "a" if rng.random() < p else "b"
                e = shared if rng.random() < 0.8 else ("b" if shared == "a" else "a")
                t = "a" if rng.random() < 0.5 else "b"
                axes = _axes(
                    H=(shared, int(rng.integers(1, 4))), E=(e, int(rng.integers(1, 4))),
                    A=("none", 0), R=("none", 0), T=(t, 1),
                )  # fmt: skip
                out.append(Verdict(i, a, b, "g", shared, 2, axes=axes))
    return out


def _axis_wins(verdicts: list[Verdict], axis: str, counts: np.ndarray) -> np.ndarray:
    """The axis's strength-weighted win matrix with conversation i counted counts[i] times."""
    wins = np.zeros((3, 3))
    for v in verdicts:
        side = v.axes[axis]
        a, b = SYSTEMS.index(v.a), SYSTEMS.index(v.b)
        weight = counts[v.item] * max(int(side["strength"]), 1)
        if side["winner"] == "a":
            wins[a, b] += weight
        elif side["winner"] == "b":
            wins[b, a] += weight
        else:
            wins[a, b] += counts[v.item] / 2
            wins[b, a] += counts[v.item] / 2
    return wins


def test_composite_interval_equals_a_bootstrap_loop_over_the_same_conversations(
    store: Store,
) -> None:
    verdicts = _correlated_verdicts()
    seed_verdicts(store, verdicts)
    weights = {"H": 0.5, "E": 0.3, "T": 0.2}
    rounds, seed, conversations = 300, 4, 9
    board = build_leaderboard(load_comparisons(store), rounds=rounds, seed=seed, weights=weights)
    # the loop: draw the conversations of each round (PCG64 seeded as documented), refit each
    # weighted axis on them, centre on 1500, and sum the axes with their weights in that round
    rng = np.random.Generator(np.random.PCG64(seed))
    draws = rng.multinomial(conversations, np.full(conversations, 1 / conversations), rounds)
    composite = np.zeros((rounds, 3))
    for r in range(rounds):
        for axis, w in weights.items():
            theta = fit_bradley_terry(_axis_wins(verdicts, axis, draws[r])).theta
            composite[r] += w * (ELO_SCALE * (theta - theta.mean()) + 1500)
    low, high = np.percentile(composite, [2.5, 97.5], axis=0)
    point = np.zeros(3)
    for axis, w in weights.items():
        point += w * fit_bradley_terry(_axis_wins(verdicts, axis, np.ones(9))).elo
    widen = math.sqrt(9 / 8) * student_t.ppf(0.975, 8) / norm.ppf(0.975)
    for i, name in enumerate(SYSTEMS):
        s = next(s for s in board.standings if s.system == name)
        assert s.composite_elo == pytest.approx(point[i])
        assert s.composite_low == pytest.approx(point[i] - widen * (point[i] - low[i]), abs=1e-6)
        assert s.composite_high == pytest.approx(point[i] + widen * (high[i] - point[i]), abs=1e-6)
    # the correlation counts: summing the axes' own intervals as if independent would differ
    m1 = next(s for s in board.standings if s.system == "m1")
    assert m1.composite_high - m1.composite_low != pytest.approx(
        math.sqrt(sum((w * (m1.axis_high[a] - m1.axis_low[a])) ** 2 for a, w in weights.items())),
        rel=0.02,
    )


def test_an_axis_without_verdicts_leaves_the_composite_empty_and_the_others_whole(
    store: Store,
) -> None:
    """Verdicts that judged only H (an imported judgment file gives no axes at all): the
    profile has H and says no data elsewhere; a composite weighing E has no value."""
    verdicts = [
        Verdict(i, "m1", "m2", "g", "a", 2, axes=_axes(H=("a" if i % 3 else "b", 1)))
        for i in range(6)
    ]
    seed_verdicts(store, verdicts)
    board = build_leaderboard(load_comparisons(store), rounds=100, weights={"H": 0.5, "E": 0.5})
    m1 = board.standings[0]
    assert m1.axis_comparisons == {"H": 6, "E": 0, "A": 0, "R": 0, "T": 0}
    assert math.isfinite(m1.axis_low["H"]) and math.isnan(m1.axis_elo["E"])
    assert math.isnan(m1.axis_low["E"]) and math.isnan(m1.composite_elo)
    assert math.isnan(m1.composite_low)
    assert board.axis_judges["E"] == ()
    only_h = build_leaderboard(load_comparisons(store), rounds=100, weights={"H": 1.0})
    assert only_h.standings[0].composite_elo == pytest.approx(only_h.standings[0].axis_elo["H"])
    assert only_h.standings[0].composite_low == pytest.approx(only_h.standings[0].axis_low["H"])


def test_the_main_board_bootstraps_its_axes_and_others_only_when_asked(store: Store) -> None:
    verdicts = _correlated_verdicts()
    people = [Verdict(v.item, v.a, v.b, "person", v.winner, 2, axes=v.axes) for v in verdicts]
    seed_verdicts(store, [*verdicts, *people], sources={"person": "human"})
    comparisons = load_comparisons(store, source="all")

    def h_interval(boards: list[Board]) -> dict[str, bool]:
        m1 = {
            b.source: next(s for s in b.leaderboard.standings if s.system == "m1") for b in boards
        }
        return {source: math.isfinite(s.axis_low["H"]) for source, s in m1.items()}

    main = build_boards(comparisons, rounds=50)
    assert [b.source for b in main] == ["llm", "human", "all"]
    assert h_interval(main) == {"llm": True, "human": False, "all": False}
    assert h_interval(build_boards(comparisons, rounds=50, axis_intervals="every")) == {
        "llm": True, "human": True, "all": True,
    }  # fmt: skip
    assert not any(h_interval(build_boards(comparisons, rounds=50, axis_intervals="none")).values())
    # the Elo per axis is there on every board either way
    assert all(math.isfinite(s.axis_elo["H"]) for b in main for s in b.leaderboard.standings)
