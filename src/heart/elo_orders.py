"""Sequential Elo along given orders of the comparisons, in plain floats: the inner loop of
``heart.stats.online_elo``, kept apart from ``heart.stats`` so that a helper process running
some of the orders (``python -m heart.elo_orders IN OUT``) imports only numpy."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Indices = npt.NDArray[np.integer[Any]]
Floats = npt.NDArray[np.floating[Any]]


def ratings_along(
    winner: Indices,
    loser: Indices,
    score: Floats,
    orders: Indices,
    n_systems: int,
    k_factor: float,
    start: float,
) -> npt.NDArray[np.float64]:
    """The ratings (orders, K) after the comparisons in each order of ``orders`` (one order a
    row), every system starting at ``start``: after each comparison, the winner gains k·(s − E)
    and the loser loses as much."""
    per_elo = math.log(10.0) / 400.0  # 10^(x/400) = e^(x·per_elo)
    exp = math.exp
    out = np.empty((len(orders), n_systems))
    for row, order in enumerate(orders):  # plain floats in one order's sequence: faster
        ratings = [start] * n_systems
        sequence = zip(
            winner[order].tolist(), loser[order].tolist(), score[order].tolist(), strict=True
        )
        for a, b, s in sequence:
            ra, rb = ratings[a], ratings[b]
            delta = k_factor * (s - 1.0 / (1.0 + exp((rb - ra) * per_elo)))
            ratings[a], ratings[b] = ra + delta, rb - delta
        out[row] = ratings
    return out


def save_task(
    path: Path,
    winner: Indices,
    loser: Indices,
    score: Floats,
    orders: Indices,
    n_systems: int,
    k_factor: float,
    start: float,
) -> None:
    """Write the arguments of ``ratings_along`` for a helper process to ``path`` (.npz)."""
    np.savez(
        path, winner=winner, loser=loser, score=score, orders=orders,
        settings=np.asarray([n_systems, k_factor, start], dtype=np.float64),
    )  # fmt: skip


def run_task(task: Path, out: Path) -> None:
    """``ratings_along`` on the arguments saved at ``task``, its result saved at ``out`` (.npy)."""
    with np.load(task) as data:
        n_systems, k_factor, start = data["settings"].tolist()
        ratings = ratings_along(
            data["winner"], data["loser"], data["score"], data["orders"], int(n_systems),
            k_factor, start,
        )  # fmt: skip
    np.save(out, ratings)


if __name__ == "__main__":
    run_task(Path(sys.argv[1]), Path(sys.argv[2]))
