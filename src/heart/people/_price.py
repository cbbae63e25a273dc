"""The people's side of a study priced: seats of each kind of work (projected from the items,
pairs and sampled replies a run would have), the sessions of ``people.tasks_per_person`` they
make, the minutes a session takes, and what the crowd costs at ``people.pay_per_hour`` with the
platform's fee on top."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from heart.config import PeopleSpec
from heart.people._flow import TaskTime
from heart.people._tasks import KINDS


@dataclass(frozen=True)
class PeoplePlan:
    """Seats per kind (``seats``) and those already submitted (``done``); the sessions the
    seats left make, the minutes one takes and the hours of work in all; the pay, the
    platform's fee and their sum (None without ``people.pay_per_hour``); the time per task
    these rest on; the currency of the pay and the fee's share of it."""

    seats: Mapping[str, int]
    done: Mapping[str, int]
    tasks_per_session: int | None
    sessions: int | None
    session_minutes: float | None
    hours: float
    pay: float | None
    fee: float | None
    time: TaskTime
    currency: str = "£"
    fee_share: float = 1 / 3

    @property
    def left(self) -> int:
        return sum(self.seats.values()) - sum(self.done.values())

    @property
    def total(self) -> float | None:
        return None if self.pay is None or self.fee is None else self.pay + self.fee


def price_people(
    spec: PeopleSpec, seats: Mapping[str, int], done: Mapping[str, int], time: TaskTime
) -> PeoplePlan:
    """What the seats not yet submitted cost in people's time and pay. Sessions are paid
    whole, at the minutes their tasks take; with no ``tasks_per_person`` each seat is priced
    alone."""
    left = max(0, sum(seats.get(k, 0) for k in KINDS) - sum(done.get(k, 0) for k in KINDS))
    per = spec.tasks_per_person
    sessions = math.ceil(left / per) if per else None
    minutes = per * time.seconds / 60 if per else None
    paid_tasks = sessions * per if sessions is not None and per else left
    hours = paid_tasks * time.seconds / 3600
    pay = None if spec.pay_per_hour is None else hours * spec.pay_per_hour
    fee = None if pay is None else pay * spec.platform_fee
    return PeoplePlan(
        dict(seats),
        dict(done),
        per,
        sessions,
        minutes,
        hours,
        pay,
        fee,
        time,
        spec.currency,
        spec.platform_fee,
    )


def projected_seats(spec: PeopleSpec, items: int, pairs: int, replies: int) -> dict[str, int]:
    """The seats a study of ``items`` items, ``pairs`` pairs and ``replies`` usable replies
    gets (as the seat sync would add them): writers per item, raters per pair and per check,
    labellers per sampled reply."""
    checks = pairs // spec.check_every if spec.check_every else 0
    return {
        "write": items * spec.writers_per_item,
        "judge": (pairs + checks) * spec.raters_per_pair,
        "label": min(spec.label_completions, replies) * spec.labellers_per_completion,
    }
