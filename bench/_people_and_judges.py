"""Simulated studies where people and an LLM judge judge the same item-pairs: systems of known
strength to people, a judge that agrees with people on most decisive pairs but rates one system
above their view, people on a share of the item-pairs. Written as the board reads verdicts
(``Comparisons``), with people's true Elo (the Bradley–Terry fit to their expected verdicts)."""

from __future__ import annotations

import functools
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from heart.analyses import Comparisons, drawn_weight  # noqa: E402
from heart.stats import (  # noqa: E402
    ELO_SCALE,
    active_chances,
    elo_from_theta,
    fit_bradley_terry,
    judge_doubt,
)

PEOPLE_ELO = np.array([120.0, 60.0, 20.0, 0.0, -60.0, -140.0])
NAMES = [f"s{i}" for i in range(PEOPLE_ELO.size)]
ITEM_SD = 5.0  # logits: how much an item decides its pairs, for people and judges alike
CONVERSATION_SD = 0.3


@dataclass(frozen=True)
class Design:
    conversations: int = 60
    items_per_conversation: int = 4
    people_share: float = 0.10  # of item-pairs people judge
    raters_per_pair: int = 1
    bias_elo: float = 100.0  # the judge's lift of the favoured system (index 1), as fitted
    raters: int = 30  # people, each verdict by one of them
    seats: str = "uniform"  # how people's pairs are drawn: "uniform" or "active"
    floor: float = 0.2  # active: the least chance, as a share of the uniform one
    judge_noise: float = 0.0  # share of the judge's verdicts that are coin flips
    judges: int = 1


def _people_theta() -> np.ndarray:
    return np.asarray(PEOPLE_ELO / ELO_SCALE)


def true_people_elo(design: Design, draws: int = 400_000, seed: int = 99) -> np.ndarray:
    """People's estimand: the Bradley–Terry fit to their expected verdicts over items and
    conversations (every pair equally often)."""
    rng = np.random.default_rng(seed)
    theta = _people_theta()
    k = theta.size
    wins = np.zeros((k, k))
    for x, y in itertools.combinations(range(k), 2):
        shift = rng.normal(0, ITEM_SD, draws) + rng.normal(0, CONVERSATION_SD * np.sqrt(2), draws)
        p = expit(theta[x] - theta[y] + shift).mean()
        wins[x, y], wins[y, x] = p, 1 - p
    return np.asarray(elo_from_theta(fit_bradley_terry(wins * 1000).theta))


@functools.cache
def attenuation(design: Design) -> float:
    """How much the items' own lean shrinks fitted Elo: the spread of people's true Elo over
    the spread of their strengths (a bias is set on the fitted scale through it)."""
    truth = true_people_elo(design)
    return float(np.ptp(truth) / np.ptp(PEOPLE_ELO))


def simulate(design: Design, rng: np.random.Generator) -> Comparisons:
    """One study: every item-pair judged by the judges (each verdict's strength from how sure
    the judge is), a share of them by people: drawn uniformly, or with ``seats: active`` by the
    judges' doubt as ``people.assist: active`` draws them."""
    theta = _people_theta()
    k = theta.size
    judge_theta = theta.copy()
    judge_theta[1] += design.bias_elo / attenuation(design) / ELO_SCALE
    rows: dict[str, list[int]] = {
        n: [] for n in ("a", "b", "out", "judge", "conv", "item", "pair", "strength")
    }
    people_ps: list[float] = []
    pair_id = 0
    n_items = design.conversations * design.items_per_conversation
    for c in range(design.conversations):
        shift = rng.normal(0, CONVERSATION_SD, k)
        for i in range(design.items_per_conversation):
            item = c * design.items_per_conversation + i
            for x, y in itertools.combinations(range(k), 2):
                a, b = (x, y) if rng.random() < 0.5 else (y, x)
                noise = rng.normal(0, ITEM_SD)  # the item's own lean, the same for everyone
                people_ps.append(expit(theta[a] - theta[b] + shift[a] - shift[b] + noise))
                judge_p = expit(judge_theta[a] - judge_theta[b] + shift[a] - shift[b] + noise)
                for j in range(design.judges):
                    coin = rng.random() < design.judge_noise
                    a_won = rng.random() < (0.5 if coin else judge_p)
                    sure = 0.0 if coin else abs(2 * judge_p - 1)
                    values = (a, b, 0 if a_won else 1, j, c, item, pair_id, 1 + int(4.999 * sure))
                    for name, value in zip(rows, values, strict=True):
                        rows[name].append(int(value))
                pair_id += 1
    judged = {name: np.asarray(values, dtype=np.int64) for name, values in rows.items()}
    chance = np.full(pair_id, design.people_share)
    if design.seats == "active":
        doubt = judge_doubt(
            (judged["out"] == 0).astype(float), judged["strength"].astype(float), judged["pair"],
            pair_id,
        )  # fmt: skip
        chance = active_chances(doubt, design.people_share * pair_id, design.floor)
    chosen = rng.random(pair_id) < chance
    first = np.unique(judged["pair"], return_index=True)[1]  # one judge row per pair
    for pair in np.flatnonzero(chosen).tolist():
        at = first[pair]
        for r in rng.choice(design.raters, design.raters_per_pair, replace=False):
            a_won = rng.random() < people_ps[pair]
            values = (judged["a"][at], judged["b"][at], 0 if a_won else 1, design.judges + r,
                      judged["conv"][at], judged["item"][at], pair, 1)  # fmt: skip
            for name, value in zip(rows, values, strict=True):
                rows[name].append(int(value))
    arr = {name: np.asarray(values, dtype=np.int64) for name, values in rows.items()}
    n = arr["a"].size
    raters = design.raters
    return Comparisons(
        systems=list(NAMES),
        judges=[f"judge{j}" for j in range(design.judges)] + [f"rater{r}" for r in range(raters)],
        conversations=[f"c{c}" for c in range(design.conversations)],
        a=arr["a"],
        b=arr["b"],
        outcome=arr["out"],
        strength=drawn_weight(  # people's verdicts weighed as heart weighs drawn pairs'
            arr["strength"].astype(np.float64), chance[arr["pair"]], arr["judge"] >= design.judges
        ),
        axis_outcome=np.full((n, 5), 2, dtype=np.int64),
        judge=arr["judge"],
        conversation=arr["conv"],
        first_won=arr["out"] == 0,
        length_a=np.full(n, 30, dtype=np.int64),
        length_b=np.full(n, 30, dtype=np.int64),
        pair=arr["pair"],
        order_ab=np.ones(n, dtype=bool),
        system_kinds=["model"] * k,
        system_families=list(NAMES),
        judge_families=["llm"] * design.judges + ["human"] * raters,
        judge_sources=["llm"] * design.judges + ["human"] * raters,
        items=[f"i{i}" for i in range(n_items)],
        item=arr["item"],
        item_subsets=["regular"] * n_items,
        completions=[f"i{i}/{s}" for i in range(n_items) for s in NAMES],
        completion_a=arr["item"] * k + arr["a"],
        completion_b=arr["item"] * k + arr["b"],
        axis_strength=np.zeros((n, 5)),
        axis_given=np.zeros((n, 5), dtype=bool),
        judgments=[f"v{r}" for r in range(n)],
        pair_chance=chance[arr["pair"]],
    )
