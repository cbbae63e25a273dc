"""The seats sync_tasks builds: the sample of completions that get label seats stays the same
whatever the restarts, and only tops up to the configured number; checks stay one per
``check_every`` pairs as pairs are added."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from heart.config import PairsSpec, PeopleSpec
from heart.judging import build_pairs
from heart.people import LABEL, sync_tasks
from heart.store import CompletionRow, Store, TaskRow, open_store

from ..rows import seed_study

SPEC = PeopleSpec(check_every=0, label_completions=6)


def _sampled(store: Store) -> set[str]:
    """The completions that have label seats."""
    with store.session() as s:
        return set(s.scalars(select(TaskRow.target).where(TaskRow.kind == LABEL)))


def _systems(store: Store, completions: set[str]) -> Counter[str]:
    with store.session() as s:
        rows = s.scalars(select(CompletionRow.system).where(CompletionRow.id.in_(completions)))
        return Counter(rows)


def test_new_completions_and_restarts_keep_the_label_sample(store: Store) -> None:
    seed_study(store, ["m1", "m2", "m3"], items=4, completions=True)
    sync_tasks(store, SPEC, seed=5)
    first = _sampled(store)
    assert len(first) == 6
    assert _systems(store, first) == {"m1": 2, "m2": 2, "m3": 2}  # spread over systems
    seed_study(store, ["m1", "m2", "m3", "m4"], items=7, completions=True)  # a new system
    for _ in range(2):  # and restarts
        added = sync_tasks(store, SPEC, seed=5).added
        assert added["label"] == 0
        assert _sampled(store) == first


def test_a_small_sample_is_topped_up_to_the_configured_number_and_no_further(
    store: Store,
) -> None:
    seed_study(store, ["m1", "m2"], items=1, completions=True)
    sync_tasks(store, SPEC, seed=5)
    early = _sampled(store)
    assert early == {"cp-0-m1", "cp-0-m2"}
    seed_study(store, ["m1", "m2"], items=5, completions=True)
    sync_tasks(store, SPEC, seed=5)
    later = _sampled(store)
    assert len(later) == 6 and early < later
    assert _systems(store, later) == {"m1": 3, "m2": 3}
    seed_study(store, ["m1", "m2"], items=9, completions=True)
    sync_tasks(store, SPEC, seed=5)
    assert _sampled(store) == later


def _fresh_sample(path: Path, seed: int) -> set[str]:
    """The label sample of a new SQLite store at ``path`` holding 8 items of three systems."""
    other = open_store(f"sqlite:///{path}")
    try:
        seed_study(other, ["m1", "m2", "m3"], items=8, completions=True)
        sync_tasks(other, SPEC, seed=seed)
        return _sampled(other)
    finally:
        other.close()


def test_the_sample_depends_on_the_seed_and_the_completions_only(
    store: Store, tmp_path: Path
) -> None:
    seed_study(store, ["m1", "m2", "m3"], items=8, completions=True)
    sync_tasks(store, SPEC, seed=5)
    assert _fresh_sample(tmp_path / "again.db", seed=5) == _sampled(store)
    assert _fresh_sample(tmp_path / "reseeded.db", seed=6) != _sampled(store)


def _checks(store: Store) -> Counter[str]:
    """The check seats' targets, each with its seats."""
    with store.session() as s:
        return Counter(s.scalars(select(TaskRow.check).where(TaskRow.check.is_not(None))))


def test_pairs_added_after_the_seats_keep_one_check_per_check_every_pairs(store: Store) -> None:
    """Pairs that arrive while people work (a new system's) get their checks counted on from
    the pairs seated before, so checks stay one per ``check_every`` pairs, alternating gold
    and attention, however many times the pairs grow."""
    spec = PeopleSpec(check_every=4, raters_per_pair=1)
    seed_study(store, ["m1", "m2", "m3"], items=4, completions=True)
    build_pairs(store, PairsSpec(), seed=0)  # 12 pairs
    sync_tasks(store, spec, seed=5)
    assert _checks(store) == {"gold": 2, "attention": 1}
    seed_study(store, ["m1", "m2", "m3", "m4"], items=4, completions=True)
    build_pairs(store, PairsSpec(), seed=0)  # 24 pairs: m4's 12 sort among the others
    added = sync_tasks(store, spec, seed=5).added
    assert added["judge"] == 12 + 3  # the new pairs' seats and three more checks
    assert _checks(store) == {"gold": 3, "attention": 3}
    assert sync_tasks(store, spec, seed=5).added["judge"] == 0  # a restart adds nothing


def _analysed(store: Store) -> dict[str, int]:
    """PostgreSQL: how many times each table the claims read was analysed by hand."""
    with store.session() as s:
        rows = s.execute(
            text(
                "SELECT relname, analyze_count FROM pg_stat_user_tables "
                "WHERE relname IN ('tasks', 'pairs', 'completions', 'items')"
            )
        )
        return {name: int(count) for name, count in rows}


def test_seats_added_on_postgresql_are_planned_from_fresh_statistics(store: Store) -> None:
    """A new study's claims must not be planned for empty tables (autovacuum looks a minute or
    more later): a sync that adds seats analyses the tables the claims read; one that adds
    none leaves them."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite plans without gathered statistics")
    seed_study(store, ["m1", "m2"], items=3, completions=True)
    before = _analysed(store)
    assert sync_tasks(store, SPEC, seed=5).added["write"] > 0
    after = _analysed(store)
    assert all(after[t] == before.get(t, 0) + 1 for t in ("tasks", "pairs", "completions"))
    with store.session() as s:  # the planner now knows the seats are there
        estimate = s.scalar(text("SELECT reltuples FROM pg_class WHERE relname = 'tasks'"))
        stored = s.scalar(select(func.count()).select_from(TaskRow))
    assert estimate == stored
    sync_tasks(store, SPEC, seed=5)  # nothing new: no second look
    assert _analysed(store) == after
