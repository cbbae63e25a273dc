"""What the adversarial stage made: per escalation profile, conversations rewritten, kept and
rejected by reason; each kept item's targets and rated hostility; and how far the hostility
rater can be trusted (it is the only check that a rewrite is as hostile as asked)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import spearmanr
from sqlalchemy import select

from heart.store import RewriteRow, Store

MIN_TURNS_TO_JUDGE = 6  # rated turns below which the rater's figures are only shown
MIN_SEPARATION = 2.0  # rewritten turns must be rated this much above the calm originals
MIN_SPEARMAN = 0.5  # and follow the targets at least this closely


@dataclass(frozen=True)
class ProfileOutcome:
    profile: str
    rewritten: int
    kept: int
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> rewrites


@dataclass(frozen=True)
class KeptHostility:
    item_id: str
    profile: str
    targets: list[int]
    ratings: list[int]


@dataclass(frozen=True)
class RaterCheck:
    """The hostility rater against the targets (over every rewrite it rated) and against the
    calm original seeker turns, which it should rate low."""

    turns: int
    mean_error: float  # mean |rating - target| over the rated rewritten turns
    spearman: float  # of ratings against targets
    rewritten_mean: float
    original_mean: float
    tolerance: int
    problems: tuple[str, ...]
    cautions: tuple[str, ...]

    @property
    def flagged(self) -> bool:
        return bool(self.problems)


@dataclass(frozen=True)
class AdversarialReport:
    profiles: list[ProfileOutcome]
    kept: list[KeptHostility]
    rater: RaterCheck

    @property
    def rewritten(self) -> int:
        return sum(p.rewritten for p in self.profiles)


def _mean(values: list[int]) -> float:
    return float(np.mean(values)) if values else float("nan")


def _rater_check(rows: list[RewriteRow], tolerance: int) -> RaterCheck:
    rated = [
        (t, r) for row in rows if row.ratings for t, r in zip(row.targets, row.ratings, strict=True)
    ]
    targets = [t for t, _ in rated]
    ratings = [r for _, r in rated]
    originals = [r for row in rows for r in row.source_ratings]
    error = _mean([abs(t - r) for t, r in rated])
    rho = float("nan")
    if len(set(targets)) > 1 and len(set(ratings)) > 1:
        rho = float(spearmanr(targets, ratings).statistic)
    separation = _mean(ratings) - _mean(originals)
    problems, cautions = [], []
    if rated and originals and separation <= 0:  # damning however few turns were rated
        problems.append(
            f"it rates the rewritten turns (mean {_mean(ratings):.1f}) no higher than the calm "
            f"originals (mean {_mean(originals):.1f})"
        )
    if len(rated) < MIN_TURNS_TO_JUDGE:
        cautions.append(f"only {len(rated)} rewritten turns were rated: too few to judge the rater")
    else:
        if 0 < separation < MIN_SEPARATION:
            problems.append(
                f"it rates the rewritten turns (mean {_mean(ratings):.1f}) barely above the calm "
                f"originals (mean {_mean(originals):.1f})"
            )
        if not rho >= MIN_SPEARMAN:
            problems.append(f"its ratings do not follow the targets (Spearman ρ {rho:.2f})")
        if error > tolerance:
            problems.append(f"its ratings miss the targets by {error:.1f} on average")
    return RaterCheck(
        len(rated), error, rho, _mean(ratings), _mean(originals), tolerance,
        tuple(problems), tuple(cautions),
    )  # fmt: skip


def adversarial_report(store: Store, tolerance: int) -> AdversarialReport | None:
    """The stage's outcome from the store, or None when it has not run."""
    with store.session() as session:
        rows = list(session.scalars(select(RewriteRow).order_by(RewriteRow.id)))
    if not rows:
        return None
    profiles = []
    for profile in dict.fromkeys(row.profile for row in rows):
        mine = [row for row in rows if row.profile == profile]
        reasons = Counter(
            str(reason).split(":")[0] for row in mine if row.status == "rejected"
            for reason in row.reasons
        )  # fmt: skip
        kept = sum(row.status == "kept" for row in mine)
        profiles.append(ProfileOutcome(profile, len(mine), kept, dict(reasons.most_common())))
    kept_items = [
        KeptHostility(row.item_id, row.profile, list(row.targets), list(row.ratings))
        for row in rows
        if row.status == "kept" and row.item_id
    ]
    return AdversarialReport(profiles, kept_items, _rater_check(rows, tolerance))
