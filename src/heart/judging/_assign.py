"""The judge ensemble's schedule: which judges rate which pair.

A judge is eligible for a pair unless one of the two replies comes from its own family. With
``judges_per_pair`` unset every eligible judge rates the pair; otherwise each pair gets that many
eligible judges, most constrained pairs first, each time the judges with the lightest load, so
loads stay even wherever eligibility allows. Judges that already rated a pair keep it, so adding
systems or items never moves old work.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from heart.ids import coin


@dataclass(frozen=True)
class PairFamilies:
    """A pair and the families of its two replies."""

    pair_id: str
    families: tuple[str, str]


@dataclass(frozen=True)
class EnsembleJudge:
    name: str
    family: str


@dataclass
class Schedule:
    """Judges per pair, with what could not be covered."""

    judges: dict[str, list[str]] = field(default_factory=dict)
    short: list[str] = field(default_factory=list)  # pairs with fewer eligible judges than asked
    unjudgeable: list[str] = field(default_factory=list)  # pairs no judge may rate

    def loads(self) -> Counter[str]:
        """Pairs per judge."""
        return Counter(j for names in self.judges.values() for j in names)


def eligible(judge: EnsembleJudge, pair: PairFamilies, own_family: str) -> bool:
    """Whether ``judge`` may rate ``pair`` under the study's own-family rule."""
    return own_family == "allow" or judge.family not in pair.families


def schedule_judges(
    pairs: Sequence[PairFamilies],
    judges: Sequence[EnsembleJudge],
    *,
    per_pair: int | None,
    own_family: str,
    seed: int,
    kept: dict[str, set[str]] | None = None,
) -> Schedule:
    """Assign judges to ``pairs``; ``kept`` holds the judges that already rated each pair."""
    kept = kept or {}
    schedule = Schedule()
    options = {p.pair_id: [j.name for j in judges if eligible(j, p, own_family)] for p in pairs}
    load: Counter[str] = Counter({j.name: 0 for j in judges})

    def tiebreak(pair: str, judge: str = "") -> int:
        return coin(seed, pair, judge)

    chosen: dict[str, list[str]] = {}
    for p in pairs:
        chosen[p.pair_id] = [j for j in options[p.pair_id] if j in kept.get(p.pair_id, set())]
        load.update(chosen[p.pair_id])
    for p in sorted(pairs, key=lambda p: (len(options[p.pair_id]), tiebreak(p.pair_id))):
        pid, names = p.pair_id, options[p.pair_id]
        if not names:
            schedule.unjudgeable.append(pid)
            continue
        want = len(names) if per_pair is None else per_pair
        if len(names) < want:
            schedule.short.append(pid)
        free = sorted(
            (j for j in names if j not in chosen[pid]), key=lambda j: (load[j], tiebreak(pid, j))
        )
        for judge in free[: max(0, want - len(chosen[pid]))]:
            chosen[pid].append(judge)
            load[judge] += 1
    order = {j.name: i for i, j in enumerate(judges)}
    schedule.judges = {
        pid: sorted(names, key=order.__getitem__) for pid, names in chosen.items() if names
    }
    return schedule
