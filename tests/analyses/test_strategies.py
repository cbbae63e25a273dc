"""The strategy analyses on a crafted study: usage per system, family and subset worked out by
hand; human–model gaps; the classifier against human consensus (checked against scikit-learn)
and against ESConv's annotations; the flag on 30 replies or more."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import entropy
from sklearn.metrics import f1_score

from heart.analyses import (
    ESCONV_MAPPING,
    ESCONV_UNMAPPED,
    ESCONV_UNSCORABLE,
    StrategyReport,
    StrategyUse,
    analyse_strategies,
    esconv_reference,
    esconv_unscorable,
    human_consensus,
)
from heart.corpus import STRATEGIES
from heart.store import Store

from ..strategy_rows import (
    AF,
    CL,
    CLASSIFIER,
    EV,
    OH,
    RS,
    SI,
    SO,
    TAXONOMY,
    add_item,
    add_label,
    add_reply,
    crafted_study,
)

NAMES = TAXONOMY.names


def _rates(use: StrategyUse) -> dict[str, float]:
    """The strategies the group uses, with their rates."""
    return {n: float(r) for n, r in zip(NAMES, use.diversity.rates, strict=True) if r > 0}


def _report(store: Store, rounds: int = 200) -> StrategyReport:
    crafted_study(store)
    report = analyse_strategies(store, CLASSIFIER, TAXONOMY, rounds=rounds, seed=3)
    assert report is not None
    return report


def test_usage_per_system_and_family_by_hand(store: Store) -> None:
    report = _report(store)
    # 6 items x 6 replies (two human, m1-m3, warm) + 4 ESConv originals, less m3's failed a1
    assert report.classified == 6 * 6 + 4 - 1
    systems = {u.group: u for u in report.systems}
    assert set(systems) == {"human", "m1", "m2", "m3", "warm", "esconv-original"}
    assert _rates(systems["human"]) == {CL: 8 / 12, EV: 6 / 12, RS: 4 / 12, OH: 4 / 12}
    assert _rates(systems["m2"]) == {EV: 1.0}  # uncertain is not used
    assert systems["m3"].diversity.replies == 5
    assert systems["warm"].kind == "control" and _rates(systems["warm"]) == {EV: 1.0}

    families = {u.group: u for u in report.families}
    assert [u.group for u in report.families] == ["human", "fa", "fb", "dataset"]  # no control
    assert _rates(families["fa"]) == {EV: 1.0, SO: 0.5}  # m1 and m2 pooled
    assert _rates(families["dataset"]) == {CL: 0.25, AF: 0.25, RS: 0.25, EV: 0.25, SI: 0.25}
    human = families["human"].diversity
    assert (human.replies, human.coverage) == (12, 4)
    assert human.mean_unique == pytest.approx(22 / 12)
    assert human.entropy_bits == pytest.approx(entropy([8, 6, 4, 4], base=2))
    points = np.array([8, 6, 4, 4] + [0] * 11) / 12 * 100
    assert human.sd_points == pytest.approx(points.std())
    assert human.range_points == pytest.approx(800 / 12)

    # over every family's replies (not the control's): EV 24, SO 11, CL 9, AF 6, RS 5, OH 4, SI 1
    assert report.order[:7] == [EV, SO, CL, AF, RS, OH, SI]
    assert report.order[7:] == [n for n in NAMES if n not in report.order[:7]]
    assert "Chit Chat" not in {n for u in report.systems for n in _rates(u)}  # other answers


def test_usage_by_subset(store: Store) -> None:
    report = _report(store)
    by = {(u.subset, u.group): u for u in report.subsets}
    assert set(by) == {(s, f) for s in ("regular", "adversarial") for f in ("human", "fa", "fb")
                       } | {("regular", "dataset")}  # fmt: skip
    assert _rates(by["regular", "human"]) == {CL: 0.5, EV: 0.5, RS: 0.5, OH: 0.5}
    assert _rates(by["adversarial", "human"]) == {CL: 1.0, EV: 0.5}
    assert by["adversarial", "fb"].diversity.replies == 1


def test_humans_against_each_model_family(store: Store) -> None:
    report = _report(store)
    gaps = {(g.family, g.strategy): g for g in report.gaps}
    assert {g.family for g in report.gaps} == {"fa", "fb"}
    assert len(report.gaps) == 2 * 15
    cl = gaps["fa", CL]
    assert (cl.difference.rate_a, cl.difference.rate_b) == (8 / 12, 0.0)
    assert cl.difference.difference == pytest.approx(8 / 12)
    assert (cl.human_replies, cl.family_replies) == (12, 12)
    assert gaps["fa", EV].difference.difference == pytest.approx(-0.5)
    assert gaps["fb", AF].difference.difference == pytest.approx(-1.0)
    # every resampled round has humans at 0 for AF and fb at 1: a certain difference
    assert (gaps["fb", AF].difference.low, gaps["fb", AF].difference.high) == (-1.0, -1.0)
    assert gaps["fb", AF].difference.significant
    unused = gaps["fa", "Chit Chat"].difference
    assert unused.difference == 0.0 and unused.p_value == 1.0 and not unused.significant


def test_consensus_leaves_out_excluded_raters_other_taxonomies_and_disagreements(
    store: Store,
) -> None:
    crafted_study(store)
    labelled = {c.completion_id: c for c in human_consensus(store, TAXONOMY)}
    assert set(labelled) == {"cp-i0-m1", "cp-i0-m2", "cp-i1-human-x", "cp-i1-m3", "cp-i2-m2",
                             "cp-i3-warm", "cp-i3-m1"}  # fmt: skip
    assert labelled["cp-i0-m1"].split == (SO,) and labelled["cp-i0-m1"].disagreement
    assert labelled["cp-i0-m2"].choices == {"r1": (EV,), "r2": (EV,)}  # r3 was excluded
    assert labelled["cp-i1-m3"].strategies == (AF, SO)  # r1 alone
    assert labelled["cp-i3-warm"].choices == {"r1": (EV,)}  # r2 labelled another taxonomy
    assert labelled["cp-i3-m1"].strategies == (EV, SO)  # stored before hashes: counts
    report = analyse_strategies(store, CLASSIFIER, TAXONOMY, rounds=10)
    assert report is not None
    assert (report.labelled, report.disagreements) == (7, 1)


def test_classifier_against_human_consensus_matches_scikit_learn(store: Store) -> None:
    report = _report(store)
    absent, left_out = report.check("human consensus"), report.check("human consensus", "left out")
    assert absent is not None and left_out is not None
    # the six agreed completions, in completion-id order, and the classifier's answers
    truth = {"cp-i0-m2": {EV}, "cp-i1-human-x": {CL, EV}, "cp-i1-m3": {AF, SO},
             "cp-i2-m2": {EV, SO}, "cp-i3-m1": {EV, SO}, "cp-i3-warm": {EV}}  # fmt: skip
    said = {"cp-i0-m2": {EV}, "cp-i1-human-x": {CL, EV}, "cp-i1-m3": {AF, EV, SO},
            "cp-i2-m2": {EV}, "cp-i3-m1": {EV, SO}, "cp-i3-warm": {EV}}  # fmt: skip
    t = np.array([[n in truth[c] for n in NAMES] for c in sorted(truth)])
    p = np.array([[n in said[c] for n in NAMES] for c in sorted(said)])
    assert absent.replies == 6
    np.testing.assert_allclose(
        absent.result.f1, f1_score(t, p, average=None, zero_division=np.nan), atol=1e-12
    )
    f1 = dict(zip(NAMES, absent.result.f1, strict=True))
    assert (f1[EV], f1[SO], f1[CL], f1[AF]) == pytest.approx((10 / 11, 4 / 5, 1.0, 1.0))
    assert absent.result.macro == pytest.approx((10 / 11 + 0.8 + 2) / 4)
    # uncertain left out: m2's uncertain SO cells take no part, so SO is 2 of 2
    f1 = dict(zip(NAMES, left_out.result.f1, strict=True))
    assert f1[SO] == 1.0 and left_out.result.fn[NAMES.index(SO)] == 0
    assert left_out.result.macro == pytest.approx((10 / 11 + 3) / 4)
    lo, hi = absent.result.macro_low, absent.result.macro_high
    assert lo <= absent.result.macro <= hi


def test_classifier_audit_against_esconv(store: Store) -> None:
    report = _report(store)
    audit = report.check("ESConv annotations")
    assert audit is not None
    NE, PS, SM = "Normalize Experiences", "Promote Self-Care Practices", "Stress Management"
    assert audit.strategies == [AF, CL, EV, NE, OH, PS, RS, SI, SM, SO]
    r = audit.result
    assert r.replies == 4
    # i0 Question: CL found. i1 Affirmation and Reassurance (AF or OH) and Providing
    # Suggestions (SO, PS or SM), the classifier saw AF: AF found, OH left out, SO, PS and SM
    # missed. i2 Reflection of feelings (EV or RS), both seen: both found. i3 Restatement (RS)
    # and Reflection of feelings, only SI seen: RS and EV missed, SI said but not annotated.
    assert r.tp.tolist() == [1, 1, 1, 0, 0, 0, 1, 0, 0, 0]
    assert r.fp.tolist() == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
    assert r.fn.tolist() == [0, 0, 1, 0, 0, 1, 1, 0, 1, 1]
    f1 = r.f1.tolist()
    assert f1[:3] == [1.0, 1.0, 2 / 3] and f1[5:] == [0.0, 2 / 3, 0.0, 0.0, 0.0]
    assert np.isnan(f1[3]) and np.isnan(f1[4])  # nobody marked NE; OH's one cell left out
    assert r.macro == pytest.approx((1 + 1 + 2 / 3 + 2 / 3) / 8)
    assert list(audit.not_scored) == [
        "Avoid Judgment and Criticism", "Collaborative Planning",
        "Provide Different Perspectives", "Reframe Negative Thoughts", "Chit Chat",
    ]  # fmt: skip
    # below 0.5, but on 4 replies: a caution, not a flag
    assert not report.flagged and not audit.flagged
    assert any("only 4 replies" in c and "ESConv" in c for c in report.cautions)
    assert any("only 6 replies" in c and "human consensus" in c for c in report.cautions)


def test_the_esconv_mapping_pins_every_label_and_counterpart() -> None:
    assert ESCONV_MAPPING == {
        "Question": ("Clarification",),
        "Restatement or Paraphrasing": ("Reflective Statements",),
        "Reflection of feelings": ("Emotional Validation", "Reflective Statements"),
        "Self-disclosure": ("Normalize Experiences",),
        "Affirmation and Reassurance": ("Affirmation", "Offer Hope"),
        "Providing Suggestions": (
            "Suggest Options", "Promote Self-Care Practices", "Stress Management",
        ),
        "Information": ("Share Information",),
    }  # fmt: skip
    assert ESCONV_UNMAPPED == ("Others",)
    assert sorted([*ESCONV_MAPPING, *ESCONV_UNMAPPED]) == sorted(STRATEGIES)
    mapped = {s for counterparts in ESCONV_MAPPING.values() for s in counterparts}
    # every strategy of the taxonomy is either scored or listed with why it cannot be
    assert mapped | set(ESCONV_UNSCORABLE) == set(NAMES)
    assert not mapped & set(ESCONV_UNSCORABLE)
    assert esconv_unscorable(NAMES) == ESCONV_UNSCORABLE
    assert len(mapped) == 10 and len(ESCONV_UNSCORABLE) == 5
    # a taxonomy with a strategy nobody mapped gets it listed too
    assert esconv_unscorable([CL, "Humour"]) == {"Humour": "no ESConv label maps to it"}


def test_emotional_validation_and_normalize_experiences_are_scored(store: Store) -> None:
    """ESConv's Reflection of feelings and Self-disclosure score the strategies they stand for."""
    esconv = {"i0": ["Reflection of feelings"], "i1": ["Self-disclosure"],
              "i2": ["Self-disclosure"], "i3": ["Question"]}  # fmt: skip
    seen = {"i0": [EV], "i1": ["Normalize Experiences"], "i2": [], "i3": [EV]}
    for n, item in enumerate(esconv):
        add_item(store, item, f"c{n}", esconv=esconv[item])
        add_reply(store, item, "esconv-original", present=seen[item])
    report = analyse_strategies(store, CLASSIFIER, TAXONOMY, rounds=50)
    assert report is not None
    audit = report.check("ESConv annotations")
    assert audit is not None
    r = audit.result
    ev, ne = audit.strategies.index(EV), audit.strategies.index("Normalize Experiences")
    # EV: found on i0, said on i3 where only a question was annotated
    assert (r.tp[ev], r.fp[ev], r.fn[ev], r.f1[ev]) == (1, 1, 0, 2 / 3)
    # NE: found on i1, missed on i2
    assert (r.tp[ne], r.fp[ne], r.fn[ne], r.f1[ne]) == (1, 0, 1, 2 / 3)


