"""Boards by judge source (LLM judges, human raters, both) and subset (regular, adversarial,
all), each with the pooled human system and, beside it, the selection-biased "Best human"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from heart.analyses._assisted import ASSISTED, Assistance, assisted_board
from heart.analyses._audit import JudgeAudit
from heart.analyses._comparisons import Comparisons, Source
from heart.analyses._leaderboard import EvidenceRule, Leaderboard, Standing, build_leaderboard
from heart.analyses._style import StyleInputs
from heart.frames import flat, frame
from heart.types import SystemKind

Floats = npt.NDArray[np.float64]
BEST_HUMAN = "Best human"
SOURCE_TITLES: dict[str, str] = {
    "llm": "LLM judges",
    "human": "human raters",
    "all": "combined",
    "assisted": "human raters helped by the LLM judges",
}
BoardSource = Literal["llm", "human", "all", "assisted"]
"""Whose verdicts a board rates: a judge source, or people's with the judges' help."""


def board_key(source: BoardSource, subset: str) -> str:
    """The one name of a board in every CSV and in the API: ``llm-all``, ``human-regular``..."""
    return f"{source}-{subset}"


def board_title(key: str | None) -> str:
    """The readable title of the board ``key`` names: ``llm-all`` → "LLM judges, all items"
    (empty without a key)."""
    if not key:
        return ""
    source, _, subset = key.partition("-")
    items = "all items" if subset == "all" else f"{subset} items"
    return f"{SOURCE_TITLES.get(source, source)}, {items}"


@dataclass(frozen=True)
class Board:
    """One leaderboard of a study: whose verdicts, on which items.

    ``best_human`` comes from a separate fit in which each context keeps only its best human
    reply (the one that won the largest share of its comparisons): it is biased upwards by that
    selection and is shown apart from the ranked rows.
    """

    source: BoardSource
    subset: str
    leaderboard: Leaderboard
    best_human: Standing | None = None
    assistance: Assistance | None = None  # what the judges added (the "assisted" board only)

    @property
    def key(self) -> str:
        """The board's one name in every CSV and in the API (``llm-all``, ``human-regular``)."""
        return board_key(self.source, self.subset)

    @property
    def title(self) -> str:
        """For readers only ("LLM judges, all items"); scripts use ``key``."""
        return board_title(self.key)

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per system (see ``Leaderboard.to_pandas``) with the board's ``key``, and
        the Best human last, marked ``best_human`` (selection-biased: not ranked with the
        others); the judge-assisted board's rows also carry its ``lambda``."""
        help_ = {} if self.assistance is None else {"lambda": self.assistance.lam}
        rows = [{"board": self.key, **flat(s), "best_human": False, **help_}
                for s in self.leaderboard.standings]  # fmt: skip
        if self.best_human is not None:
            rows.append({"board": self.key, **flat(self.best_human), "best_human": True})
        return rows

    def to_pandas(self) -> Any:
        """The board's ``rows`` as a data frame."""
        return frame(self.rows())


class Boards(list[Board]):
    """A study's boards, the main one first."""

    def to_pandas(self) -> Any:
        """Every board's rows (``Board.to_pandas``) one under the other, told apart by
        ``board``."""
        return frame(row for board in self for row in board.rows())


@dataclass(frozen=True)
class BoardAudit:
    """What the judge audit says of a board's judges: passed, flagged unreliable, or not
    audited (no audit row for them)."""

    passed: tuple[str, ...]
    flagged: tuple[str, ...]
    unaudited: tuple[str, ...]

    @property
    def verdict(self) -> str:
        """``flagged`` when any judge is, ``passed`` when every judge was audited and passed,
        else ``not audited``."""
        if self.flagged:
            return "flagged"
        return "not audited" if self.unaudited else "passed"


def board_audit(board: Board, audits: list[JudgeAudit]) -> BoardAudit:
    """The audit's verdict on each judge whose verdicts ``board`` counts."""
    return judges_audit(board.leaderboard.judges, audits)


def judges_audit(judges: tuple[str, ...], audits: list[JudgeAudit]) -> BoardAudit:
    """The audit's verdict on each of ``judges``."""
    by_judge = {a.judge: a for a in audits}
    return BoardAudit(
        passed=tuple(j for j in judges if j in by_judge and not by_judge[j].flagged),
        flagged=tuple(j for j in judges if j in by_judge and by_judge[j].flagged),
        unaudited=tuple(j for j in judges if j not in by_judge),
    )


def _won(comparisons: Comparisons) -> tuple[Floats, Floats]:
    """Per completion: its score (wins, ties half) and its number of comparisons."""
    n = len(comparisons.completions)
    out = comparisons.outcome
    score = np.bincount(
        comparisons.completion_a, weights=np.select([out == 0, out == 2], [1.0, 0.5]), minlength=n
    )
    score += np.bincount(
        comparisons.completion_b, weights=np.select([out == 1, out == 2], [1.0, 0.5]), minlength=n
    )
    count = np.bincount(comparisons.completion_a, minlength=n) + np.bincount(
        comparisons.completion_b, minlength=n
    )
    return score.astype(np.float64), count.astype(np.float64)


