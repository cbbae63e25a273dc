"""Samples of completions spread evenly over systems, seeded and stable as a study grows: what
was sampled stays, and adding a completion never moves the others."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from heart.ids import coin


def spread_sample(
    members: Iterable[tuple[str, str]], kept: set[str], n: int, seed: int, salt: str
) -> list[str]:
    """The ids to add to ``kept`` so that ``n`` members are sampled. ``members`` are (id,
    group) pairs; each group's members come in a seeded order of their own (``salt`` tells
    samples apart), drawn from the groups with the fewest sampled first."""
    queues: dict[str, list[tuple[int, str]]] = defaultdict(list)
    taken: Counter[str] = Counter()
    for member, group in members:
        if member in kept:
            taken[group] += 1
        else:
            queues[group].append((coin(seed, salt, member), member))
    for queue in queues.values():
        queue.sort(reverse=True)  # the first in the seeded order is popped first
    out: list[str] = []
    while len(kept) + len(out) < n and any(queues.values()):
        group = min((g for g, q in queues.items() if q), key=lambda g: (taken[g], g))
        _, member = queues[group].pop()
        taken[group] += 1
        out.append(member)
    return out
