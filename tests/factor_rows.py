"""Verdicts simulated from a known factor model of the five HEART axes, as store rows or as
in-memory comparisons, for the factor-structure tests."""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from heart.analyses import Comparisons
from heart.types import Axis

from .rows import Verdict

AXES = [a.value for a in Axis]
ONE_FACTOR = np.array([[0.85], [0.8], [0.8], [0.75], [0.7]])
TWO_FACTORS = np.array([[0.85, 0.0], [0.8, 0.0], [0.8, 0.0], [0.0, 0.85], [0.0, 0.8]])
"""H, E, A on one skill; R, T on another, the two correlating at 0.3."""
TWO_PHI = np.array([[1.0, 0.3], [0.3, 1.0]])


def simulate_verdicts(
    items: int,
    systems: int,
    loadings: npt.NDArray[np.float64] = ONE_FACTOR,
    phi: npt.NDArray[np.float64] | None = None,
    *,
    judge: str = "g",
    seed: int = 0,
) -> list[Verdict]:
    """Every pair of ``systems`` systems on each of ``items`` items, judged once by ``judge``:
    each completion has a quality per axis drawn from the factor model; an axis goes to the
    reply with the higher quality plus noise, with a strength that grows with the gap (a small
    gap is "none"), and the overall winner is the side the axes favour on average."""
    rng = np.random.default_rng(seed)
    m = loadings.shape[1]
    phi = np.eye(m) if phi is None else phi
    common = np.sum((loadings @ phi) * loadings, axis=1)
    names = [f"m{s}" for s in range(systems)]
    out = []
    for i in range(items):
        f = rng.multivariate_normal(np.zeros(m), phi, size=systems)
        quality = f @ loadings.T + rng.normal(size=(systems, 5)) * np.sqrt(1 - common)
        for x, y in itertools.combinations(range(systems), 2):
            gap = quality[x] - quality[y] + rng.normal(0.0, 0.4, 5)
            strength = np.clip(np.ceil(np.abs(gap) * 1.5), 1, 5).astype(int)
            axes = {
                a: {"winner": "none", "strength": 0}
                if abs(g) < 0.1
                else {"winner": "a" if g > 0 else "b", "strength": int(s)}
                for a, g, s in zip(AXES, gap, strength, strict=True)
            }
            overall = float(gap.mean())
            out.append(
                Verdict(i, names[x], names[y], judge, "a" if overall > 0 else "b",
                        int(np.clip(np.ceil(abs(overall) * 1.5), 1, 5)), axes=axes)
            )  # fmt: skip
    return out


def as_comparisons(verdicts: list[Verdict], sources: dict[str, str] | None = None) -> Comparisons:
    """The comparisons ``load_comparisons`` would read from these verdicts once stored (item i
    in conversation c{i}; a verdict with no axes judged none)."""
    sources = sources or {}
    systems = sorted({v.a.split("/")[0] for v in verdicts} | {v.b.split("/")[0] for v in verdicts})
    judges = sorted({v.judge for v in verdicts})
    items = sorted({v.item for v in verdicts})
    completions = sorted({f"cp-{v.item}-{c}" for v in verdicts for c in (v.a, v.b)})
    codes = {"a": 0, "b": 1, "tie": 2, "none": 2}
    n = len(verdicts)

    def ints(values: list[int]) -> npt.NDArray[np.int64]:
        return np.asarray(values, dtype=np.int64).reshape(n)

    outcome = ints([codes[v.winner] for v in verdicts])
    axis_outcome = np.asarray(
        [[codes[v.axes[a]["winner"]] if a in v.axes else 2 for a in AXES] for v in verdicts],
        dtype=np.int64,
    ).reshape(n, 5)
    axis_strength = np.asarray(
        [[float(v.axes[a]["strength"]) if a in v.axes else 0.0 for a in AXES] for v in verdicts]
    ).reshape(n, 5)
    axis_given = np.asarray([[a in v.axes for a in AXES] for v in verdicts]).reshape(n, 5)
    return Comparisons(
        systems=systems,
        judges=judges,
        conversations=[f"c{i}" for i in items],
        a=ints([systems.index(v.a.split("/")[0]) for v in verdicts]),
        b=ints([systems.index(v.b.split("/")[0]) for v in verdicts]),
        outcome=outcome,
        strength=np.asarray([float(v.strength) for v in verdicts]).reshape(n),
        axis_outcome=axis_outcome,
        judge=ints([judges.index(v.judge) for v in verdicts]),
        conversation=ints([items.index(v.item) for v in verdicts]),
        first_won=outcome == 0,
        length_a=ints([2] * n),
        length_b=ints([2] * n),
        pair=ints(list(range(n))),
        order_ab=np.ones(n, dtype=bool),
        system_kinds=["model"] * len(systems),
        system_families=systems,
        judge_families=judges,
        judge_sources=[sources.get(j, "llm") for j in judges],
        items=[f"i{i}" for i in items],
        item=ints([items.index(v.item) for v in verdicts]),
        item_subsets=["regular"] * len(items),
        completions=completions,
        completion_a=ints([completions.index(f"cp-{v.item}-{v.a}") for v in verdicts]),
        completion_b=ints([completions.index(f"cp-{v.item}-{v.b}") for v in verdicts]),
        axis_strength=axis_strength,
        axis_given=axis_given,
        judgments=[f"v{k}" for k in range(n)],
    )
