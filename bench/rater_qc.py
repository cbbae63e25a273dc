"""Rater quality control: crowds of 60 simulated raters on a real pair set, through the real
claim and submit functions on a SQLite store, with simulated clocks.

The pair set: the bundled demo corpus (written for heart-bench, not ESConv) screened into its 12
regular items; each item's original reply (the dataset system) and six stand-in systems whose
replies are supporter turns of the other demo conversations; every pair of the seven (21 an
item, 252 in all), 20 raters a pair, and a gold or attention check after every 8 pairs. Every
reply has a hidden quality; the original's is highest.

A crowd: 10% always answer "A is much better" (in about half an honest rater's time); 10%
answer at random, faster than they could read the text (20-90% of its reading floor); 10% read
and judge but give the reply shown first the win 80% of the time; the rest are noisy but
honest (a judgment of the hidden qualities with noise, reading at 238 words a minute give or
take a quarter, then 4-20 s to decide; 3% of their attention checks slip). Raters take turns, one
task each, until none is left for anyone. Then the quality review runs with the study's default
settings.

    .venv/bin/python bench/rater_qc.py [--crowds 1] [--seed 0]

Prints, per bad kind, the share caught (excluded), the share of honest raters wrongly excluded,
the rules that excluded, the run time, and the worst catch rate last. Targets: each bad kind
caught at 90% or more, fewer than 5% of honest raters excluded.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sqlalchemy import select  # noqa: E402

from heart.config import PairsSpec, PeopleSpec  # noqa: E402
from heart.judging import build_pairs  # noqa: E402
from heart.people import (  # noqa: E402
    CHOICES,
    FLOOR_WORDS_PER_MINUTE,
    JUDGE,
    claim,
    invite,
    load_task,
    review_quality,
    submit_judgment,
    sync_tasks,
)
from heart.pipeline import build_items  # noqa: E402
from heart.store import CompletionRow, ItemRow, PairRow, RaterRow, SystemRow, TaskRow  # noqa: E402
from heart.study import Study, create_study, open_study  # noqa: E402

STAND_INS = 5
RATERS_PER_PAIR = 20
RATERS = 60
KINDS = ("always-A", "random-fast", "position-80", "honest")
SHARES = {"always-A": 0.1, "random-fast": 0.1, "position-80": 0.1}
READING_WPM = 238  # adults' average silent reading of non-fiction (Brysbaert, 2019)
HOUR = 3600.0


@dataclass
class Rater:
    id: str
    kind: str
    rng: random.Random
    wpm: float
    clock: float = 0.0
    seen: set[str] = field(default_factory=set)
    done: bool = False


@dataclass(frozen=True)
class Seat:
    item: str
    first: float  # hidden quality of the reply shown first
    second: float
    check: str | None
    expected: str | None


def build_pair_set(root: Path, seed: int) -> tuple[Study, dict[str, float]]:
    """The demo study's items, seven systems' replies, and every pair; returns the study and
    each completion's hidden quality."""
    create_study(root, demo=True)
    study = open_study(root)
    build_items(study)
    rng = random.Random(seed)
    quality: dict[str, float] = {}
    with study.store.session() as s:
        items = list(s.scalars(select(ItemRow).order_by(ItemRow.id)))
        turns = [t["text"] for item in items for t in item.context if t["role"] == "supporter"] + [
            item.reference for item in items
        ]
        names = ["esconv-original", *(f"stand-in-{k}" for k in range(STAND_INS))]
        for name in names[1:]:
            s.merge(SystemRow(name=name, kind="model", family=name, spec={}))
        s.flush()
        for item in items:
            own = {t["text"] for t in item.context} | {item.reference}
            others = [t for t in turns if t not in own and len(t.split()) >= 6]
            texts = [item.reference, *rng.sample(others, STAND_INS)]
            for name, text in zip(names, texts, strict=True):
                cid = f"cp-{item.id}-{name}"
                s.merge(CompletionRow(id=cid, item_id=item.id, system=name, contributor="",
                                      status="ok", text=text, created_at="x"))  # fmt: skip
                quality[cid] = 1.5 if name == "esconv-original" else rng.gauss(0, 1)
    build_pairs(study.store, PairsSpec(), seed=seed)
    return study, quality


def seats(study: Study, quality: dict[str, float]) -> dict[str, Seat]:
    """What each judge seat holds, as the simulation needs it."""
    out = {}
    with study.store.session() as s:
        pairs = {p.id: (p.a_id, p.b_id) for p in s.scalars(select(PairRow))}
        for row in s.scalars(select(TaskRow).where(TaskRow.kind == JUDGE)):
            if row.check:
                out[row.id] = Seat(row.item_id, 0.0, 0.0, row.check, row.expected)
                continue
            a, b = pairs[row.target]
            first, second = (a, b) if row.shown == "ab" else (b, a)
            out[row.id] = Seat(row.item_id, quality[first], quality[second], None, None)
    return out


