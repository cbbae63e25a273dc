"""The seats sync_tasks builds: the sample of completions that get label seats stays the same
whatever the restarts, and only tops up to the configured number."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sqlalchemy import select

from heart.config import PeopleSpec
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
