"""The judge audit on hand-built judgments: every share and flag checked by hand, every interval
against statsmodels' Wilson interval."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from statsmodels.stats.proportion import proportion_confint

from heart.analyses import audit_every_judge, audit_judges, load_comparisons, verdict_counts
from heart.stats import wilson_interval
from heart.store import CompletionRow, JudgeRow, JudgmentRow, PairRow, Store, SystemRow

from ..rows import Verdict, seed_study, seed_verdicts

ITEMS = 10
TEXTS = {"s1": "one two three four five", "s2": "one two", "warm": "so sorry, really"}
SHOWN = [("s1", "s2"), ("warm", "s1"), ("s2", "warm")]  # stored a/b of the three pairs per item
RANK = ["s1", "s2", "warm"]


def _build(store: Store) -> None:
    seed_study(store, ["s1", "s2", "warm"], items=ITEMS, completions=True, judges=["j", "k"])
    with store.session() as s:
        s.get(SystemRow, "warm").kind = "control"
        s.get(JudgeRow, "k").family = "s1"  # k shares s1's family (own_family: allow)
        for c in list(s.scalars(select(CompletionRow))):
            c.text = TEXTS[c.system]
        for i in range(ITEMS):
            for a, b in SHOWN:
                pid = f"p{i}{a}{b}"
                s.add(PairRow(id=pid, item_id=f"i{i}", a_id=f"cp-{i}-{a}", b_id=f"cp-{i}-{b}",
                              design="all"))  # fmt: skip
                s.flush()
                for order in ("ab", "ba"):
                    # j: whatever is shown first wins; k: the better system, in any order
                    j_winner = "a" if order == "ab" else "b"
                    k_winner = "a" if RANK.index(a) < RANK.index(b) else "b"
                    for judge, winner in (("j", j_winner), ("k", k_winner)):
                        s.add(
                            JudgmentRow(
                                id=f"{pid}{judge}{order}", pair_id=pid, judge=judge, order=order,
                                status="ok", winner=winner, strength=2, axes={}, rationale="",
                                refused=[{"answer": "x", "problem": "y"}] if i == 0 else [],
                                created_at="x",
                            )
                        )  # fmt: skip
        s.add(JudgmentRow(id="bad", pair_id="p0s1s2", judge="j", order="xx", status="failed",
                          raw="nope", created_at="x"))  # fmt: skip


def test_shares_flags_and_intervals(store: Store) -> None:
    _build(store)
    audits = {a.judge: a for a in audit_judges(load_comparisons(store), verdict_counts(store))}
    j, k = audits["j"], audits["k"]
    n = ITEMS * 3 * 2
    assert j.verdicts == k.verdicts == n

    assert j.first_position is not None and j.first_position.hits == n
    assert j.flip is not None and (j.flip.hits, j.flip.n) == (ITEMS * 3, ITEMS * 3)
    assert j.flagged and len(j.problems) == 2
    assert "shown first won 100%" in j.problems[0]
    assert j.own_family is None  # j's family has no replies here

    assert k.first_position is not None and k.first_position.hits == n // 2
    assert k.flip is not None and k.flip.hits == 0
    assert not k.flagged
    # s1 (5 words) beats s2 (2) and warm (3); s2 (2) beats warm (3): the longer wins 2 of 3
    assert k.longer is not None and (k.longer.hits, k.longer.n) == (2 * n // 3, n)
    assert k.control is not None and (k.control.hits, k.control.n) == (0, 2 * n // 3)
    assert k.own_family is not None and (k.own_family.hits, k.own_family.n) == (2 * n // 3,) * 2
    assert any("own family" in c for c in k.cautions)

    assert (j.counts.ok, j.counts.failed, j.counts.reasked) == (n, 1, 6)
    for share in (j.first_position, k.longer, k.control, k.own_family):
        assert share is not None
        low, high = proportion_confint(share.hits, share.n, alpha=0.05, method="wilson")
        assert (share.low, share.high) == pytest.approx((low, high), abs=1e-12)


@pytest.mark.parametrize(("hits", "n"), [(0, 1), (3, 10), (37, 40), (500, 1000)])
def test_wilson_interval_matches_statsmodels(hits: int, n: int) -> None:
    for level in (0.9, 0.95, 0.99):
        expected = proportion_confint(hits, n, alpha=1 - level, method="wilson")
        assert wilson_interval(hits, n, level) == pytest.approx(expected, abs=1e-12)


def test_a_leaning_to_the_second_or_shorter_reply_is_told_with_that_sides_share(
    store: Store,
) -> None:
    """ "the reply shown second won" and "prefers the shorter reply" quote the share of the side
    they name, not the other side's."""
    n = 12
    verdicts = [
        Verdict(i, "m1", "m2", judge, winner, order=order)
        for i in range(n)
        for order in ("ab", "ba")
        # late: whatever is shown second wins; terse: m1, the shorter reply, in either order
        for judge, winner in (("late", "b" if order == "ab" else "a"), ("terse", "a"))
    ]
    seed_verdicts(store, verdicts)
    with store.session() as s:
        for c in s.scalars(select(CompletionRow).where(CompletionRow.system == "m2")):
            c.text = "a much longer reply than the other one"
    audits = {a.judge: a for a in audit_judges(load_comparisons(store), verdict_counts(store))}
    late, terse = audits["late"], audits["terse"]
    assert late.first_position is not None and late.first_position.hits == 0
    second = wilson_interval(2 * n, 2 * n, 0.95)
    assert late.problems[0] == (
        f"the reply shown second won 100% [{100 * second[0]:.0f}–100%] of {2 * n} verdicts"
    )
    assert terse.longer is not None and terse.longer.hits == 0
    assert terse.cautions == (
        f"prefers the shorter reply (100% [{100 * second[0]:.0f}–100%] of {2 * n})",
    )


def test_every_source_is_audited_and_imported_verdicts_are_told_apart(store: Store) -> None:
    """An LLM judge heart called (its verdicts record their calls), a person in the web app
    (the choice recorded), and an LLM judge and a person from a judgments file (neither): all
    four are audited, LLM judges first, and only the file's verdicts count as imported."""
    judges = {"called": "llm", "filed-llm": "llm", "web": "human", "filed": "human"}
    verdicts = [
        Verdict(i, "m1", "m2", judge, "a" if i % 4 else "tie", order="ab" if i % 2 else "ba")
        for i in range(8)
        for judge in judges
    ]
    seed_verdicts(store, verdicts, sources=judges)
    with store.session() as s:
        s.get(JudgeRow, "called").family = "m1"
        s.get(SystemRow, "m2").family = "human"  # people wrote m2's replies
        for row in s.scalars(select(JudgmentRow)):
            if row.judge == "called":
                row.call_hash, row.raw = f"h-{row.id}", "{}"
            if row.judge == "web":
                row.raw = '{"choice": "A+", "checklist": []}'
    audits = audit_every_judge(store)
    assert [(a.judge, a.source, a.counts.imported, a.imported) for a in audits] == [
        ("called", "llm", 0, False),
        ("filed-llm", "llm", 8, True),
        ("filed", "human", 8, True),
        ("web", "human", 0, False),
    ]
    for a in audits:  # items 0 and 4 are ties: among the verdicts, out of every share
        assert (a.verdicts, a.ties, a.both_orders) == (8, 2, 0)
        assert a.first_position is not None and a.first_position.n == 6
        assert a.first_position.hits == 4  # a won on 1, 2, 3, 5, 6, 7; shown first on odd items
    # a person's "family" holds every human reply: no own-family share
    assert audits[0].own_family is not None and audits[2].own_family is None