def honest_choice(rng: random.Random, seat: Seat) -> str:
    diff = seat.first - seat.second + rng.gauss(0, 1.0)
    if abs(diff) < 0.3:
        return "="
    side = "A" if diff > 0 else "B"
    return side + ("++" if abs(diff) > 1.2 else "+")


def answer(rater: Rater, seat: Seat) -> str:
    rng = rater.rng
    if rater.kind == "always-A":
        return "A++"
    if rater.kind == "random-fast":
        return rng.choice(list(CHOICES))
    if seat.check == "attention":
        slip = rater.kind == "honest" and rng.random() < 0.03
        return (
            rng.choice([c for c in CHOICES if c != seat.expected]) if slip else str(seat.expected)
        )
    if seat.check == "gold":
        return f"{seat.expected}+" if rng.random() < 0.95 else "="
    choice = honest_choice(rng, seat)
    if rater.kind == "position-80" and choice != "=":
        side = "A" if rng.random() < 0.8 else "B"
        choice = side + choice[1:]
    return choice


def seconds(rater: Rater, words_read: int) -> float:
    rng = rater.rng
    floor = 60.0 * words_read / FLOOR_WORDS_PER_MINUTE
    reading = 60.0 * words_read / rater.wpm + rng.uniform(4, 20)
    if rater.kind == "random-fast":
        return floor * rng.uniform(0.2, 0.9)
    if rater.kind == "always-A":
        return max(reading * rng.uniform(0.3, 0.7), 1.0)
    return reading


def run_crowd(seed: int) -> tuple[dict[str, list[bool]], Counter[str], int]:
    """One crowd on a fresh store: per kind, which raters were excluded; the rules that
    excluded; the verdicts given."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        study, quality = build_pair_set(Path(tmp) / "study", seed)
        spec = PeopleSpec(raters_per_pair=RATERS_PER_PAIR, check_every=8)
        sync_tasks(study.store, spec, seed)
        held = seats(study, quality)
        kinds = [k for k, share in SHARES.items() for _ in range(round(share * RATERS))]
        kinds += ["honest"] * (RATERS - len(kinds))
        rng.shuffle(kinds)
        made = invite(study.store, RATERS)
        raters = [
            Rater(rid, kind, random.Random(rng.random()), READING_WPM * rng.lognormvariate(0, 0.25))
            for (rid, _), kind in zip(made, kinds, strict=True)
        ]
        verdicts = 0
        while not all(r.done for r in raters):
            rng.shuffle(raters)
            for r in raters:
                if r.done:
                    continue
                task = claim(study.store, r.id, JUDGE, now=r.clock, seconds=HOUR)
                if task is None:
                    r.done = True
                    continue
                seat = held[task]
                page = load_task(study.store, r.id, task)
                words = sum(len(p.split()) for p in page.replies)
                if seat.item not in r.seen:
                    words += sum(len(text.split()) for _, text in page.context)
                    r.seen.add(seat.item)
                took = seconds(r, words)
                submit_judgment(study.store, r.id, task, answer(r, seat), "", now=r.clock + took,
                                spec=spec)  # fmt: skip
                r.clock += took + 2.0
                verdicts += 1
        review_quality(study.store, spec)
        with study.store.session() as s:
            rows = s.execute(select(RaterRow.id, RaterRow.excluded_reason))
            excluded = {rater: reason for rater, reason in rows}
        study.close()
    caught: dict[str, list[bool]] = {k: [] for k in KINDS}
    rules: Counter[str] = Counter()
    for r in raters:
        reason = excluded.get(r.id)
        caught[r.kind].append(reason is not None)
        for part in (reason or "").split("; "):
            if part:
                rules[f"{r.kind}: {part.split(' (')[0]}"] += 1
    return caught, rules, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crowds", type=int, default=1, help="crowds of 60 to pool")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    pooled: dict[str, list[bool]] = {k: [] for k in KINDS}
    rules: Counter[str] = Counter()
    verdicts = 0
    for n in range(args.crowds):
        caught, crowd_rules, given = run_crowd(args.seed + n)
        for kind, flags in caught.items():
            pooled[kind] += flags
        rules += crowd_rules
        verdicts += given
        print(f"crowd {n + 1}: " + ", ".join(
            f"{k} {sum(v)}/{len(v)}" for k, v in caught.items()), flush=True)  # fmt: skip
    print(f"{verdicts} judge tasks by {RATERS * args.crowds} raters in "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    for rule, n in sorted(rules.items()):
        print(f"  excluded by {rule}: {n}")
    worst = 1.0
    for kind in KINDS[:-1]:
        share = sum(pooled[kind]) / len(pooled[kind])
        worst = min(worst, share)
        print(f"{share:.2f} caught: {kind} ({sum(pooled[kind])} of {len(pooled[kind])}; "
              "target >= 0.90)")  # fmt: skip
    honest = pooled["honest"]
    print(f"{sum(honest) / len(honest):.3f} honest raters excluded ({sum(honest)} of "
          f"{len(honest)}; target < 0.05)")  # fmt: skip
    print(f"{worst:.2f} worst catch rate")


if __name__ == "__main__":
    main()
