"""The five-axis profile of a board: per system its Elo on each HEART axis with the interval and
the verdicts and conversations behind it, as a table, as small multiples (one panel per system)
and as axis_profile.csv; an axis with too few verdicts is marked preliminary or shown without an
interval, and an axis judged by a judge the audit flags is marked too."""

from __future__ import annotations

import math

from heart.analyses import INTERVAL_CONVERSATIONS, Board, JudgeAudit, Standing
from heart.report._csv import Cell, csv_text
from heart.report._figures import new_figure, png_bytes
from heart.report._table import AXES, NO_DATA, Table, interval

PANELS_PER_ROW = 4
COMPOSITE_MARK = "Σw"


def flagged_axes(board: Board, audits: list[JudgeAudit]) -> dict[str, tuple[str, ...]]:
    """Per axis, the judges whose verdicts on it the board counts and the audit flags."""
    flagged = {a.judge for a in audits if a.flagged}
    judges = board.leaderboard.axis_judges
    return {axis: tuple(j for j in judges.get(axis, ()) if j in flagged) for axis in AXES}


def weights_text(weights: dict[str, float]) -> str:
    """Like ``E 40%, T 40%, H 20%``: the composite's weights, heaviest first."""
    shown = sorted(((w, a) for a, w in weights.items() if w > 0), key=lambda x: (-x[0], x[1]))
    return ", ".join(f"{a} {100 * w:.0f}%" for w, a in shown)


def profile_cell(board: Board, s: Standing, axis: str, flagged: bool) -> str:
    """A system's Elo on one axis for a table: the Elo and its interval, the verdicts (v) and
    conversations (c) behind it, ``*`` when preliminary and ``!`` when a flagged judge gave some
    of them; the Elo in parentheses with no interval below ``INTERVAL_CONVERSATIONS``
    conversations; ``no data`` where no verdict judged the axis."""
    elo = s.axis_elo[axis]
    if math.isnan(elo):
        return NO_DATA
    low, high = s.axis_low[axis], s.axis_high[axis]
    shown = f"{elo:.0f} [{interval(low, high)}]" if math.isfinite(low) else f"({elo:.0f})"
    marks = axis_marks(board, s, axis, flagged)
    counts = f"{s.axis_comparisons[axis]} v, {s.axis_conversations[axis]} c"
    return f"{shown} · {counts}" + (f" {marks}" if marks else "")


def axis_marks(board: Board, s: Standing, axis: str, flagged: bool) -> str:
    """``*`` when a system's Elo on ``axis`` is preliminary, ``!`` when a flagged judge judged
    the axis (empty: neither)."""
    return ("*" if board.leaderboard.axis_preliminary(s, axis) else "") + ("!" if flagged else "")


def profiled(board: Board) -> list[Standing]:
    """The systems a profile shows: the board's ranked rows (the Best human's separate fit has
    no axis intervals)."""
    return list(board.leaderboard.standings)


def profile_note(board: Board, flagged: dict[str, tuple[str, ...]]) -> str:
    """What the profile's marks and counts mean, and which axes flagged judges judged."""
    rule = board.leaderboard.rule
    note = (
        "Bradley–Terry on each axis's verdicts, weighted by their strength; 'no clear advantage' "
        f"counts as a tie. Each cell: Elo [{100 * board.leaderboard.level:.0f}% interval, "
        "conversation bootstrap, widened as the board's] · verdicts (v) that judged the axis, "
        f"conversations (c) they came from. In parentheses, without an interval: fewer than "
        f"{INTERVAL_CONVERSATIONS} conversations on the axis. *: preliminary (fewer than "
        f"{rule.conversations} conversations or {rule.comparisons} verdicts on the axis). "
        f"'{NO_DATA}': no verdict on this system judged the axis (human raters and imported "
        "verdicts give only the overall preference)."
    )
    marked = {axis: judges for axis, judges in flagged.items() if judges}
    if marked:
        names = sorted({j for judges in marked.values() for j in judges})
        note += (
            f" !: judged by {', '.join(names)}, flagged unreliable by the judge audit "
            f"(axes {', '.join(marked)})."
        )
    return note


