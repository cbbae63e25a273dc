"""Classic sequential Elo, averaged over random orders of the comparisons."""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from heart.elo_orders import Indices, ratings_along, save_task
from heart.stats._bradley_terry import ELO_BASE
from heart.stats._types import BoolArray, FloatArray, IntArray
from heart.stats._wins import _check_pairs, _check_tie
from heart.worker import fresh_python_env

SHARED_STEPS = 2_000_000
"""Comparison updates (comparisons × orders) from which the orders are shared out among
``workers`` processes: below it, starting a process costs more than it saves."""


def online_elo(
    winner: IntArray,
    loser: IntArray,
    tie: BoolArray | None,
    n_systems: int,
    *,
    k_factor: float = 4.0,
    permutations: int = 100,
    seed: int = 0,
    workers: int = 1,
    shared_steps: int = SHARED_STEPS,
) -> FloatArray:
    """Sequential Elo ratings (K,), the mean over ``permutations`` random comparison orders.

    Every system starts at 1500; after each comparison the winner gains k·(s − E) and the loser
    loses as much, with E = 1/(1 + 10^((R_loser − R_winner)/400)) and s = 1, or 0.5 for a tie.
    Orders come from numpy PCG64 seeded by ``seed``; ``permutations=0`` uses the given order
    once. Online Elo depends on order and ignores outcome strength: an alternate ranker only.

    With ``workers`` > 1 and at least ``shared_steps`` updates in all, the orders are shared
    out among that many processes (this one among them); the result is the same to the bit.
    """
    w, lo = _check_pairs(winner, loser, n_systems)
    t = _check_tie(tie, w.size)
    if not (math.isfinite(k_factor) and k_factor > 0):
        raise ValueError(f"k_factor must be a positive number, got {k_factor}")
    if permutations < 0:
        raise ValueError(f"permutations must be zero or a positive integer, got {permutations}")

    n = w.size
    if permutations == 0:
        orders = np.arange(n)[None, :]
    else:
        rng = np.random.Generator(np.random.PCG64(seed))
        orders = rng.permuted(np.tile(np.arange(n), (permutations, 1)), axis=1)
    scores = np.where(t, 0.5, 1.0)
    parts = min(workers, len(orders)) if n * len(orders) >= shared_steps else 1
    chunks = np.array_split(orders, max(parts, 1))
    each = np.concatenate(_shared_out(w, lo, scores, chunks, n_systems, k_factor))
    total = np.zeros(n_systems)
    for ratings in each:  # summed in order of the orders, as one process would
        total += ratings
    result: FloatArray = total / len(orders)
    return result


def _shared_out(
    w: IntArray, lo: IntArray, scores: FloatArray, chunks: Sequence[Indices], n_systems: int,
    k_factor: float,
) -> list[FloatArray]:  # fmt: skip
    """``ratings_along`` on each chunk of orders: the first in this process, each other one in
    a helper process of its own started beside it (a chunk whose helper fails is run here)."""
    if len(chunks) == 1:
        return [ratings_along(w, lo, scores, chunks[0], n_systems, k_factor, ELO_BASE)]
    env = fresh_python_env()
    with tempfile.TemporaryDirectory(prefix="heart-elo-") as folder:
        helpers = []
        try:
            for n, chunk in enumerate(chunks[1:]):
                task, out = Path(folder) / f"{n}.npz", Path(folder) / f"{n}.npy"
                save_task(task, w, lo, scores, chunk, n_systems, k_factor, ELO_BASE)
                command = [sys.executable, "-m", "heart.elo_orders", str(task), str(out)]
                quiet = subprocess.DEVNULL
                helper = subprocess.Popen(command, env=env, stdin=quiet, stdout=quiet, stderr=quiet)
                helpers.append((helper, out))
            results = [ratings_along(w, lo, scores, chunks[0], n_systems, k_factor, ELO_BASE)]
            for (helper, out), chunk in zip(helpers, chunks[1:], strict=True):
                if helper.wait() == 0 and out.is_file():
                    results.append(np.load(out))
                else:
                    results.append(
                        ratings_along(w, lo, scores, chunk, n_systems, k_factor, ELO_BASE)
                    )
        finally:  # interrupted: no helper is left running
            for helper, _ in helpers:
                if helper.poll() is None:
                    helper.kill()
                    helper.wait()
    return results
