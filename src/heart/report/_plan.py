"""`heart plan` in words: the size a target needs, board by board, its price, and what the
study already has."""

from __future__ import annotations

import math

from heart.analyses import REACH, StudyPlan


def _n(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def _enough(need: int | None, have: int) -> str:
    if need is None:
        return ""
    if have >= need:
        return f" The study has {have:,}: enough."
    return f" The study has {have:,}: {need - have:,} more to go."


def _pay(found: StudyPlan, hours: float) -> str:
    prices = found.prices
    pay = found.rater_pay(hours)
    if math.isnan(hours):
        return ""
    text = f", {hours:,.1f} rater hours"
    if not math.isnan(pay):
        text += f", {prices.currency}{pay:,.2f} at {prices.currency}{prices.pay_per_hour:g} an hour"
    return text


def plan_lines(found: StudyPlan) -> list[str]:
    """What `heart plan` prints: the target and its basis, then per board what it needs."""
    have = found.have
    basis = (
        f"simulated from this study's verdicts ({have['conversations']:,} conversations, "
        f"{have['judge_verdicts']:,} LLM-judge and {have['people_verdicts']:,} people's "
        "verdicts), resampling its conversations"
        if found.basis == "pilot"
        else f"simulated from assumptions ({found.systems} systems, one item a conversation)"
    )
    lines = [f"Target: {found.target.text()}; {basis}; {found.studies} studies per size tried."]
    prices = found.prices
    if found.conversations is not None or have["judge_verdicts"]:
        usd = found.judge_usd
        price = (
            f", about ${usd:,.2f} of judging (${prices.usd_per_judge_verdict:.4f} a verdict, "
            "this study's mean so far)"
            if math.isfinite(usd)
            else ""
        )
        lines.append(
            f"LLM judges' board: {_n(found.conversations)} conversations ({_n(found.items)} "
            f"items), {_n(found.judge_verdicts)} judge verdicts{price}."
            + _enough(found.items, have["items"])
        )
    seconds = f"{prices.seconds_per_task:.0f} s a task, " + (
        "the median so far" if prices.seconds_measured else "people.seconds_per_task"
    )
    if found.people_verdicts is not None or have["people_verdicts"]:
        lines.append(
            f"People's board: {_n(found.people_verdicts)} people's verdicts"
            f"{_pay(found, found.rater_hours)} ({seconds})."
            + _enough(found.people_verdicts, have["people_verdicts"])
        )
    if found.people_verdicts_assisted is not None:
        saved = (
            f": {found.people_verdicts - found.people_verdicts_assisted:,} fewer"
            if found.people_verdicts is not None
            else ""
        )
        lines.append(
            f"With the judges' help (the judge-assisted board, judges on every conversation): "
            f"{found.people_verdicts_assisted:,} people's verdicts"
            f"{_pay(found, found.rater_hours_assisted)}{saved}."
        )
    lines += [f"Note: {note}." for note in found.notes]
    lines.append(
        f"Each size is the smallest at which {REACH:.0%} of the simulated studies meet the "
        "target; a study like the pilot but larger is assumed."
    )
    return lines
