"""What a board lets a reader conclude: the evidence behind it, its judges' audit, the pairs
that are clear, the systems that cannot be told apart, and the ones still preliminary."""

from __future__ import annotations

from collections import defaultdict

from heart.analyses import Board, JudgeAudit, board_audit

MAX_NAMED = 8  # clear pairs and preliminary systems named before "and N more"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def audit_line(board: Board, audits: list[JudgeAudit]) -> str:
    """The judge audit's verdict on the judges whose verdicts ``board`` counts."""
    audit = board_audit(board, audits)
    if audit.flagged and not audit.passed and not audit.unaudited:
        return (
            f"The judge audit flags every judge on this board ({_names(list(audit.flagged))}) as "
            "unreliable: read it as a test of the pipeline, not as a ranking."
        )
    parts = []
    if audit.flagged:
        parts.append(f"the judge audit flags {_names(list(audit.flagged))} as unreliable")
    if audit.passed:
        parts.append(f"passed the judge audit: {_names(list(audit.passed))}")
    if audit.unaudited:
        parts.append(f"not audited: {_names(list(audit.unaudited))}")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def board_summary(board: Board, audits: list[JudgeAudit]) -> str:
    """One line on a board that is not the main one."""
    lb = board.leaderboard
    return (
        f"{board.title}: {lb.comparisons} verdicts over {lb.conversations} conversations; judges "
        f"{board_audit(board, audits).verdict}; {len(lb.clear_pairs)} clear pairs; "
        f"{len(lb.preliminary)} of {len(lb.standings)} systems preliminary."
    )


def board_conclusions(board: Board, audits: list[JudgeAudit]) -> list[str]:
    """A few sentences on what ``board`` can and cannot show, for the report's first screen and
    under the terminal's board."""
    lb = board.leaderboard
    lines = [
        f"{board.title}: {lb.comparisons} verdicts over {lb.conversations} conversations from "
        f"{len(lb.judges)} judge{'s' if len(lb.judges) != 1 else ''}.",
        audit_line(board, audits),
    ]
    names = lb.systems
    clear = [f"{names[d.i]} above {names[d.j]}" for d in lb.clear_pairs]
    if clear:
        lines.append(f"Clear on this evidence (intervals apart): {_names(clear)}.")
    else:
        lines.append(
            "No two systems are clearly apart: every interval overlaps another's or is missing, "
            "so the order of Elo is not a finding yet."
        )
    shared: dict[int, list[str]] = defaultdict(list)
    for s in lb.standings:
        if s.ranked:
            shared[s.rank].append(s.system)
    ties = [
        f"rank {r}: {', '.join(group)}" for r, group in sorted(shared.items()) if len(group) > 1
    ]
    if ties:
        lines.append(f"Cannot be told apart (a shared rank): {'; '.join(ties)}.")
    preliminary = [f"{s.system} ({'; '.join(s.preliminary)})" for s in lb.preliminary]
    if preliminary:
        lines.append(f"Preliminary, too little evidence to act on: {_names(preliminary)}.")
    return lines
