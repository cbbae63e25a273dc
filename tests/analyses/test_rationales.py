"""The rationale analyses on the crafted study, worked out by hand: mention rates, co-mention on
agreed pairs (with the dissenting rater left out), its chance rate and Cohen's κ (against
scikit-learn); and the theme-verdict regression against statsmodels on simulated judgments."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from sklearn.metrics import cohen_kappa_score

from heart.analyses import analyse_rationales, load_comparisons
from heart.analyses._rationales import (
    CodedRationale,
    code_records,
    load_coded,
    place_codings,
    read_codes,
    verdict_links,
)
from heart.rationales import RULE_CODER, load_codebook
from heart.rationales.code import code_with_rules
from heart.store import Store

from ..rationale_rows import Said, add_pair, add_said, crafted_study

CODEBOOK = load_codebook()
IDS = CODEBOOK.ids
NF, AQ, GS = "names-feeling", "asks-question", "generic-scripted"
SN, NS = "sounds-natural", "next-step"


def _report(store: Store, rounds: int = 2000):  # type: ignore[no-untyped-def]
    crafted_study(store)
    code_with_rules(store, CODEBOOK)
    comparisons = load_comparisons(store, source="all")
    return analyse_rationales(store, comparisons, CODEBOOK, RULE_CODER, rounds=rounds, seed=3)


def test_mention_rates_by_source(store: Store) -> None:
    report = _report(store, rounds=50)
    assert report.rationales == {"llm": 6, "human": 9}  # one rater wrote nothing
    coder = report.primary
    assert coder is not None and coder.coder == RULE_CODER
    assert coder.coded == {"llm": 6, "human": 9}
    llm, human = coder.rates["llm"], coder.rates["human"]
    assert (llm[IDS.index(AQ)].hits, llm[IDS.index(AQ)].n) == (3, 6)
    assert (llm[IDS.index(NF)].hits, human[IDS.index(NF)].hits) == (1, 2)
    assert (human[IDS.index(AQ)].hits, human[IDS.index(AQ)].n) == (2, 9)
    assert coder.phrases[AQ][0] == ("asks a", 3)


def test_co_mention_on_agreed_pairs_by_hand(store: Store) -> None:
    coder = _report(store).primary
    assert coder is not None
    assert (coder.agreed_pairs, coder.paired) == (3, 3)  # pair 2: humans a, judges b
    c = coder.comention
    assert c is not None
    assert (c.overall.hits, c.overall.n) == (51, 54)
    per_theme = {t: (c.themes[i].hits, c.themes[i].n) for i, t in enumerate(IDS)}
    assert per_theme[NF] == per_theme[AQ] == (3, 3)
    assert per_theme[GS] == per_theme[SN] == (2, 3)
    assert per_theme[NS] == (2, 3)  # h3's next step is left out: h3 voted for b on pair 0
    # pairs 0, 1, 3: humans and judges per theme
    humans = {NF: [1, 0, 0], AQ: [1, 0, 1], GS: [0, 0, 0], SN: [0, 1, 0], NS: [0, 0, 0]}
    judges = {NF: [1, 0, 0], AQ: [1, 0, 1], GS: [1, 0, 0], SN: [0, 0, 0], NS: [0, 1, 0]}
    for theme in humans:
        i = IDS.index(theme)
        assert c.rate_first[i] == pytest.approx(np.mean(humans[theme]))
        assert c.rate_second[i] == pytest.approx(np.mean(judges[theme]))
        assert c.kappa[i] == pytest.approx(
            cohen_kappa_score(humans[theme], judges[theme]), nan_ok=True
        )
    # chance, by hand over the two other pairs of each pair: 1/3 for names the feeling and asks
    # a question, 2/3 for the three themes with one mention; 1 for the 13 nobody mentions
    for theme, exact in ((NF, 1 / 3), (AQ, 1 / 3), (GS, 2 / 3), (SN, 2 / 3), (NS, 2 / 3)):
        assert c.chance[IDS.index(theme)] == pytest.approx(exact, abs=0.03)
    assert c.chance_overall == pytest.approx((13 + 2 / 3 + 2) / 18, abs=0.01)
    assert c.chance[IDS.index("concise")] == 1.0
    assert c.overall.low <= 51 / 54 <= c.overall.high


def test_verdict_links_are_the_regression_statsmodels_fits() -> None:
    """Simulated judgments where the reply a theme is about wins with log-odds 1.0 + 0.3 per ten
    words of length advantage + 0.4 when it was shown first."""
    rng = np.random.default_rng(7)
    coded, rows = [], []
    for n in range(1500):
        side = "a" if rng.random() < 0.5 else "b"
        order = "ab" if rng.random() < 0.5 else "ba"
        length_a, length_b = int(rng.integers(10, 60)), int(rng.integers(10, 60))
        words = int(rng.integers(5, 40))
        own, other = (length_a, length_b) if side == "a" else (length_b, length_a)
        first = (side == "a") == (order == "ab")
        eta = 1.0 + 0.3 * (own - other) / 10 + 0.4 * (0.5 if first else -0.5)
        won = rng.random() < 1 / (1 + np.exp(-eta))
        winner = side if won else ("b" if side == "a" else "a")
        coded.append(
            CodedRationale(
                f"j{n}", "judge", "llm", "x", "y", order, winner, f"c{n % 90}", words, length_a,
                length_b, frozenset({NF}), {NF: frozenset({side})},
            )
        )  # fmt: skip
        rows.append((won, (own - other) / 10, 0.5 if first else -0.5, words / 10, n % 90))
    links = {link.theme: link for link in verdict_links(coded, CODEBOOK, level=0.95)}
    link = links[NF]
    y = np.asarray([r[0] for r in rows], dtype=float)
    x = np.asarray([r[1:4] for r in rows])
    x[:, 2] -= x[:, 2].mean()
    design = sm.add_constant(x)
    fit = sm.Logit(y, design).fit(
        disp=0, cov_type="cluster", cov_kwds={"groups": np.asarray([r[4] for r in rows])}
    )
    assert (link.n, link.won) == (1500, int(y.sum()))
    assert link.odds == pytest.approx(np.exp(fit.params[0]), rel=1e-8)
    assert (link.low, link.high) == pytest.approx(tuple(np.exp(fit.conf_int()[0])), rel=1e-6)
    assert (link.length, link.shown_first, link.rationale_words) == pytest.approx(
        tuple(fit.params[1:]), rel=1e-8
    )
    assert link.low < np.exp(1.0) < link.high and link.p_adjusted < 1e-6
    assert links[AQ].n == 0 and links[AQ].note == "fewer than 20 judgments"


def test_a_denied_theme_counts_for_the_other_reply(store: Store) -> None:
    add_pair(store, 0)
    add_said(store, Said(0, "j1", "a", "B never names her grief, A asks a question."))
    code_with_rules(store, CODEBOOK)
    comparisons = load_comparisons(store, source="all")
    stored = read_codes(store, [RULE_CODER], CODEBOOK)
    records = code_records(stored, comparisons)
    codings = place_codings(stored, comparisons)
    (coded,), failed = load_coded(codings, comparisons, RULE_CODER, CODEBOOK, records)
    assert failed == 0 and coded.themes == {NF, AQ}
    assert coded.sides == {NF: {"a"}, AQ: {"a"}}
