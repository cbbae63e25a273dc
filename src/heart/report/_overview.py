"""The report's first screen: what the study is, the warning to read before any number, what
can be concluded, and the main board at a glance."""

from __future__ import annotations

from dataclasses import replace

from heart.report._boards import COMPOSITE, board_table
from heart.report._conclusions import board_conclusions, board_summary
from heart.report._facts import StudyFacts
from heart.report._section import Block, Bullets, Section
from heart.report._table import Table, pick_columns

ABOUT = (
    "HEART ranks systems by how well they give emotional support: a judge reads a conversation "
    "and two anonymous replies to it and picks the better one; Elo comes from those verdicts."
)


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def about(facts: StudyFacts) -> str:
    """What the study is, in a sentence or two: its items, systems, judges and verdicts."""
    items = sum(facts.items.values())
    subsets = ", ".join(f"{n:,} {subset}" for subset, n in sorted(facts.items.items()))
    judges = sum(not a.person for a in facts.audit)
    raters = sum(a.person for a in facts.audit)
    verdicts = sum(n.counted for n in facts.judgments.values())
    return (
        f"{ABOUT} This study: {_count(items, 'item', 'items')}"
        + (f" ({subsets})" if subsets else "")
        + f", {_count(len(facts.families), 'system', 'systems')}, "
        f"{_count(judges, 'LLM judge', 'LLM judges')} and "
        f"{_count(raters, 'human rater', 'human raters')}, "
        f"{_count(verdicts, 'verdict', 'verdicts')} counted."
    )


def board_warning(facts: StudyFacts) -> str | None:
    """What a reader must know before the numbers: which judges the audit flags."""
    flagged = [a.judge for a in facts.audit if a.flagged]
    if not flagged:
        return None
    if len(flagged) == len(facts.audit) and not facts.find("human", "all"):
        return (
            "Warning: every verdict on this board comes from judges the judge audit flags as "
            "unreliable; read it as a test of the pipeline, not as a ranking."
        )
    return f"Warning: the judge audit flags {', '.join(flagged)} as unreliable."


def main_board(facts: StudyFacts) -> Table | None:
    """The main board at a glance: rank, Elo and its interval, conversations, win rate, and
    whether the standing is preliminary; the full board follows in its own section."""
    board = facts.main
    if board is None:
        return None
    full = board_table(board)
    interval = full.header[4]
    composite = [COMPOSITE] if COMPOSITE in full.header else []
    glance = pick_columns(
        full,
        ["#", "system", "Elo", interval, *composite, "conversations", "win rate", "evidence"],
        f"Main board: {board.title}",
        "Interval: the conversation bootstrap; preliminary: too little evidence to act on (why: "
        f"above). The full board, with every interval, axis and count: {board.title}, below.",
        "main-board",
    )
    glance.header[3] = interval.split(" (")[0]
    return replace(glance, rows=[[*row[:-1], row[-1].split(":")[0]] for row in glance.rows])


def first_screen(facts: StudyFacts) -> Section:
    """What the main board lets one conclude, the main board at a glance, then a line on each
    other board."""
    board = main_board(facts)
    if facts.main is None or board is None:
        return Section(
            "conclusions",
            "What can be concluded",
            empty="Nothing yet: no valid judgments, so no board. Run `heart run` to fill it.",
        )
    blocks: list[Block] = [Bullets(board_conclusions(facts.main, facts.audit), code=False), board]
    others = [board_summary(b, facts.audit) for b in facts.boards[1:]]
    if others:
        blocks.append(Bullets(others, code=False))
    return Section("conclusions", "What can be concluded", blocks)