def axis_profile_table(board: Board, audits: list[JudgeAudit]) -> Table:
    """The board's five-axis profile: one row per system in board order, one column per axis,
    and the weighted composite last when ``ratings.weights`` asks for one."""
    lb = board.leaderboard
    flagged = flagged_axes(board, audits)
    header = ["system", *AXES]
    rows = [
        [s.system, *(profile_cell(board, s, a, bool(flagged[a])) for a in AXES)]
        for s in profiled(board)
    ]
    note = profile_note(board, flagged)
    if lb.weights is not None:
        header.append("composite")
        for row, s in zip(rows, profiled(board), strict=True):
            row.append(composite_cell(s))
        note += (
            f" Composite: Σ weight × Elo on the axis ({weights_text(lb.weights)}), its interval "
            "from the same bootstrap rounds; '–' where a weighted axis has no Elo."
        )
    return Table(f"Elo per axis: {board.title}", header, rows, note, f"axes-{board.key}")


def composite_cell(s: Standing) -> str:
    """The weighted composite with its interval, ``–`` without one."""
    if math.isnan(s.composite_elo):
        return "–"
    if not math.isfinite(s.composite_low):
        return f"({s.composite_elo:.0f})"
    return f"{s.composite_elo:.0f} [{interval(s.composite_low, s.composite_high)}]"


# --- figure ---


def _point(
    board: Board, s: Standing, column: str, flagged: dict[str, tuple[str, ...]]
) -> tuple[float, float, float, str, bool, str]:
    """One point of a panel: Elo, interval, colour, hollow or not, and its tick label."""
    if column == COMPOSITE_MARK:
        return (s.composite_elo, s.composite_low, s.composite_high, "#222222", False,
                COMPOSITE_MARK)  # fmt: skip
    elo, low, high = s.axis_elo[column], s.axis_low[column], s.axis_high[column]
    colour = "#c8553d" if flagged[column] else "#1f4e79"
    if not (math.isfinite(low) and math.isfinite(high)):
        colour = "#999999"
    hollow = colour == "#999999" or bool(board.leaderboard.axis_preliminary(s, column))
    return elo, low, high, colour, hollow, f"{column}\n{s.axis_comparisons[column]} v"


