"""The human consensus on one completion's strategies: those chosen by more than half of its
labellers. A strategy chosen by exactly half of them is a disagreement: the completion is listed
for review and left out of the classifier's F1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Consensus:
    """One completion's labellers (``choices``: labeller → strategies they chose), the
    strategies more than half of them chose, and those exactly half chose (``split``)."""

    completion_id: str
    choices: dict[str, tuple[str, ...]]
    strategies: tuple[str, ...]
    split: tuple[str, ...]

    @property
    def labellers(self) -> int:
        return len(self.choices)

    @property
    def disagreement(self) -> bool:
        return bool(self.split)


def consensus(completion_id: str, choices: Mapping[str, Iterable[str]]) -> Consensus:
    """The consensus of ``choices`` (labeller → the strategies they chose; a strategy named
    twice by one labeller counts once)."""
    kept = {rater: tuple(sorted(set(chosen))) for rater, chosen in sorted(choices.items())}
    votes = Counter(s for chosen in kept.values() for s in chosen)
    n = len(kept)
    return Consensus(
        completion_id=completion_id,
        choices=kept,
        strategies=tuple(sorted(s for s, v in votes.items() if 2 * v > n)),
        split=tuple(sorted(s for s, v in votes.items() if 2 * v == n)),
    )
