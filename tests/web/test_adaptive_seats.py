"""The web app's judge seats under the adaptive pair design: people are offered the pairs of
the current round, and the next round is chosen from their verdicts once every seat of the
round is submitted, until the budget (without LLM judges: the most pairs). A real SQLite store,
the app as `heart serve` builds it, and people's claims and verdicts through the people API."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from sqlalchemy import select

from heart.judging import round_of
from heart.people import JUDGE, claim, invite, submit_judgment
from heart.stats import Candidate, Comparison, choose_pairs
from heart.store import CompletionRow, PairRow, Store, TaskRow
from heart.web import create_app

from ..rows import seed_study
from .conftest import ADMIN_TOKEN, SECRET, write_study

SYSTEMS = ("sysa", "sysb", "sysc", "sysd")  # the people prefer them in this order
ITEMS = 5
ROUND_SIZE = 8
BUDGET = 20  # pairs: rounds of 8, 8 and 4
SEED = 7
HOUR = 3600.0


def _study(root: Path, store: Store) -> None:
    write_study(root, store, {"check_every": 0, "raters_per_pair": 1}, SEED)
    config = yaml.safe_load((root / "study.yaml").read_text(encoding="utf-8"))
    config["pairs"] = {"design": "adaptive", "budget": BUDGET, "round_size": ROUND_SIZE}
    (root / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    seed_study(store, SYSTEMS, items=ITEMS, completions=True)


def _pairs(store: Store) -> dict[str, tuple[str, str, str, str]]:
    """Pair id -> (item, system of A, system of B, design)."""
    with store.session() as s:
        system = dict(s.execute(select(CompletionRow.id, CompletionRow.system)).all())
        return {
            p.id: (p.item_id, system[p.a_id], system[p.b_id], p.design)
            for p in s.scalars(select(PairRow))
        }


def _judge_seats(store: Store) -> Counter[bool]:
    """Judge seats, submitted (True) or open (False)."""
    with store.session() as s:
        return Counter(s.scalars(select(TaskRow.done).where(TaskRow.kind == JUDGE)))


def _judge(store: Store, rater: str, seats: int, said: list[Comparison]) -> None:
    """Judge ``seats`` seats, always for the reply of the system earlier in SYSTEMS, recording
    each verdict as a comparison of system indices."""
    pairs = _pairs(store)
    for _ in range(seats):
        task = claim(store, rater, JUDGE, now=0, seconds=HOUR)
        assert task is not None
        with store.session() as s:
            row = s.get(TaskRow, task)
            assert row is not None
            target, shown = row.target, row.shown
        item, a, b, _ = pairs[target]
        a_wins = SYSTEMS.index(a) < SYSTEMS.index(b)
        first_wins = a_wins if shown == "ab" else not a_wins
        submit_judgment(store, rater, task, "A+" if first_wins else "B+", "", now=1)
        said.append(Comparison(item, SYSTEMS.index(a), SYSTEMS.index(b), float(a_wins)))


def _expected_round(store: Store, said: list[Comparison], size: int) -> Counter[tuple[str, ...]]:
    """The next round as the selection rule picks it from the verdicts given (item and the two
    systems of each pair)."""
    stored = {(item, *sorted((a, b))) for item, a, b, _ in _pairs(store).values()}
    candidates = [
        Candidate(f"i{i}", x, y)
        for i in range(ITEMS)
        for x in range(len(SYSTEMS))
        for y in range(x + 1, len(SYSTEMS))
        if (f"i{i}", SYSTEMS[x], SYSTEMS[y]) not in stored
    ]
    chosen = choose_pairs(len(SYSTEMS), said, candidates, size, seed=SEED, verdicts_per_pair=1)
    return Counter(
        (candidates[n].item, SYSTEMS[candidates[n].a], SYSTEMS[candidates[n].b]) for n in chosen
    )


def _round(store: Store, number: int) -> Counter[tuple[str, ...]]:
    return Counter(
        (item, *sorted((a, b)))
        for item, a, b, design in _pairs(store).values()
        if round_of(design) == number
    )


def test_seats_follow_the_rounds_chosen_from_peoples_verdicts_up_to_the_budget(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "study"
    _study(root, store)
    said: list[Comparison] = []
    first = _expected_round(store, said, ROUND_SIZE)  # no verdicts yet: the balanced warm-up
    app = create_app(root, admin_token=ADMIN_TOKEN, secret=SECRET, seat_refresh=0)
    try:
        seats = app.state.web.seats
        assert _round(store, 1) == first and sum(first.values()) == ROUND_SIZE
        assert len({(a, b) for _, a, b in first}) == 6  # every pair of systems met
        assert _judge_seats(store) == {False: ROUND_SIZE}  # one seat per pair of the round
        ((rater, _),) = invite(store, 1)

        _judge(store, rater, ROUND_SIZE - 1, said)
        seats.refresh()
        assert len(_pairs(store)) == ROUND_SIZE  # one seat still open: the round waits
        _judge(store, rater, 1, said)
        second = _expected_round(store, said, ROUND_SIZE)
        assert seats.refresh()  # the round is complete: the next one, with its seats
        assert _round(store, 2) == second and sum(second.values()) == ROUND_SIZE
        assert _judge_seats(store) == {True: ROUND_SIZE, False: ROUND_SIZE}
        seats.refresh()  # nothing more while round 2 is open
        assert len(_pairs(store)) == 2 * ROUND_SIZE

        _judge(store, rater, ROUND_SIZE, said)
        third = _expected_round(store, said, ROUND_SIZE)
        seats.refresh()
        left = BUDGET - 2 * ROUND_SIZE  # the budget cuts round 3 short
        assert sum(_round(store, 3).values()) == left
        assert _round(store, 3) <= third
        _judge(store, rater, left, said)
        assert not seats.refresh()  # the budget is spent: no round 4
        assert len(_pairs(store)) == BUDGET
        assert _judge_seats(store) == {True: BUDGET}
        assert claim(store, rater, JUDGE, now=0, seconds=HOUR) is None
    finally:
        app.state.web.study.close()
