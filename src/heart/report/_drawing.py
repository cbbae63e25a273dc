"""Drawing the report's figures. Each figure is a module-level function and its data (picklable),
so on a large study they are drawn in a worker process on the other core while this one writes
the Markdown, the CSV tables and the provenance; the worker is started before the figures are
known, so that its imports (the report, matplotlib) are made while the facts are gathered. The
PNG bytes are the same as drawn in this process."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlalchemy import func, select

from heart.report._aside import worth_aside
from heart.store import JudgmentRow, Store
from heart.types import Status
from heart.worker import Worker

FIGURE_MODULES = ("heart.report", "matplotlib.figure", "matplotlib.backends.backend_agg")
"""What the worker imports while it waits for the figures: what drawing them needs."""


def draw_figures(figures: Mapping[str, Callable[[], bytes]]) -> dict[str, bytes]:
    """Every figure's PNG bytes, by key."""
    return {key: draw() for key, draw in figures.items()}


class FiguresAside:
    """The report's figures drawn in a worker process, started now: given the figures by
    ``draw``, their bytes taken by ``result``. ``close`` (or leaving a ``with`` block) stops it,
    whatever happened; a failure of the worker comes out of ``result`` as ``WorkerFailed``."""

    def __init__(self) -> None:
        self._worker = Worker.started(preload=FIGURE_MODULES)

    def draw(self, figures: Mapping[str, Callable[[], bytes]]) -> None:
        """Start drawing ``figures`` (key → draw) in the worker."""
        self._worker.submit(draw_figures, dict(figures))

    def result(self) -> dict[str, bytes]:
        """The PNG bytes of the figures given to ``draw``, by key; the worker is closed."""
        try:
            drawn: dict[str, bytes] = next(self._worker.results())
            return drawn
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker, done or not."""
        self._worker.close()

    def __enter__(self) -> FiguresAside:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _valid_verdicts(store: Store) -> int:
    """The valid verdicts stored: a quick count of the study's size (the few that the analyses
    leave out are counted too; their rule costs a query twenty times as long)."""
    with store.session() as s:
        query = select(func.count()).select_from(JudgmentRow)
        return s.scalar(query.where(JudgmentRow.status == Status.OK)) or 0


def figures_aside(store: Store) -> FiguresAside | None:
    """A ``FiguresAside`` started now when the study in ``store`` is large (``worth_aside``),
    else None: its figures are drawn in this process."""
    return FiguresAside() if worth_aside(_valid_verdicts(store)) else None
