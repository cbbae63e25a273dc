"""Quality per rater, measured as the judge audit measures judges, on real SQLite stores driven
through claims and submissions: each measure against a hand computation, raters with no overlap
and with few verdicts, the flags and their settings, and Prolific's rule for returns."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import select

from heart.config import PairsSpec, PeopleSpec
from heart.judging import build_pairs
from heart.people import (
    CHOICES,
    JUDGE,
    MIN_VERDICTS,
    RATER_LEVEL,
    RaterFlag,
    RaterMeasures,
    attention_instruction,
    claim,
    decide,
    invite,
    load_task,
    longest_run,
    majority,
    measure_raters,
    nudges_seen,
    pending_nudges,
    rater_decision,
    reading_floor,
    reading_floors,
    reinstate,
    review_quality,
    submit_judgment,
    sync_tasks,
)
from heart.stats import Share, wilson_interval
from heart.store import CompletionRow, ItemRow, RaterRow, Store, SystemRow, TaskRow

from ..rows import seed_study

HOUR = 3600.0
CONTEXT_WORDS, REPLY_WORDS = 50, 25


def _study(store: Store, items: int, spec: PeopleSpec) -> None:
    """``items`` items of four model replies each (six pairs an item), a context of 50 words
    and replies of 25."""
    seed_study(store, ["m1", "m2", "m3", "m4"], items=items, completions=True)
    with store.session() as s:
        s.merge(SystemRow(name="human", kind="human", family="human", spec={}))
        for item in s.scalars(select(ItemRow)):
            item.context = [{"role": "seeker", "text": " ".join(["word"] * CONTEXT_WORDS)}]
            item.reference = " ".join(["kind"] * REPLY_WORDS)
        for row in s.scalars(select(CompletionRow)):
            row.text = " ".join(["reply"] * REPLY_WORDS)
    build_pairs(store, PairsSpec(), seed=0)
    sync_tasks(store, spec, seed=0)


def _rater(store: Store) -> str:
    ((rater, _),) = invite(store, 1)
    return rater


def _judge(store: Store, rater: str, answers: list[str], seconds: list[float]) -> list[str]:
    """Claim and answer seats in turn (answers in the terms shown), each submitted ``seconds``
    after it was served; returns the seats."""
    seats = []
    for n, (answer, took) in enumerate(zip(answers, seconds, strict=True)):
        task = claim(store, rater, JUDGE, now=1000.0 * n, seconds=HOUR)
        assert task is not None
        submit_judgment(store, rater, task, answer, "", now=1000.0 * n + took)
        seats.append(task)
    return seats


def _measures(store: Store, rater: str) -> RaterMeasures:
    with store.session() as s:
        return measure_raters(s, RATER_LEVEL, [rater])[rater]


def _share(hits: int, n: int) -> Share:
    return Share(hits, n, *wilson_interval(hits, n, RATER_LEVEL))


def test_the_pure_measures_by_hand() -> None:
    assert longest_run(["A+", "A+", "B++", "B++", "B++", "="]) == (3, "B++")
    assert longest_run(["=", "A+", "="]) == (1, "=") and longest_run([]) == (0, "")
    assert majority(["a", "a", "b"]) == "a"
    assert majority(["a", "b"]) is None  # a tie between the others
    assert majority(["a"]) is None  # one other rater is no majority
    assert reading_floor(500) == 60.0 and reading_floor(100) == 12.0
    # the context is read once per item: the second seat on i0 costs its replies only
    assert reading_floors([("i0", 50, 50), ("i0", 50, 50), ("i1", 10, 40)]) == [12.0, 6.0, 6.0]


def test_one_raters_measures_match_a_hand_computation(store: Store) -> None:
    _study(store, items=1, spec=PeopleSpec(check_every=0, raters_per_pair=1))
    rater = _rater(store)
    answers = ["A+", "A+", "B++", "B++", "B++", "="]
    _judge(store, rater, answers, seconds=[4, 10, 20, 3, 30, 8])
    m = _measures(store, rater)
    assert (m.verdicts, m.ties) == (6, 1)
    assert m.first_shown == _share(2, 5)  # two "A" of five verdicts with a winner
    assert (m.longest_run, m.run_answer) == (3, "B++")
    # floors: the first seat reads the context and both replies (100 words, 12 s), the other
    # five the replies only (50 words, 6 s); 4 s and 3 s are under theirs
    assert (m.timed, m.median_seconds, m.median_floor) == (6, 9.0, 6.0)
    assert m.too_fast == _share(2, 6)
    assert (m.shared, m.agreement) == (0, None) and math.isnan(m.kappa)  # nobody else judged
    assert (m.gold, m.gold_failed, m.attention, m.attention_failed) == (0, 0, 0, 0)
    (quality,) = review_quality(store)
    assert quality.measures == m and quality.flags == ()  # 6 verdicts: too few for any flag
    assert (quality.decision, quality.decision_reason) == ("approve", "no quality flag")


def _choice_for(store: Store, task: str, side: str) -> str:
    """The option (in the terms shown) that names ``side`` (a, b or tie, in the pair's terms)."""
    if side == "tie":
        return "="
    with store.session() as s:
        shown = s.get(TaskRow, task).shown
    return "A+" if (side == "a") == (shown == "ab") else "B+"


def test_agreement_with_the_other_raters_majority_and_kappa_by_hand(store: Store) -> None:
    _study(store, items=1, spec=PeopleSpec(check_every=0, raters_per_pair=3))
    x, y, z = (_rater(store) for _ in range(3))
    with store.session() as s:
        pairs = sorted(
            s.scalars(select(TaskRow.target).where(TaskRow.kind == JUDGE, TaskRow.seat == 0))
        )
    labels = {
        x: ["a", "b", "a", "b", "tie", "a"],
        y: ["a", "a", "b", "b", "tie", "a"],
        z: ["a", "b", "b", "b", "tie", "b"],
    }
    for rater, sides in labels.items():
        while (task := claim(store, rater, JUDGE, now=0, seconds=HOUR)) is not None:
            side = sides[pairs.index(task.split(":")[1])]
            submit_judgment(store, rater, task, _choice_for(store, task, side), "", now=60)
    m = _measures(store, x)
    # the others' majority: a, none (a tie), b, b, tie, none; x on those four: a, a, b, tie
    assert m.shared == 4 and m.agreement == _share(3, 4)
    # p_o = 3/4; p_e = .5 x .25 + .25 x .5 + .25 x .25 = 5/16; kappa = (3/4 - 5/16) / (11/16)
    assert m.kappa == pytest.approx(7 / 11)


def test_a_rater_with_few_verdicts_gets_no_flag_whatever_they_answer(store: Store) -> None:
    _study(store, items=1, spec=PeopleSpec(check_every=0, raters_per_pair=1))
    rater = _rater(store)
    _judge(store, rater, ["A++"] * 6, seconds=[1.0] * 6)  # always A, in a second
    m = _measures(store, rater)
    assert m.first_shown == _share(6, 6) and m.too_fast == _share(6, 6)
    (quality,) = review_quality(store)
    assert quality.flags == () and quality.excluded is None and quality.decision == "approve"


def test_clear_position_and_speed_problems_exclude_with_their_rules(store: Store) -> None:
    _study(store, items=4, spec=PeopleSpec(check_every=0, raters_per_pair=1))  # 24 pairs
    rater = _rater(store)
    _judge(store, rater, ["A++"] * MIN_VERDICTS, seconds=[1.0] * MIN_VERDICTS)
    first = _share(MIN_VERDICTS, MIN_VERDICTS)
    with store.session() as s:
        reason = s.get(RaterRow, rater).excluded_reason
        held = s.scalars(select(TaskRow.id).where(TaskRow.rater_id == rater)).all()
    assert reason == (
        f"position (people.exclude_flags): the reply shown first won {first.text()} verdicts; "
        f"speed (people.exclude_flags): {first.text()} judgments were given faster than their "
        "text can be read at 500 words a minute (median 1 s against a floor of 6 s)"
    )
    assert held == []  # excluded at the 20th verdict: every seat back in the pool
    assert claim(store, rater, JUDGE, now=10**6, seconds=HOUR) is None
    (quality,) = review_quality(store)
    # their seats went back to the pool with their times: the measures shown are those that
    # excluded them, the same numbers as the reason
    assert [(f.name, f.excludes) for f in quality.flags] == [
        ("position", True), ("speed", True), ("run", False),
    ]  # fmt: skip
    assert quality.measures.timed == MIN_VERDICTS and quality.measures.too_fast == first
    assert quality.measures.longest_run == MIN_VERDICTS
    assert f"; speed (people.exclude_flags): {quality.flags[1].reason}" in reason
    assert quality.decision == "keep out" and quality.counted == 0
    assert quality.decision_reason.startswith(f"excluded ({reason}); approve the payment")


def test_which_flags_exclude_is_a_study_setting(store: Store) -> None:
    spec = PeopleSpec(check_every=0, raters_per_pair=1, exclude_flags=["attention"])
    _study(store, items=4, spec=spec)
    rater = _rater(store)
    for n in range(24):  # the defaults would have excluded them at the 20th
        task = claim(store, rater, JUDGE, now=1000.0 * n, seconds=HOUR)
        assert task is not None
        submit_judgment(store, rater, task, "A++", "", now=1000.0 * n + 1, spec=spec)
    (quality,) = review_quality(store, spec)
    assert [(f.name, f.excludes) for f in quality.flags] == [
        ("position", False),
        ("speed", False),
        ("run", False),
    ]
    assert quality.excluded is None and quality.counted == 24
    assert (
        quality.decision_reason
        == "flagged for a look (position, speed, run), no flag excludes them"
    )


def _checks_study(store: Store) -> None:
    """Two items, a check after every pair (gold and attention in turn: 6 each kind), two
    raters a seat."""
    _study(store, items=2, spec=PeopleSpec(check_every=1, raters_per_pair=2))


def _answer_checks(
    store: Store, rater: str, fail: dict[str, int], spec: PeopleSpec | None = None
) -> None:
    """Judge everything, a minute a task; fail the first ``fail[kind]`` checks of each kind,
    pass the rest."""
    failed = dict.fromkeys(("gold", "attention"), 0)
    n = 0
    while (task := claim(store, rater, JUDGE, now=1000.0 * n, seconds=HOUR)) is not None:
        with store.session() as s:
            seat = s.get(TaskRow, task)
            check, expected = seat.check, seat.expected
        answer = "A+"
        if check:
            wrong = failed[check] < fail.get(check, 0)
            failed[check] += wrong
            if check == "attention":
                answer = ("B+" if expected != "B+" else "A+") if wrong else expected
            else:
                answer = "=" if wrong else expected + "+"
        submit_judgment(store, rater, task, answer, "", now=1000.0 * n + 60, spec=spec)
        n += 1


def test_one_failed_attention_check_does_not_exclude_and_two_do(store: Store) -> None:
    _checks_study(store)
    once, twice = _rater(store), _rater(store)
    _answer_checks(store, once, {"attention": 1})
    _answer_checks(store, twice, {"attention": 2})
    quality = {q.rater: q for q in review_quality(store)}
    assert quality[once].excluded is None and quality[once].decision == "approve"
    assert (quality[once].measures.attention, quality[once].measures.attention_failed) == (6, 1)
    reason = "attention (people.checks_to_exclude: 2): failed 2 of 2 attention checks"
    assert quality[twice].excluded == reason and quality[twice].decision == "return"
    assert quality[twice].decision_reason == (
        "failed 2 of 2 attention checks: by Prolific's rules (two failed explicit checks in a "
        "session of 5 minutes or more) they may be asked to return the submission"
    )
    for q in quality.values():  # one rater read alone is decided as in the review of all
        assert rater_decision(store, q.rater, PeopleSpec()) == (
            q.decision,
            q.decision_reason,
            q.measures,
        )
        # without the others' verdicts (the finish page): the same decision
        assert rater_decision(store, q.rater, PeopleSpec(), agreement=False)[0] == q.decision


def test_failed_gold_pairs_are_not_attention_failures(store: Store) -> None:
    _checks_study(store)
    rater = _rater(store)
    _answer_checks(store, rater, {"gold": 6})
    (quality,) = review_quality(store)
    m = quality.measures
    assert (m.gold, m.gold_failed, m.attention, m.attention_failed) == (6, 6, 6, 0)
    assert quality.flags == (
        RaterFlag("gold", "failed 6 of 6 gold pairs (the original reply against a dismissive "
                  "one)", excludes=False),
    )  # fmt: skip
    assert quality.excluded is None and quality.decision == "approve"


def test_a_stricter_study_keeps_out_after_one_failed_check_but_asks_no_return(
    store: Store,
) -> None:
    spec = PeopleSpec(check_every=1, raters_per_pair=1, checks_to_exclude=1)
    _study(store, items=2, spec=spec)
    rater = _rater(store)
    _answer_checks(store, rater, {"attention": 1}, spec)
    (quality,) = review_quality(store, spec)
    assert quality.excluded == (
        "attention (people.checks_to_exclude: 1): failed 1 of 1 attention checks"
    )
    assert quality.decision == "keep out"  # Prolific asks for two before a return


def test_decide_by_hand() -> None:
    m = RaterMeasures(attention=3, attention_failed=2)
    attention = RaterFlag("attention", "failed 2 of 3 attention checks", excludes=True)
    assert decide(m, (attention,), "attention ...")[0] == "return"
    position = RaterFlag("position", "the reply shown first won ...", excludes=True)
    assert decide(RaterMeasures(), (position,), "position ...")[0] == "keep out"
    assert decide(RaterMeasures(), (), "failed 1 of 2 quality checks") == (
        "keep out",
        "excluded (failed 1 of 2 quality checks); approve the payment: Prolific asks for two "
        "failed attention checks before a return",
    )  # an exclusion stored by an older rule stands
    assert decide(RaterMeasures(), (), None) == ("approve", "no quality flag")


def test_an_attention_check_instructs_its_answer_inside_the_question(store: Store) -> None:
    _checks_study(store)
    rater = _rater(store)
    with store.session() as s:
        rows = s.execute(select(TaskRow.id, TaskRow.expected).where(TaskRow.check == "attention"))
        expected = {task: str(answer) for task, answer in rows}
    assert len(set(expected.values())) > 1  # the instructed option varies from seat to seat
    seen = n = 0
    while (task := claim(store, rater, JUDGE, now=1000.0 * n, seconds=HOUR)) is not None:
        shown = load_task(store, rater, task)
        if task in expected:
            assert shown.instruction == attention_instruction(expected[task])
            assert CHOICES[expected[task]][2] in shown.instruction
            seen += 1
        else:
            assert shown.instruction is None
        submit_judgment(store, rater, task, expected.get(task, "A+"), "", now=1000.0 * n + 60)
        n += 1
    (quality,) = review_quality(store)
    assert seen == 6 and quality.measures.attention_failed == 0


def test_an_attention_seat_of_an_older_store_instructs_its_stored_answer(store: Store) -> None:
    _checks_study(store)
    rater = _rater(store)
    with store.session() as s:  # as stores from before instructions hold: "A++" or "B++"
        for seat in s.scalars(select(TaskRow).where(TaskRow.check == "attention")):
            seat.expected = "A++" if seat.shown == "ab" else "B++"
    n = 0
    while (task := claim(store, rater, JUDGE, now=1000.0 * n, seconds=HOUR)) is not None:
        shown = load_task(store, rater, task)
        with store.session() as s:
            wanted = s.get(TaskRow, task).expected if shown.instruction else None
        if wanted:
            assert shown.instruction == attention_instruction(wanted)
        submit_judgment(store, rater, task, wanted or "A+", "", now=1000.0 * n + 60)
        n += 1
    (quality,) = review_quality(store)
    assert quality.measures.attention == 6 and quality.measures.attention_failed == 0


def test_speed_is_warned_of_first_and_excludes_only_if_it_goes_on(store: Store) -> None:
    _study(store, items=4, spec=PeopleSpec(check_every=0, raters_per_pair=2))  # 24 pairs
    slowed, went_on = _rater(store), _rater(store)
    mixed = ["A+", "B+"] * (MIN_VERDICTS // 2)  # no position or run flag
    fast, slow = [1.0] * 10, [60.0] * 10  # a floor of 6 s a seat (50 words, then 50 a seat)
    _judge(store, slowed, mixed[:10], fast)
    _judge(store, went_on, mixed[:10], fast)
    for rater in (slowed, went_on):  # warned at the 10th verdict, not excluded
        with store.session() as s:
            person = s.get_one(RaterRow, rater)
            assert person.excluded_reason is None
            assert pending_nudges(person.meta) == [
                "10 of your 10 answers came faster than the conversation and the two replies "
                "can be read"
            ]
    nudges_seen(store, slowed)
    with store.session() as s:
        assert pending_nudges(s.get_one(RaterRow, slowed).meta) == []
    # the seats go on from the 11th: _judge numbers its claims from 0 again, so later times
    for rater, took in ((slowed, slow), (went_on, fast)):
        for n, (answer, seconds) in enumerate(zip(mixed[10:], took, strict=True), 10):
            task = claim(store, rater, JUDGE, now=1000.0 * n, seconds=HOUR)
            assert task is not None
            submit_judgment(store, rater, task, answer, "", now=1000.0 * n + seconds)
    with store.session() as s:
        assert s.get_one(RaterRow, slowed).excluded_reason is None  # 10 of 20: no clear flag
        reason = s.get_one(RaterRow, went_on).excluded_reason
    assert reason is not None and reason.startswith("speed (people.exclude_flags): ")
    by_rater = {q.rater: q for q in review_quality(store)}
    assert by_rater[slowed].excluded is None and by_rater[slowed].flags == ()
    assert by_rater[went_on].measures.too_fast == _share(MIN_VERDICTS, MIN_VERDICTS)


def test_a_reinstated_rater_counts_again_and_is_not_excluded_again_for_it(store: Store) -> None:
    _study(store, items=4, spec=PeopleSpec(check_every=0, raters_per_pair=1))
    rater = _rater(store)
    _judge(store, rater, ["A++"] * MIN_VERDICTS, seconds=[30.0] * MIN_VERDICTS)
    (quality,) = review_quality(store)
    assert quality.excluded is not None and quality.counted == 0  # position: A always won
    with pytest.raises(ValueError, match="say who reinstates"):
        reinstate(store, rater, by="  ")
    with pytest.raises(ValueError, match="no rater 'r-nobody'"):
        reinstate(store, "r-nobody", by="Dr Lee")
    assert reinstate(store, rater, by="Dr Lee") == quality.excluded
    with pytest.raises(ValueError, match="is not excluded"):
        reinstate(store, rater, by="Dr Lee")
    (quality,) = review_quality(store)
    assert quality.excluded is None and quality.counted == MIN_VERDICTS
    assert [(f.name, f.excludes) for f in quality.flags] == [("position", False), ("run", False)]
    with store.session() as s:
        meta = s.get_one(RaterRow, rater).meta
    assert meta["cleared"] == ["position"] and meta["reinstated"][0]["by"] == "Dr Lee"
    assert "at_exclusion" not in meta
    task = claim(store, rater, JUDGE, now=10**6, seconds=HOUR)  # work again, and still counted
    assert task is not None
    submit_judgment(store, rater, task, "A++", "", now=10**6 + 30)
    (quality,) = review_quality(store)
    assert quality.excluded is None and quality.counted == MIN_VERDICTS + 1
