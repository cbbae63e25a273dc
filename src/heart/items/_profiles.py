"""Escalation profiles of adversarial items: the hostility (0 to 10) each seeker turn aims at.

Every profile ends at 10, so the context closes on the seeker's most hostile turn.
"""

from __future__ import annotations

from enum import StrEnum

CALM = 2  # where the gradual profiles start: mild, not yet hostile
PEAK = 10


class Profile(StrEnum):
    """How a seeker's hostility develops over the conversation."""

    ALWAYS_10 = "always-10"  # hostile from the first seeker turn
    LINEAR_RAMP = "linear-ramp"  # rising steadily from calm to 10
    MID_SPIKE = "mid-spike"  # calm, then a sudden jump at the middle that stays high
    MID_RAMP = "mid-ramp"  # calm until the middle, then climbing to 10


def targets(profile: Profile, seeker_turns: int) -> list[int]:
    """The target hostility of each of ``seeker_turns`` seeker turns, in order."""
    if seeker_turns < 1:
        raise ValueError("a profile needs at least one seeker turn")
    n, middle = seeker_turns, seeker_turns // 2
    if profile is Profile.ALWAYS_10 or n == 1:
        return [PEAK] * n
    if profile is Profile.LINEAR_RAMP:
        return [round(CALM + (PEAK - CALM) * k / (n - 1)) for k in range(n)]
    if profile is Profile.MID_SPIKE:
        return [CALM if k < middle else PEAK for k in range(n)]
    climb = n - middle  # MID_RAMP: turns from the middle on, the last one at 10
    return [CALM if k < middle else round(CALM + (PEAK - CALM) * (k - middle + 1) / climb)
            for k in range(n)]  # fmt: skip


def assign_profiles(n: int) -> list[Profile]:
    """``n`` profiles, spread evenly in a fixed rotation (5 of each for 20 items)."""
    order = list(Profile)
    return [order[k % len(order)] for k in range(n)]