def profile_png(board: Board, audits: list[JudgeAudit]) -> bytes:
    """Small multiples, one panel per system in board order (four to a row, each row one
    matplotlib axes, so that a figure of many systems stays quick to draw): Elo on each axis
    with its interval (filled: firm; hollow: preliminary; grey, no bar: no interval; red: a
    flagged judge gave some of the verdicts), the verdicts under each axis, and the weighted
    composite (Σw) when there is one. Panels share the Elo scale, 1500 dashed."""
    from matplotlib.transforms import blended_transform_factory

    lb = board.leaderboard
    standings = profiled(board)
    flagged = flagged_axes(board, audits)
    columns = [*AXES, *([COMPOSITE_MARK] if lb.weights is not None else [])]
    points = [[_point(board, s, c, flagged) for c in columns] for s in standings]
    values = [v for row in points for p in row for v in p[:3] if math.isfinite(v)]
    bottom, top = (min(values), max(values)) if values else (1400.0, 1600.0)
    pad = max(top - bottom, 40.0) * 0.12
    per_row = min(len(standings), PANELS_PER_ROW)
    rows = math.ceil(len(standings) / per_row)
    width = len(columns) + 1  # a panel's points and the gap after it
    height = 2.3 * rows + 0.6
    fig = new_figure(2.3 * per_row + 0.8, height)
    axes = fig.subplots(rows, 1, squeeze=False)[:, 0]
    for r, ax in enumerate(axes):
        along = blended_transform_factory(ax.transData, ax.transAxes)  # x: data, y: the axes
        for j, n in enumerate(range(r * per_row, min((r + 1) * per_row, len(standings)))):
            s, base = standings[n], j * width
            for x, (elo, low, high, colour, hollow, label) in enumerate(points[n], start=base):
                ax.text(x, -0.03, label, transform=along, ha="center", va="top", fontsize=7)
                if math.isnan(elo):
                    ax.text(x, (bottom + top) / 2, "no data", rotation=90, ha="center",
                            va="center", fontsize=7, color="#888888")  # fmt: skip
                    continue
                if math.isfinite(low) and math.isfinite(high):
                    ax.plot([x, x], [low, high], color=colour, lw=2.2, solid_capstyle="butt")
                ax.plot([x], [elo], "o", ms=5.5, color=colour,
                        markerfacecolor="white" if hollow else colour)  # fmt: skip
            name = s.system + (" (preliminary)" if s.preliminary else "")
            ax.text(base + (len(columns) - 1) / 2, 1.02, name, transform=along, ha="center",
                    va="bottom", fontsize=8)  # fmt: skip
            if j:
                ax.axvline(base - 1, color="#cccccc", lw=0.8)
        ax.axhline(1500, color="#bbbbbb", lw=1, ls="--")
        ax.set_xticks([])  # labels drawn as text: a figure of many systems stays quick
        ax.set_xlim(-0.7, per_row * width - 1.3)
        ax.set_ylim(bottom - pad, top + pad)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_ylabel("Elo", fontsize=8)
        ax.grid(axis="y", color="#eeeeee")
    fig.subplots_adjust(hspace=0.75)
    fig.suptitle(
        f"Five-axis profile ({board.title}); filled: firm, hollow: preliminary, grey: no "
        "interval, red: a flagged judge" + ("; Σw: weighted composite" if lb.weights else ""),
        fontsize=9,
        y=1 + 0.2 / height,  # above the systems' names
    )
    return png_bytes(fig)


# --- CSV ---


PROFILE_HEADER = [
    "board", "system", "axis", "elo", "low", "high", "verdicts", "conversations", "win_rate",
    "preliminary", "preliminary_reasons", "flagged_judges", "weight",
]  # fmt: skip


def profile_rows(board: Board, audits: list[JudgeAudit]) -> list[list[Cell]]:
    """One row per system and axis in board order: the Elo on the axis and its interval (empty
    where none), the verdicts and conversations behind it, whether it is preliminary and why,
    the flagged judges who judged the axis, and the axis's weight in the composite (empty
    without ``ratings.weights``)."""
    lb = board.leaderboard
    flagged = flagged_axes(board, audits)
    weights = lb.weights
    rows: list[list[Cell]] = []
    for s in profiled(board):
        for axis in AXES:
            reasons = lb.axis_preliminary(s, axis) if s.axis_comparisons[axis] else ()
            rows.append(
                [
                    board.key, s.system, axis, s.axis_elo[axis], s.axis_low[axis],
                    s.axis_high[axis], s.axis_comparisons[axis], s.axis_conversations[axis],
                    s.axis_win_rates[axis], bool(reasons) or not s.axis_comparisons[axis],
                    "; ".join(reasons) if s.axis_comparisons[axis] else "no verdict judged it",
                    ";".join(flagged[axis]),
                    None if weights is None else weights.get(axis, 0.0),
                ]
            )  # fmt: skip
    return rows


def profile_file(boards: list[Board], audits: list[JudgeAudit]) -> dict[str, str]:
    """axis_profile.csv: every board's profile, one under the other (none without a board)."""
    if not boards:
        return {}
    rows = [r for board in boards for r in profile_rows(board, audits)]
    return {"axis_profile.csv": csv_text(PROFILE_HEADER, rows)}
