"""The human consensus on one completion: more than half of its labellers; exactly half is a
disagreement."""

from __future__ import annotations

from heart.strategies import consensus


def test_more_than_half_is_consensus_and_exactly_half_a_disagreement() -> None:
    c = consensus("cp", {"r1": ["A", "B", "C"], "r2": ["A", "B"], "r3": ["A", "D"], "r4": ["B"]})
    assert c.labellers == 4
    assert c.strategies == ("A", "B")  # 3 and 3 of 4
    assert c.split == ()  # C and D: 1 of 4, under half
    c = consensus("cp", {"r1": ["A", "B"], "r2": ["A", "C"], "r3": ["A"], "r4": ["B", "C"]})
    assert c.strategies == ("A",) and c.split == ("B", "C") and c.disagreement


def test_two_labellers_agree_only_when_they_choose_the_same() -> None:
    assert consensus("cp", {"r1": ["A"], "r2": ["A"]}).strategies == ("A",)
    split = consensus("cp", {"r1": ["A", "B"], "r2": ["A"]})
    assert split.strategies == ("A",) and split.split == ("B",)
    assert not consensus("cp", {"r1": [], "r2": []}).disagreement


def test_three_labellers_never_split_and_one_decides_alone() -> None:
    c = consensus("cp", {"r1": ["A", "B"], "r2": ["A"], "r3": ["C"]})
    assert c.strategies == ("A",) and not c.disagreement
    assert consensus("cp", {"r1": ["B", "A"]}).strategies == ("A", "B")


def test_a_strategy_named_twice_by_one_labeller_counts_once() -> None:
    c = consensus("cp", {"r1": ["A", "A"], "r2": []})
    assert c.choices == {"r1": ("A",), "r2": ()}
    assert c.split == ("A",)
