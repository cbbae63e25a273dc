"""Quality flags on a rater, each with its reason, and what to do about the rater.

Flags come from the measures (heart.people._measures) and need evidence: those read off
verdicts wait for ``MIN_VERDICTS`` of them, and a share is only a problem when its interval at
``RATER_LEVEL`` is clear of the line. The interval is wider than the audit's 95% because a rater
is looked at again and again as they work (every 5 judge seats): at 95%, an honest rater would
be flagged by chance about one time in ten over a few dozen verdicts. ``people.exclude_flags``
picks the flags that exclude.

The decision follows Prolific's rules: a participant in a session of 5 minutes or more may be
asked to return a submission only after failing at least two fair, explicit attention checks.
So a rater excluded for failed attention checks (two or more) is asked to return; one excluded
for anything else is kept out of the analyses but approved; everyone else is approved. Gold
pairs measure quality, and never count as attention checks.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, replace

from heart.analyses import position_problem
from heart.config import PeopleSpec
from heart.people._measures import FLOOR_WORDS_PER_MINUTE, RaterMeasures

MIN_VERDICTS = 20
"""Verdicts on real pairs (or timed seats, for speed) before a flag is read off them."""
RATER_LEVEL = 0.995
"""The interval level of the shares that flag a rater."""
RUN_LIMIT = 10
"""One answer this many times in a row is straight-lining."""
GOLD_FAILS = 2
"""Failed gold pairs, half or more of those taken, that flag a rater."""
PROLIFIC_FAILS = 2
"""Failed attention checks Prolific asks for before a submission may be returned."""

NUDGE_FIRST = ("speed", "run")
"""Flags a rater is warned of before they exclude (Prolific's advice: warn, then act): raised
by how someone works, which a nudge can change, unlike failed checks."""
NUDGE_TIMED = 10
"""Timed judge seats before a majority of them faster than reading brings a nudge."""
NUDGE_RUN = 6
"""One answer this many times in a row brings a nudge."""

APPROVE, RETURN, KEEP_OUT = "approve", "return", "keep out"
DECISIONS = (APPROVE, RETURN, KEEP_OUT)


@dataclass(frozen=True)
class RaterFlag:
    """A quality flag: its ``name`` (a value of ``people.exclude_flags``), why it was raised,
    and whether the study's settings make it exclude the rater."""

    name: str
    reason: str
    excludes: bool


def _speed(m: RaterMeasures) -> str | None:
    if m.timed < MIN_VERDICTS or m.too_fast is None or not m.too_fast.low > 0.5:
        return None
    return (
        f"{m.too_fast.text()} judgments were given faster than their text can be read at "
        f"{FLOOR_WORDS_PER_MINUTE} words a minute (median {m.median_seconds:.0f} s against a "
        f"floor of {m.median_floor:.0f} s)"
    )


def _agreement(m: RaterMeasures) -> str | None:
    if m.shared < MIN_VERDICTS or m.agreement is None or math.isnan(m.kappa) or m.kappa > 0:
        return None
    return (
        f"agrees with the other raters' majority on {m.agreement.text()} shared pairs, no "
        f"better than chance (κ = {m.kappa:.2f})"
    )


def flag_reasons(m: RaterMeasures, spec: PeopleSpec) -> dict[str, str]:
    """Every flag the measures raise, by name, with its reason."""
    reasons: dict[str, str | None] = {
        "attention": (
            f"failed {m.attention_failed} of {m.attention} attention checks"
            if m.attention_failed >= spec.checks_to_exclude
            else None
        ),
        "position": position_problem(m.first_shown) if m.verdicts >= MIN_VERDICTS else None,
        "speed": _speed(m),
        "run": (
            f"gave “{m.run_answer}” {m.longest_run} times in a row"
            if m.verdicts >= MIN_VERDICTS and m.longest_run >= RUN_LIMIT
            else None
        ),
        "agreement": _agreement(m),
        "gold": (
            f"failed {m.gold_failed} of {m.gold} gold pairs (the original reply against a "
            "dismissive one)"
            if m.gold_failed >= GOLD_FAILS and 2 * m.gold_failed >= m.gold
            else None
        ),
    }
    return {name: reason for name, reason in reasons.items() if reason}


def rater_flags(m: RaterMeasures, spec: PeopleSpec) -> tuple[RaterFlag, ...]:
    """The rater's flags; those named in ``people.exclude_flags`` exclude."""
    return tuple(
        RaterFlag(name, reason, name in spec.exclude_flags)
        for name, reason in flag_reasons(m, spec).items()
    )


def nudge_reasons(m: RaterMeasures) -> dict[str, str]:
    """What a rater is warned of, by flag name: the first signs of a flag of NUDGE_FIRST (most
    of ``NUDGE_TIMED`` or more timed seats faster than reading; a run of ``NUDGE_RUN``), worded
    for the rater."""
    reasons = {}
    if m.timed >= NUDGE_TIMED and m.too_fast is not None and 2 * m.too_fast.hits > m.too_fast.n:
        reasons["speed"] = (
            f"{m.too_fast.hits} of your {m.too_fast.n} answers came faster than the conversation "
            "and the two replies can be read"
        )
    if m.longest_run >= NUDGE_RUN:
        reasons["run"] = f"you gave “{m.run_answer}” {m.longest_run} times in a row"
    return reasons


def after_review(
    flags: tuple[RaterFlag, ...], nudged: Collection[str], cleared: Collection[str]
) -> tuple[RaterFlag, ...]:
    """The flags as they act on a rater: one of NUDGE_FIRST excludes only once the rater was
    warned of it (``nudged``), and none that the study team cleared on reinstating them
    (``cleared``) excludes again."""
    return tuple(
        replace(f, excludes=False)
        if f.excludes and (f.name in cleared or (f.name in NUDGE_FIRST and f.name not in nudged))
        else f
        for f in flags
    )


def rule_of(flag: RaterFlag, spec: PeopleSpec) -> str:
    """The setting that made ``flag`` exclude."""
    if flag.name == "attention":
        return f"people.checks_to_exclude: {spec.checks_to_exclude}"
    return "people.exclude_flags"


def exclusion_reason(flags: tuple[RaterFlag, ...], spec: PeopleSpec) -> str | None:
    """Why the flags exclude the rater, each with its rule; None when none excludes."""
    parts = [f"{f.name} ({rule_of(f, spec)}): {f.reason}" for f in flags if f.excludes]
    return "; ".join(parts) or None


def decide(m: RaterMeasures, flags: tuple[RaterFlag, ...], excluded: str | None) -> tuple[str, str]:
    """Approve, ask to return, or keep out of the analyses (and why), by Prolific's rules."""
    pay = "approve the payment: Prolific asks for two failed attention checks before a return"
    attention = next((f for f in flags if f.name == "attention" and f.excludes), None)
    if attention and m.attention_failed >= PROLIFIC_FAILS:
        return RETURN, (
            f"{attention.reason}: by Prolific's rules (two failed explicit checks in a session "
            "of 5 minutes or more) they may be asked to return the submission"
        )
    if excluded:
        return KEEP_OUT, f"excluded ({excluded}); {pay}"
    if flags:
        names = ", ".join(f.name for f in flags)
        return APPROVE, f"flagged for a look ({names}), no flag excludes them"
    return APPROVE, "no quality flag"
