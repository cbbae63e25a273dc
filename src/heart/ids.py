"""Deterministic ids and the A/B order: the one place every stage, the web app and the importers
take them from.

Ids are derived from content, so a rerun, a second study or an import of the same work gets the
same ids. A pair is stored in a seeded order (its a and b); a judge sees it in one of two orders,
and :class:`Presentation` keeps the order shown and its inverse together, so a verdict given in
the shown terms is turned into the pair's terms by one rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from heart.types import Order, Shown, Side, sha256_hex, stable_id


def completion_id(item_id: str, system: str, contributor: str = "") -> str:
    """One system's reply to one item (people: one per contributor)."""
    return stable_id("cp-", item_id, system, contributor)


def pair_id(item_id: str, first: str, second: str) -> str:
    """The unordered pair of completions ``first`` and ``second`` of ``item_id``."""
    lo, hi = sorted((first, second))
    return stable_id("pr-", item_id, lo, hi)


def judgment_id(pair: str, judge: str, order: Order | str) -> str:
    """One judge's verdict on one pair in one presentation order."""
    return stable_id("jd-", pair, judge, str(order))


def label_id(completion: str, rater: str) -> str:
    """One person's strategy labels for one completion."""
    return stable_id("lb", completion, rater)


def coin(seed: int, *parts: str) -> int:
    """A deterministic 32-bit draw from the seed and ``parts``."""
    return int(sha256_hex("\x1f".join((str(seed), *parts)))[:8], 16)


def seeded_order(seed: int, item_id: str, first: str, second: str) -> tuple[str, str]:
    """The stored (a, b) order of a pair: a fair coin from the seed and the pair, so reruns
    and imports agree."""
    lo, hi = sorted((first, second))
    return (hi, lo) if coin(seed, pair_id(item_id, lo, hi)) & 1 else (lo, hi)


def seat_order(seed: int, seat: str) -> Order:
    """The order a person's judge seat is served in: a seeded coin per seat."""
    return Order.AB if coin(seed, seat) % 2 == 0 else Order.BA


@dataclass(frozen=True)
class Presentation:
    """A pair's replies ``a`` and ``b`` as one judge saw them, in ``order``."""

    a: str
    b: str
    order: Order

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", Order(self.order))  # as read from the store: a str

    @classmethod
    def of(cls, a: str, b: str, first: str) -> Presentation:
        """The presentation of pair (a, b) in which ``first`` was shown first."""
        if first not in (a, b):
            raise ValueError(f"{first!r} is neither reply of the pair ({a!r}, {b!r})")
        return cls(a, b, Order.AB if first == a else Order.BA)

    @property
    def first(self) -> str:
        return self.a if self.order is Order.AB else self.b

    @property
    def second(self) -> str:
        return self.b if self.order is Order.AB else self.a

    def to_pair(self, shown: Shown | str) -> Side:
        """A verdict given in the shown terms (A, B, tie, none) in the pair's terms."""
        side = Shown(shown)
        if side is Shown.TIE:
            return Side.TIE
        if side is Shown.NONE:
            return Side.NONE
        return Side.A if (side is Shown.FIRST) == (self.order is Order.AB) else Side.B

    def to_shown(self, side: Side | str) -> Shown:
        """The inverse of :meth:`to_pair`: a verdict in the pair's terms as the judge saw it."""
        pair_side = Side(side)
        if pair_side is Side.TIE:
            return Shown.TIE
        if pair_side is Side.NONE:
            return Shown.NONE
        return Shown.FIRST if (pair_side is Side.A) == (self.order is Order.AB) else Shown.SECOND


__all__ = [
    "Presentation",
    "coin",
    "completion_id",
    "judgment_id",
    "label_id",
    "pair_id",
    "seat_order",
    "seeded_order",
]
