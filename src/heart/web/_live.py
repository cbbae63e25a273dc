"""The live part of the admin page: the pace of each kind of work and when it should finish,
Krippendorff's α among the raters so far, the raters with a quality flag, who the analyses
leave out, and the extra judge seats that replacing them costs. The page polls it every few
seconds and swaps it in place; without JavaScript it is shown as of the page's load."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import exists, func, select

from heart.analyses import INTERVAL_CONVERSATIONS, RaterAlpha, load_comparisons, rater_alpha
from heart.people import JUDGE, KINDS, RaterQuality, review_quality
from heart.store import JudgeRow, JudgmentRow, RaterRow, TaskRow
from heart.study import Study
from heart.types import JudgeSource
from heart.web._session import ADMIN_COOKIE
from heart.web._state import message, render, web

router = APIRouter()

CHECKS = f"{JUDGE} (checks)"
WORK = (*KINDS, CHECKS)
"""The kinds of work the admin page counts: judge checks (gold and attention) on their own."""

PACE_WINDOW = 3600.0
"""The pace is the seats submitted in this many seconds before now."""
MIN_PACE_SEATS = 10
"""Fewest seats submitted in the window that make a pace: a forecast from two or three is
noise (one person's break moves it by hours)."""
REFRESH_SECONDS = 15
"""How often an open admin page asks for the live part again."""


def work_of(kind: str, check: str | None) -> str:
    """The kind of work a seat counts under: its kind, or CHECKS for a check seat."""
    return CHECKS if check else kind


@dataclass(frozen=True)
class Pace:
    """How fast one kind of work gets done and, at that pace, when its open seats are done."""

    work: str
    seats: int
    left: int  # seats not submitted yet (free or held)
    recent: int  # seats submitted in the last PACE_WINDOW seconds
    per_hour: float | None  # None: fewer than MIN_PACE_SEATS recent seats
    finish: float | None  # epoch seconds; None when nothing is left or the pace is unknown


@dataclass(frozen=True)
class LeftOut:
    """A rater whose verdicts the analyses leave out, why, and how many of their judge seats
    went back to the pool."""

    rater: str
    reason: str
    reopened: int


@dataclass(frozen=True)
class LiveView:
    now: float
    pace: list[Pace]
    alpha: RaterAlpha
    level: float
    left_out: list[LeftOut]
    flagged: list[RaterQuality]  # raters with a quality flag, measured now (nothing stored)

    @property
    def extra_seats(self) -> int:
        """Judge seats filled once already that must be filled again: the replacement cost."""
        return sum(r.reopened for r in self.left_out)

    @property
    def judge_pace(self) -> Pace:
        return next(p for p in self.pace if p.work == JUDGE)


def paces(seats: list[tuple[str, str | None, bool, float | None]], now: float) -> list[Pace]:
    """Per kind of work, from every seat's (kind, check, done, submitted_at): the seats left,
    those submitted in the last PACE_WINDOW seconds, the pace per hour and the finish it
    gives."""
    out = []
    for work in WORK:
        mine = [(done, at) for kind, check, done, at in seats if work_of(kind, check) == work]
        if not mine and work == CHECKS:
            continue  # a study without checks
        left = sum(not done for done, _ in mine)
        recent = sum(done and at is not None and now - PACE_WINDOW < at <= now for done, at in mine)
        per_hour = recent * 3600.0 / PACE_WINDOW if recent >= MIN_PACE_SEATS else None
        finish = now + left / per_hour * 3600.0 if per_hour and left else None
        out.append(Pace(work, len(mine), left, recent, per_hour, finish))
    return out


def left_out(study: Study) -> list[LeftOut]:
    """The raters excluded by quality control, with the reason, and the judge seats each one
    had submitted that went back to the pool. Reopening a seat clears who held it, so those
    are counted from what stays: their verdicts (kept, no longer counted) on pairs the study
    seats raters for."""
    excluded = RaterRow.excluded_reason.is_not(None)
    seated = exists().where(TaskRow.kind == JUDGE, TaskRow.target == JudgmentRow.pair_id)
    with study.store.session() as s:
        reasons = s.execute(
            select(RaterRow.id, RaterRow.excluded_reason).where(excluded).order_by(RaterRow.id)
        ).all()
        reopened = dict(
            s.execute(
                select(JudgmentRow.judge, func.count())
                .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
                .where(
                    JudgeRow.source == JudgeSource.HUMAN,
                    JudgmentRow.judge.in_(select(RaterRow.id).where(excluded)),
                    seated,
                )
                .group_by(JudgmentRow.judge)
            ).all()
        )
    return [LeftOut(r, str(why), int(reopened.get(r, 0))) for r, why in reasons]


def live_view(study: Study, now: float, quality: list[RaterQuality] | None = None) -> LiveView:
    """Everything the live part shows, read from the store as it is now (nothing is changed);
    the raters' ``quality`` as the caller reviewed it just now, else reviewed here."""
    ratings = study.config.ratings
    with study.store.session() as s:
        seats = [
            (kind, check, bool(done), at)
            for kind, check, done, at in s.execute(
                select(TaskRow.kind, TaskRow.check, TaskRow.done, TaskRow.submitted_at)
            )
        ]
    alpha = rater_alpha(
        load_comparisons(study.store, source="human"),
        rounds=ratings.bootstrap_rounds, seed=study.config.seed, level=ratings.level,
    )  # fmt: skip
    if quality is None:
        quality = review_quality(study.store, study.config.people, act=False)
    flagged = [q for q in quality if q.flags]
    return LiveView(now, paces(seats, now), alpha, ratings.level, left_out(study), flagged)


def clock(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def span(seconds: float) -> str:
    """A duration in words: minutes under an hour, hours and minutes under two days, else
    days."""
    minutes = max(1, math.ceil(seconds / 60))
    if minutes < 60:
        return f"{minutes} min"
    if minutes < 48 * 60:
        hours, rest = divmod(minutes, 60)
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    return f"{minutes / (24 * 60):.1f} days"


def finish_text(pace: Pace, now: float) -> str:
    """When ``pace``'s work should finish, or why that cannot be said."""
    if not pace.seats:
        return "no seats"
    if not pace.left:
        return "all done"
    if pace.per_hour is None or pace.finish is None:
        done = "no seat" if not pace.recent else _plural(pace.recent, "seat")
        return (
            f"not enough data: {done} submitted in the last {span(PACE_WINDOW)}, a pace needs "
            f"{MIN_PACE_SEATS}"
        )
    return (
        f"{clock(pace.finish)} (in {span(pace.finish - now)}; from "
        f"{_plural(pace.recent, 'seat')} in the last {span(PACE_WINDOW)})"
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def alpha_text(alpha: RaterAlpha, level: float) -> str:
    """Krippendorff's α with its interval, or why there is none, and what it rests on."""
    evidence = (
        f"{_plural(alpha.verdicts, 'counted verdict')} by {_plural(alpha.raters, 'rater')}; "
        f"{_plural(alpha.pairs, 'pair')} rated by two or more, from "
        f"{_plural(alpha.conversations, 'conversation')}"
    )
    if not alpha.pairs:
        return f"Not enough data: no pair has verdicts from two raters yet ({evidence})."
    if math.isnan(alpha.alpha):
        return (
            "Undefined: every verdict on the pairs rated by two or more is the same, so no "
            f"disagreement is expected to correct for ({evidence})."
        )
    if math.isnan(alpha.low):
        interval = (
            f"no interval: {_plural(alpha.conversations, 'conversation')}, an interval needs "
            f"{INTERVAL_CONVERSATIONS}"
        )
    else:
        interval = f"{level:.0%} interval {alpha.low:.2f} to {alpha.high:.2f}"
    return f"α = {alpha.alpha:.2f} ({interval}), from {evidence}."


def extra_text(view: LiveView) -> str:
    """How many judge seats replacing the left-out raters costs, and in time at the pace."""
    extra = view.extra_seats
    if not extra:
        return "Replacement costs nothing so far: no judge seat went back to the pool."
    pace = view.judge_pace
    at_pace = (
        f"about {span(extra / pace.per_hour * 3600.0)} of judging at the current pace"
        if pace.per_hour
        else "how long that takes is unknown until judging has a pace"
    )
    return (
        f"Replacement costs {_plural(extra, 'extra judge seat')}: seats these raters had "
        f"submitted went back to the pool for others to fill ({at_pace})."
    )


@router.get("/admin/live")
def admin_live(request: Request) -> Response:
    """The live part alone, for the admin page to swap in place."""
    state = web(request)
    if not state.signer.admin_ok(request.cookies.get(ADMIN_COOKIE)):
        return message(
            request, 403, "Admin only",
            "This page is for the study team. Open the admin link that `heart serve` printed.",
        )  # fmt: skip
    return render(request, "_live.html", live=live_context(state.study, time.time()))


def live_context(
    study: Study, now: float, quality: list[RaterQuality] | None = None
) -> dict[str, object]:
    """What _live.html shows: the view and its sentences."""
    view = live_view(study, now, quality)
    return {
        "view": view,
        "as_of": clock(now),
        "every": REFRESH_SECONDS,
        "window": span(PACE_WINDOW),
        "finish": {p.work: finish_text(p, now) for p in view.pace},
        "alpha": alpha_text(view.alpha, view.level),
        "extra": extra_text(view),
    }
