"""Seats kept in step with the store while the server runs: items, pairs and replies that other
commands store (a new system's replies and pairs, new items) become seats without a restart.
Under the adaptive pair design, the next round's pairs are added once the current round has all
its verdicts, and get their seats at once."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, OperationalError

from heart.config import PairDesign, PeopleSpec
from heart.judging import add_round
from heart.people import JUDGE, KINDS, LABEL, sync_tasks
from heart.store import CompletionRow, ItemRow, JudgmentRow, PairRow, Store, TaskRow
from heart.study import Study
from heart.types import Status

log = logging.getLogger("heart.web")

SEAT_REFRESH = 10.0
"""Seconds between looks for new work while the server runs."""

Sources = tuple[int, int, int]
"""How many items, pairs and valid replies the store holds: what seats are made from (replies
only while the label sample has room, see seat_sources)."""


def seat_sources(store: Store, people: PeopleSpec) -> Sources:
    """The store's items and pairs, and its valid replies while the label sample has room for
    them, counted in one query. A full sample (``people.label_completions`` replies seated for
    labels, or none wanted) takes no more replies, so a reply people write while the server
    runs changes nothing here and costs no sync."""
    counts = (
        select(func.count()).select_from(ItemRow).scalar_subquery(),
        select(func.count()).select_from(PairRow).scalar_subquery(),
        select(func.count())
        .select_from(CompletionRow)
        .where(CompletionRow.status == Status.OK)
        .scalar_subquery(),
        select(func.count(func.distinct(TaskRow.target)))
        .where(TaskRow.kind == LABEL)
        .scalar_subquery(),
    )
    with store.session() as s:
        items, pairs, replies, sampled = s.execute(select(*counts)).one()
    room = int(sampled) < people.label_completions
    return int(items), int(pairs), int(replies) if room else 0


Progress = tuple[int, int, int, int]
"""How many pairs, verdicts, valid replies and submitted judge seats the store holds: what the
next adaptive round depends on."""


def round_progress(store: Store) -> Progress:
    """The store's pairs, verdicts, valid replies and submitted judge seats, in one query."""
    counts = (
        select(func.count()).select_from(PairRow).scalar_subquery(),
        select(func.count()).select_from(JudgmentRow).scalar_subquery(),
        select(func.count())
        .select_from(CompletionRow)
        .where(CompletionRow.status == Status.OK)
        .scalar_subquery(),
        select(func.count()).where(TaskRow.kind == JUDGE, TaskRow.done.is_(True)).scalar_subquery(),
    )
    with store.session() as s:
        pairs, verdicts, replies, submitted = s.execute(select(*counts)).one()
    return int(pairs), int(verdicts), int(replies), int(submitted)


@dataclass
class Seats:
    """Adds the seats the store's new items, pairs and replies call for, and remembers when it
    last added some (for the admin page). Safe to call from any thread; a look that finds
    nothing new costs one query and waits for no other look."""

    store: Store
    people: PeopleSpec
    seed: int
    every: float  # seconds between looks while the server runs (0: none between requests)
    started_at: float = field(default_factory=time.time)
    added_at: float | None = None  # when a sync last added seats
    added: dict[str, int] = field(default_factory=dict)  # what that sync added, per kind
    rounds: Callable[[], int] | None = None  # adds the next adaptive round when it is due
    _seen: Sources | None = None
    _progress: Progress | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> bool:
        """Add the next adaptive round when it is due, then the missing seats when the store's
        items, pairs or replies changed since the last look; whether any seats were added."""
        if self.rounds is not None:
            self._next_round(self.rounds)
        if seat_sources(self.store, self.people) == self._seen:
            return False  # the common case, without queueing behind a sync in another thread
        with self._lock:
            sources = seat_sources(self.store, self.people)
            if sources == self._seen:
                return False
            try:
                counts = sync_tasks(self.store, self.people, self.seed)
            except (IntegrityError, OperationalError) as exc:
                # another server on the same store added them first, or held it locked: the
                # next look tries again
                log.warning("seats not added this time, will look again: %s", exc.orig)
                return False
            self._seen = sources
            if not any(counts.added.values()):
                return False
            self.added_at = time.time()
            self.added = {kind: counts.added[kind] for kind in KINDS if counts.added[kind]}
            return True

    def _next_round(self, rounds: Callable[[], int]) -> None:
        """Ask for the next round when pairs, verdicts, replies or submitted seats changed
        since the last ask (a round is chosen from those alone)."""
        if round_progress(self.store) == self._progress:
            return
        with self._lock:
            progress = round_progress(self.store)
            if progress == self._progress:
                return
            try:
                rounds()
            except (IntegrityError, OperationalError) as exc:
                # another server or `heart judge` added the round first, or held the store
                log.warning("next round not added this time, will look again: %s", exc.orig)
                return
            self._progress = progress

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Look for new work every ``every`` seconds while the server runs."""
        if self.every <= 0:
            yield
            return

        async def keep_looking() -> None:
            while True:
                await asyncio.sleep(self.every)
                try:
                    await asyncio.to_thread(self.refresh)
                except Exception:  # a store gone for a moment must not end the server
                    log.exception("looking for new seats failed; will look again")

        task = asyncio.create_task(keep_looking())
        try:
            yield
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task


def study_seats(study: Study, every: float) -> Seats:
    """The seats of ``study``, following its rounds under the adaptive pair design."""
    adaptive = study.config.pairs.design is PairDesign.ADAPTIVE
    return Seats(
        study.store,
        study.config.people,
        study.config.seed,
        every=every,
        rounds=(lambda: add_round(study)) if adaptive else None,
    )