def best_human_comparisons(comparisons: Comparisons) -> Comparisons | None:
    """The comparisons with every human system replaced by one "Best human": per context, the
    human reply that won the largest share of its comparisons (more comparisons, then the id,
    break ties); comparisons of the other human replies, and human against human, are dropped.
    None when no human system took part."""
    human = np.asarray(
        [kind == SystemKind.HUMAN.value for kind in comparisons.system_kinds], dtype=bool
    )
    if not human.any():
        return None
    score, count = _won(comparisons)
    share = np.divide(score, count, out=np.zeros_like(score), where=count > 0)
    owner = np.full(len(comparisons.completions), -1, dtype=np.int64)
    owner[comparisons.completion_a] = comparisons.item
    owner[comparisons.completion_b] = comparisons.item
    system_of = np.full(len(comparisons.completions), -1, dtype=np.int64)
    system_of[comparisons.completion_a] = comparisons.a
    system_of[comparisons.completion_b] = comparisons.b
    best: dict[int, int] = {}
    for cp in np.flatnonzero(human[system_of]).tolist():
        item, mine = int(owner[cp]), (share[cp], count[cp], comparisons.completions[cp])
        held = best.get(item)
        if held is None or mine > (share[held], count[held], comparisons.completions[held]):
            best[item] = cp
    chosen = np.zeros(len(comparisons.completions), dtype=bool)
    chosen[list(best.values())] = True
    human_a, human_b = human[comparisons.a], human[comparisons.b]
    keep = (human_a != human_b) & np.where(
        human_a, chosen[comparisons.completion_a], chosen[comparisons.completion_b]
    )
    keep |= ~human_a & ~human_b
    names = [BEST_HUMAN if h else s for s, h in zip(comparisons.systems, human, strict=True)]
    systems = sorted(set(names))
    index = np.asarray([systems.index(n) for n in names], dtype=np.int64)
    kinds = dict(zip(names, comparisons.system_kinds, strict=True))
    families = dict(zip(names, comparisons.system_families, strict=True))
    relabelled = replace(
        comparisons,
        systems=systems,
        a=index[comparisons.a],
        b=index[comparisons.b],
        system_kinds=[kinds[s] for s in systems],
        system_families=[families[s] if s != BEST_HUMAN else "human" for s in systems],
    )
    return relabelled.select(keep)


def build_board(
    comparisons: Comparisons,
    source: Source,
    subset: str,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    rule: EvidenceRule | None = None,
    ablations: bool = True,
    style: StyleInputs | None = None,
    weights: Mapping[str, float] | None = None,
    axis_intervals: bool = True,
) -> Board:
    """The board of ``comparisons`` (already those of ``source`` judges on ``subset`` items),
    with the selection-biased Best human beside it when a human system took part (its ablations
    and axis intervals left out; ``ablations`` false: the board's too; ``style``: also the
    style-controlled Elo; ``weights``: also the weighted composite of the axes)."""
    rule = rule or EvidenceRule()
    board = build_leaderboard(
        comparisons, rounds=rounds, seed=seed, level=level, rule=rule, ablations=ablations,
        style=style, weights=weights, axis_intervals=axis_intervals,
    )  # fmt: skip
    best = best_human_comparisons(comparisons)
    best_standing = None
    if best is not None and len(best) and len(best.systems) >= 2:
        fit = build_leaderboard(
            best, rounds=rounds, seed=seed, level=level, rule=rule, ablations=False,
            axis_intervals=False,
        )  # fmt: skip
        best_standing = next(s for s in fit.standings if s.system == BEST_HUMAN)
    return Board(source, subset, board, best_standing)


def build_assisted_board(
    comparisons: Comparisons,
    subset: str,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    rule: EvidenceRule | None = None,
) -> Board | None:
    """People's board on ``subset`` items with the LLM judges' help (``assisted_board``;
    ``comparisons``: every source, on those items), or None when the judges have nothing to
    add (see ``assisted_board``)."""
    fitted = assisted_board(comparisons, rounds=rounds, seed=seed, level=level, rule=rule)
    if fitted is None:
        return None
    board, assistance = fitted
    return Board(ASSISTED, subset, board, assistance=assistance)


def build_boards(
    comparisons: Comparisons,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    rule: EvidenceRule | None = None,
    ablations: bool = True,
    style: StyleInputs | None = None,
    weights: Mapping[str, float] | None = None,
    axis_intervals: Literal["main", "every", "none"] = "main",
) -> Boards:
    """Every board the study's judgments support, the main one (LLM judges if any, all items)
    first: per source that has verdicts, and "combined" when both do, each people's board
    followed by its judge-assisted one when the judges can add to it
    (``build_assisted_board``); per subset, "all" plus each subset when the items hold more
    than one; ``rule``: when a standing is preliminary (default ``EvidenceRule()``);
    ``ablations``: false to leave them out (the terminal's board does not show them);
    ``style``: every board also with its style-controlled Elo;
    ``weights`` (by axis letter, summing to one): every board also with the weighted composite
    of its axes; ``axis_intervals``: which boards bootstrap each axis (and the composite) too,
    the main one (the report: its five-axis profile), every one, or none."""
    rule = rule or EvidenceRule()
    present = set(comparisons.judge_sources)
    sources: list[Source] = [s for s in ("llm", "human") if s in present]
    if len(sources) == 2:
        sources.append("all")
    subsets = sorted(set(comparisons.item_subsets))
    boards = Boards()
    for source in sources:
        mine = comparisons.by_source(source)
        for subset in ["all", *subsets] if len(subsets) > 1 else ["all"]:
            rows = mine.by_subset(subset)
            if len(rows) and len(rows.systems) >= 2:
                boards.append(
                    build_board(
                        rows,
                        source,
                        subset,
                        rounds=rounds,
                        seed=seed,
                        level=level,
                        rule=rule,
                        ablations=ablations,
                        style=style,
                        weights=weights,
                        axis_intervals=axis_intervals == "every"
                        or (axis_intervals == "main" and not boards),
                    )
                )
                assisted = (
                    build_assisted_board(
                        comparisons.by_subset(subset), subset, rounds=rounds, seed=seed,
                        level=level, rule=rule,
                    )
                    if source == "human"
                    else None
                )  # fmt: skip
                if assisted is not None:
                    boards.append(assisted)
    return boards