def test_a_label_with_several_counterparts_is_met_by_any_of_them() -> None:
    mapped = [AF, CL, EV, OH, RS]
    # Reflection of feelings, the classifier saw Emotional Validation: EV found, RS left out
    present, known = esconv_reference(["Reflection of feelings"], mapped,
                                      [False, False, True, False, False])  # fmt: skip
    assert present == [False, False, True, False, True]
    assert known == [True, True, True, True, False]
    # ... it saw neither: both missed
    present, known = esconv_reference(["Reflection of feelings"], mapped, [False] * 5)
    assert present == [False, False, True, False, True] and all(known)
    # Restatement marks RS by itself: missed even though EV met Reflection of feelings
    present, known = esconv_reference(
        ["Reflection of feelings", "Restatement or Paraphrasing"], mapped,
        [False, False, True, False, False],
    )  # fmt: skip
    assert present == [False, False, True, False, True] and all(known)
    # Affirmation and Reassurance met by Offer Hope; Others and unknown labels mark nothing
    present, known = esconv_reference(["Affirmation and Reassurance", "Others", "Greeting"],
                                      mapped, [False, False, False, True, False])  # fmt: skip
    assert present == [True, False, False, True, False]
    assert known == [False, True, True, True, True]


def test_a_classifier_below_half_on_thirty_replies_is_flagged(store: Store) -> None:
    for n in range(30):  # ESConv asked a question; the classifier saw only affirmation
        add_item(store, f"i{n}", f"c{n}", esconv=["Question"])
        add_reply(store, f"i{n}", "esconv-original", present=[AF])
    report = analyse_strategies(store, CLASSIFIER, TAXONOMY, rounds=50)
    assert report is not None and report.flagged
    (problem,) = report.problems
    assert problem.startswith("its macro F1 against ESConv annotations is 0.00") and "30" in problem
    assert report.check("human consensus") is None  # nobody labelled
    assert report.gaps == []  # no human replies


def test_no_classification_gives_no_report(store: Store) -> None:
    add_item(store, "i0", "c0")
    add_reply(store, "i0", "m1", present=[EV], classifier="openai:other@https://x")
    assert analyse_strategies(store, CLASSIFIER, TAXONOMY) is None
    add_label(store, "cp-i0-m1", "r1", [EV])
    assert analyse_strategies(store, CLASSIFIER, TAXONOMY) is None
