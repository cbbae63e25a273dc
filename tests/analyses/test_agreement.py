"""Agreement analyses on hand-built votes: every share counted by hand, κ against statsmodels,
α against the krippendorff package, stability against refits by hand."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from heart.analyses import (
    AgreementReport,
    Comparisons,
    analyse_agreement,
    load_comparisons,
    rater_alpha,
)
from heart.stats import conversation_draws, fit_bradley_terry, win_matrix
from heart.store import Store

from ..rows import Verdict, seed_verdicts

HUMANS = ["h1", "h2", "h3", "h4", "h5"]
LLMS = ["g1", "g2", "g3"]
PAIRS = [("s1", "s2"), ("s2", "s3"), ("s1", "s3"), ("s3", "s1"), ("s2", "s1"), ("s3", "s2")]
# per pair (item i): the five human votes and the three LLM votes, "t" for a tie
HUMAN_VOTES = ["aaaab", "aaabb", "bbbbb", "aabbt", "attab", "bbbba"]
LLM_VOTES = ["aab", "bba", "bbb", "aba", "aaa", "aba"]
Built = tuple[AgreementReport, Comparisons]
STRENGTH = {"h1": 2, "h2": 1, "h3": 2, "h4": 1, "h5": 2}


def _verdicts() -> list[Verdict]:
    out = []
    for i, (a, b) in enumerate(PAIRS):
        for judge, vote in zip(HUMANS, HUMAN_VOTES[i], strict=True):
            winner = {"a": "a", "b": "b", "t": "tie"}[vote]
            out.append(Verdict(i, a, b, judge, winner, STRENGTH[judge]))
        for judge, vote in zip(LLMS, LLM_VOTES[i], strict=True):
            out.append(Verdict(i, a, b, judge, vote, 3))
    return out


@pytest.fixture
def report_and_comparisons(store: Store) -> tuple[AgreementReport, Comparisons]:
    seed_verdicts(store, _verdicts(), sources={h: "human" for h in HUMANS})
    comparisons = load_comparisons(store, source="all")
    return analyse_agreement(comparisons, rounds=200, seed=1), comparisons


def test_human_llm_agreement_counts_pairs_with_both_majorities(
    report_and_comparisons: Built,
) -> None:
    report, _ = report_and_comparisons
    # pair 3 has no human majority (2 a, 2 b); the other five are compared: 0, 2, 4 agree
    assert (report.human_llm.hits, report.human_llm.n) == (3, 5)
    # pairs 1 (3 of 5) and 4 (2 of 5) are ambiguous; 0, 2, 5 clear
    assert (report.ambiguous.hits, report.ambiguous.n) == (1, 2)
    assert (report.clear.hits, report.clear.n) == (2, 3)
    per_judge = {j: (r.hits, r.n) for j, r in report.judge_vs_humans.items()}
    assert per_judge == {"g1": (3, 5), "g2": (4, 5), "g3": (3, 5)}
    for rate in (report.human_llm, report.ambiguous, report.clear):
        assert rate.low <= rate.value <= rate.high


def test_inter_human_agreement_is_each_rater_against_the_others(
    report_and_comparisons: Built,
) -> None:
    report, _ = report_and_comparisons
    # by pair: 4/5, 0/2, 5/5, 0/4, 0/1, 4/5 (ties abstain; no majority of the others: skipped)
    assert (report.inter_human.hits, report.inter_human.n) == (13, 22)
    assert 0.0 <= report.inter_human.low <= 13 / 22 <= report.inter_human.high <= 1.0


def test_judges_agree_pairwise_and_three_ways(report_and_comparisons: Built) -> None:
    report, _ = report_and_comparisons
    pairs = {(x, y): (r.hits, r.n) for x, y, r in report.judge_pairs}
    assert pairs == {("g1", "g2"): (4, 6), ("g1", "g3"): (4, 6), ("g2", "g3"): (2, 6)}
    [(triple, rate)] = report.judge_triples
    assert triple == ("g1", "g2", "g3") and (rate.hits, rate.n) == (2, 6)


def test_fleiss_kappa_and_krippendorff_alpha_match_reference_packages(
    report_and_comparisons: Built,
) -> None:
    report, _ = report_and_comparisons
    humans = next(r for r in report.reliability if r.group == "human raters")
    code = {"a": 0, "t": 1, "b": 2}
    labels = np.array([[code[v] for v in votes] for votes in HUMAN_VOTES])  # pairs x raters
    table, _ = aggregate_raters(labels, n_cat=3)
    assert humans.kappa == pytest.approx(fleiss_kappa(table, method="fleiss"), abs=1e-12)
    assert (humans.units, humans.raters, humans.kappa_units) == (6, 5, 6)
    nominal = labels.T.astype(float)
    assert humans.alpha_nominal == pytest.approx(
        krippendorff.alpha(reliability_data=nominal, level_of_measurement="nominal"), abs=1e-9
    )
    sign = {"a": 1, "t": 0, "b": -1}
    signed = np.array(
        [
            [sign[v] * STRENGTH[h] for h, v in zip(HUMANS, votes, strict=True)]
            for votes in HUMAN_VOTES
        ]
    ).T.astype(float)
    assert humans.alpha_ordinal == pytest.approx(
        krippendorff.alpha(reliability_data=signed, level_of_measurement="ordinal"), abs=1e-9
    )
    assert humans.axis_kappa == {}  # the raters gave no axis verdicts


def test_rater_alpha_is_the_reported_alpha_with_a_conversation_interval(
    report_and_comparisons: Built,
) -> None:
    report, comparisons = report_and_comparisons
    humans = next(r for r in report.reliability if r.group == "human raters")
    alpha = rater_alpha(comparisons, rounds=200, seed=1)
    assert alpha.alpha == humans.alpha_nominal
    assert (alpha.pairs, alpha.conversations, alpha.raters, alpha.verdicts) == (6, 6, 5, 30)
    # pair i is conversation c{i}: a round repeats each pair as often as it is drawn
    code = {"a": 0, "t": 1, "b": 2}
    nominal = np.array([[code[v] for v in votes] for votes in HUMAN_VOTES]).T.astype(float)
    rounds = []
    for draw in conversation_draws(6, rounds=200, seed=1):
        data = np.repeat(nominal, draw.astype(int), axis=1)
        ok = len(np.unique(data)) > 1
        rounds.append(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
                      if ok else np.nan)  # fmt: skip
    expected = np.nanpercentile(rounds, [2.5, 97.5])
    assert (alpha.low, alpha.high) == pytest.approx(tuple(expected), abs=1e-9)


def test_rater_alpha_on_few_raters_says_what_it_rests_on(store: Store) -> None:
    assert rater_alpha(load_comparisons(store, source="human")).pairs == 0  # no verdicts at all
    seed_verdicts(
        store,
        [Verdict(i, "s1", "s2", h, w) for i in range(3) for h, w in (("h1", "a"), ("h2", "b"))]
        + [Verdict(3, "s1", "s2", "h1", "a")],
        sources={"h1": "human", "h2": "human"},
    )
    alpha = rater_alpha(load_comparisons(store, source="human"))
    assert (alpha.pairs, alpha.conversations, alpha.raters, alpha.verdicts) == (3, 3, 2, 7)
    assert alpha.alpha == pytest.approx(  # two raters who always disagree
        krippendorff.alpha(reliability_data=[[0, 0, 0], [2, 2, 2]], level_of_measurement="nominal")
    )
    assert np.isnan(alpha.low) and np.isnan(alpha.high)  # three conversations: no interval


def test_stability_refits_on_each_subset_of_judges(report_and_comparisons: Built) -> None:
    report, comparisons = report_and_comparisons
    llm = next(s for s in report.stability if s.group == "LLM judges")
    assert (llm.judges, llm.subset_size, llm.draws) == (3, 1, 3)
    rows = comparisons.by_source("llm")
    winner, loser, tie = rows.winner_loser()
    k = len(rows.systems)
    full = fit_bradley_terry(win_matrix(winner, loser, rows.strength, k, tie=tie)).theta
    taus = []
    for j in range(3):
        m = rows.judge == j
        theta = fit_bradley_terry(win_matrix(winner[m], loser[m], rows.strength[m], k)).theta
        taus.append(kendalltau(full, theta).statistic)
    defined = [t for t in taus if np.isfinite(t)]  # a subset that ties every system ranks none
    assert len(defined) >= 2
    assert llm.median == pytest.approx(float(np.median(defined)))
    assert llm.minimum == pytest.approx(min(defined))


def test_no_humans_means_no_human_figures(store: Store) -> None:
    seed_verdicts(store, [Verdict(0, "s1", "s2", "g1", "a"), Verdict(1, "s1", "s2", "g1", "b")])
    report = analyse_agreement(load_comparisons(store, source="all"), rounds=50)
    assert report.human_llm is None and report.inter_human is None
    assert report.judge_pairs == [] and report.reliability == [] and report.stability == []
    assert report.empty


def test_a_judge_whose_verdict_flips_with_the_order_abstains_in_alpha(store: Store) -> None:
    # g1 and g2 see four pairs in both orders; g1 flips on pair 0, g2 on pair 3
    g1 = [("a", "b"), ("a", "a"), ("b", "b"), ("a", "a")]
    g2 = [("a", "a"), ("b", "b"), ("b", "b"), ("b", "a")]
    verdicts = [
        Verdict(i, "s1", "s2", judge, winner, 2, order)
        for judge, seen in (("g1", g1), ("g2", g2))
        for i, pair in enumerate(seen)
        for order, winner in zip(("ab", "ba"), pair, strict=True)
    ]
    seed_verdicts(store, verdicts)
    report = analyse_agreement(load_comparisons(store), rounds=50)
    [llm] = report.reliability
    nan = float("nan")
    nominal = np.array([[nan, 0, 2, 0], [0, 2, 2, nan]])  # a = 0, b = 2; flips abstain
    assert llm.alpha_nominal == pytest.approx(
        krippendorff.alpha(reliability_data=nominal, level_of_measurement="nominal"), abs=1e-12
    )
    signed = np.array([[0, 2, -2, 2], [2, -2, -2, 0]], dtype=float)  # mean over both orders
    assert llm.alpha_ordinal == pytest.approx(
        krippendorff.alpha(reliability_data=signed, level_of_measurement="ordinal"), abs=1e-12
    )
    [(_, _, rate)] = report.judge_pairs  # only pairs 1 and 2 have a vote from both
    assert (rate.hits, rate.n) == (1, 2)


def test_axis_kappa_counts_only_the_verdicts_that_judged_the_axis(store: Store) -> None:
    """g1 and g2 judge the H axis like their overall votes; g3 (imported, no axes) abstains on
    H instead of counting as a tie."""
    verdicts = []
    for i, (a, b) in enumerate(PAIRS):
        for judge, vote in zip(LLMS, LLM_VOTES[i], strict=True):
            axes = {} if judge == "g3" else {"H": {"winner": vote, "strength": 3}}
            verdicts.append(Verdict(i, a, b, judge, vote, 3, axes=axes))
    seed_verdicts(store, verdicts)
    report = analyse_agreement(load_comparisons(store, source="all"), rounds=50, seed=1)
    (llms,) = [r for r in report.reliability if r.group != "human raters"]
    code = {"a": 0, "b": 2}
    labels = np.array([[code[v] for v in votes[:2]] for votes in LLM_VOTES])  # g1 and g2 only
    table, _ = aggregate_raters(labels, n_cat=3)
    assert llms.axis_kappa["H"] == pytest.approx(fleiss_kappa(table, method="fleiss"), abs=1e-12)
    assert set(llms.axis_kappa) == {"H"}


def test_stability_draws_halves_of_many_raters_without_listing_them_all(store: Store) -> None:
    """Forty raters have C(40, 20) ≈ 1.4e11 halves: the refits use 200 distinct random ones."""
    raters = [f"h{r:02d}" for r in range(40)]
    pairs = [("s1", "s2"), ("s2", "s3"), ("s1", "s3")]
    verdicts = [
        Verdict(i, a, b, rater, "a" if (r + i) % 3 else "b")
        for i, (a, b) in enumerate(pairs)
        for r, rater in enumerate(raters)
    ]
    seed_verdicts(store, verdicts, sources={h: "human" for h in raters})
    report = analyse_agreement(load_comparisons(store, source="all"), rounds=50, seed=3)
    humans = next(s for s in report.stability if s.group == "human raters")
    assert (humans.judges, humans.subset_size, humans.draws) == (40, 20, 200)
    assert 0.0 <= humans.same_top <= 1.0
