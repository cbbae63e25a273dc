"""Regular against adversarial items: Elo on each subset by hand, the shift's interval from the
same conversation draws, the order change, and the hostility report from the rewrites table."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from heart.analyses import (
    adversarial_report,
    compare_subsets,
    load_comparisons,
    per_conversation_wins,
)
from heart.stats import bootstrap_by_conversation, fit_bradley_terry, percentile_interval
from heart.store import ConversationRow, RewriteRow, Store

from ..rows import Verdict, seed_verdicts

REGULAR = range(0, 8)
ADVERSARIAL = range(8, 12)


def _verdicts() -> list[Verdict]:
    """m1 beats m2 and m3 on regular items; on adversarial items m3 wins everything but one;
    the original (ds) appears on regular items only."""
    out = []
    for i in REGULAR:
        out += [Verdict(i, "m1", "m2", "g", "a", 2), Verdict(i, "m1", "m3", "g", "a", 1)]
        out += [
            Verdict(i, "m2", "m3", "g", "a" if i % 3 else "b"),
            Verdict(i, "ds", "m3", "g", "b"),
        ]
    for i in ADVERSARIAL:
        out += [Verdict(i, "m3", "m1", "g", "a", 3), Verdict(i, "m3", "m2", "g", "a")]
        out += [Verdict(i, "m1", "m2", "g", "a" if i != 8 else "b")]
    return out


def _elo(comparisons, systems: list[str]) -> np.ndarray:  # type: ignore[no-untyped-def]
    fit = fit_bradley_terry(per_conversation_wins(comparisons).sum(axis=0)).elo
    place = [comparisons.systems.index(s) for s in systems]
    return fit[place] - fit[place].mean() + 1500


def test_each_subset_is_fitted_alone_and_the_shift_uses_the_same_draws(store: Store) -> None:
    seed_verdicts(store, _verdicts(), adversarial=ADVERSARIAL)
    comparisons = load_comparisons(store, source="all")
    result = compare_subsets(comparisons, "llm", rounds=300, seed=5, level=0.9)
    assert result is not None
    common = ["m1", "m2", "m3"]
    regular, adversarial = comparisons.by_subset("regular"), comparisons.by_subset("adversarial")
    by_hand = {"regular": _elo(regular, common), "adversarial": _elo(adversarial, common)}
    shifts = {s.system: s for s in result.shifts}
    for k, system in enumerate(common):
        assert shifts[system].regular == pytest.approx(by_hand["regular"][k], abs=1e-6)
        assert shifts[system].adversarial == pytest.approx(by_hand["adversarial"][k], abs=1e-6)
    assert result.only_regular == ["ds"]
    # the interval: each subset's bootstrap on the study's 12 conversations, the same seed
    conversations = sorted(set(regular.conversations) | set(adversarial.conversations))
    draws = []
    for sub in (regular, adversarial):
        wins = np.zeros((len(conversations), len(sub.systems), len(sub.systems)))
        wins[[conversations.index(c) for c in sub.conversations]] = per_conversation_wins(sub)
        elo = bootstrap_by_conversation(wins, rounds=300, seed=5, level=0.9).elo_rounds
        place = [sub.systems.index(s) for s in common]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # rounds that drew no such item
            draws.append(elo[:, place] - np.nanmean(elo[:, place], axis=1, keepdims=True))
    low, high = percentile_interval(draws[1] - draws[0], 0.9)
    for k, system in enumerate(common):
        assert (shifts[system].low, shifts[system].high) == pytest.approx((low[k], high[k]))
    assert shifts["m3"].shift > 0 > shifts["m1"].shift and shifts["m3"].low > 0
    assert (shifts["m1"].rank_regular, shifts["m3"].rank_adversarial) == (1, 1)
    assert result.order_changes and result.kendall_tau < 0


def test_no_comparison_without_both_subsets(store: Store) -> None:
    seed_verdicts(store, [v for v in _verdicts() if v.item in REGULAR])
    assert compare_subsets(load_comparisons(store), "llm", rounds=50) is None


def _rewrite(key: str, status: str, targets: list[int], ratings: list[int], originals: list[int],
             profile: str = "linear-ramp") -> RewriteRow:  # fmt: skip
    return RewriteRow(
        id=key, conversation_id="c1", start=0, end=6, profile=profile, targets=targets,
        status=status, attempts=1, reasons=[] if status == "kept" else ["off_target: turn 1"],
        turns=[], ratings=ratings, source_ratings=originals,
        item_id="i-x" if status == "kept" else None, calls=[], created_at="x",
    )  # fmt: skip


def _with_rewrites(store: Store, rows: list[RewriteRow]) -> None:
    with store.session() as s:
        s.add(ConversationRow(id="c1", problem_type="p", emotion_type="e", turns=[]))
        s.flush()
        s.add_all(rows)


def test_a_rater_that_tracks_the_targets_and_tells_calm_from_hostile_passes(
    store: Store,
) -> None:
    _with_rewrites(
        store,
        [
            _rewrite("a", "kept", [2, 6, 10], [3, 6, 9], [1, 1, 2]),
            _rewrite("b", "kept", [10, 10, 10], [9, 10, 10], [2, 1, 1], "always-10"),
            _rewrite("c", "rejected", [2, 2, 10], [2, 6, 10], [0, 1, 1], "mid-spike"),
        ],
    )
    report = adversarial_report(store, tolerance=2)
    assert report is not None and report.rewritten == 3 and len(report.kept) == 2
    check = report.rater
    assert check.turns == 9 and check.mean_error == pytest.approx(7 / 9)
    assert check.rewritten_mean == pytest.approx(65 / 9) and check.original_mean == pytest.approx(
        10 / 9
    )
    assert not check.flagged
    assert [p.rejected for p in report.profiles if p.profile == "mid-spike"] == [{"off_target": 1}]


def test_a_rater_that_counts_up_whatever_it_reads_is_flagged(store: Store) -> None:
    _with_rewrites(
        store,
        [_rewrite(k, "rejected", [10, 10, 10], [1, 2, 3], [1, 2, 3]) for k in "abc"],
    )
    report = adversarial_report(store, tolerance=2)
    assert report is not None and report.rater.flagged
    assert any("no higher than the calm originals" in p for p in report.rater.problems)
    assert any("miss the targets by 8.0" in p for p in report.rater.problems)
