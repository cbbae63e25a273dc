"""The report's boards, one section each: the leaderboard in the style of the paper's Figure 4,
then, to open when wanted, its heatmap and forest plot, the five-axis profile, head to head,
the differences between systems, the ablations and (when on) style control; and their CSV files
(leaderboard.csv, differences.csv, axis_profile.csv, style.csv)."""

from __future__ import annotations

import itertools
import math
from functools import partial

import numpy as np

from heart.analyses import (
    BEST_HUMAN,
    INTERVAL_CONVERSATIONS,
    Assistance,
    Board,
    JudgeAudit,
    LatencyReport,
    Leaderboard,
    Standing,
    StyleCoefficient,
    StyleControl,
    board_audit,
)
from heart.report._colours import band_colour
from heart.report._csv import Cell, csv_text
from heart.report._facts import StudyFacts
from heart.report._figures import bands, new_figure, png_bytes
from heart.report._latency import TTFT_COLUMNS, ttft_cells, with_ttft
from heart.report._profile import (
    axis_profile_table,
    composite_cell,
    profile_file,
    profile_png,
    weights_text,
)
from heart.report._section import Block, Details, Figure, Flag, Section
from heart.report._table import (
    AXES,
    MAX_DIFFERENCE_ROWS,
    NO_DATA,
    Table,
    axis_cell,
    interval,
    num,
    pct,
    pick_columns,
)


def _level(board: Board) -> str:
    return f"{100 * board.leaderboard.level:.0f}%"


def rank_cell(s: Standing) -> str:
    """A standing's rank, shared by the systems it cannot be told apart from; "–" unranked."""
    return str(s.rank) if s.ranked else "–"


def evidence_cell(s: Standing) -> str:
    return "preliminary: " + "; ".join(s.preliminary) if s.preliminary else "firm"


def board_table(board: Board) -> Table:
    """The leaderboard in the style of the paper's Figure 4, with all three intervals, the
    evidence behind each system and ranks that admit ties; untitled, as its section is named
    after the board."""
    lv = _level(board)
    lb = board.leaderboard
    header = [
        "#", "system", "family", "Elo", f"{lv} CI (conversation bootstrap)",
        f"{lv} CI (cluster-robust)", f"{lv} CI (paper, SE=√(1/n))", "comparisons",
        "conversations", "opponents", "judges", "win rate", *AXES, "evidence",
    ]  # fmt: skip
    rows: list[list[str]] = []
    colours: list[list[str | None]] = []
    worst = max((s.rank for s in lb.standings), default=1)

    def add(rank: str, s: Standing) -> None:
        rates = [s.win_rate, *(s.axis_win_rates[a] for a in AXES)]
        rows.append(
            [
                rank, s.system, s.family, f"{s.elo:.0f}", interval(s.low, s.high),
                interval(s.robust_low, s.robust_high), interval(s.paper_low, s.paper_high),
                str(s.comparisons), str(s.conversations), str(s.opponents), str(s.judges),
                pct(s.win_rate), *(axis_cell(r, pct(r)) for r in rates[1:]), evidence_cell(s),
            ]
        )  # fmt: skip
        rank_colour = band_colour(-s.rank, -worst, -1.0) if s.ranked and worst > 1 else None
        colours.append(
            [None] * 3 + [rank_colour] + [None] * 7 + [band_colour(r, 0.0, 1.0) for r in rates]
        )

    for s in lb.standings:
        add(rank_cell(s), s)
    if lb.style is not None:  # the style-controlled Elo beside the plain one
        header[5:5] = [STYLE_ELO, f"{lv} CI (style-controlled)"]
        for row, colour, s in zip(rows, colours, lb.standings, strict=True):
            row[5:5] = [style_elo_cell(lb, s), interval(s.style_low, s.style_high)]
            colour[5:5] = [None, None]
    if lb.weights is not None:  # the weighted composite beside the overall Elo
        header[5:5] = [COMPOSITE]
        for row, colour, s in zip(rows, colours, lb.standings, strict=True):
            row[5:5] = [composite_cell(s)]
            colour[5:5] = [None]
    note = (
        f"{lb.comparisons} comparisons over {lb.conversations} conversations from "
        f"{len(lb.judges)} judges. Rank: shared by the systems that cannot be told apart; '–': "
        f"no interval (fewer than {INTERVAL_CONVERSATIONS} conversations), so no rank."
    )
    if board.best_human is not None:
        add("†", board.best_human)
        if lb.style is not None:
            rows[-1][5:5] = ["–", "–"]  # the Best human's separate fit has no style control
            colours[-1][5:5] = [None, None]
        if lb.weights is not None:
            rows[-1][5:5] = ["–"]  # nor a composite
            colours[-1][5:5] = [None]
        note += (
            f" † {BEST_HUMAN}: per context the human reply that won most, from a separate fit; "
            "biased upwards by that selection, so it is not ranked."
        )
    if lb.separated or lb.separated_rounds:
        note += (
            " Some system won or lost all its comparisons in the data or in "
            f"{lb.separated_rounds} bootstrap rounds (perfect separation); those "
            "fits used a weak ridge penalty so the ratings stay finite."
        )
    if lb.style is not None and lb.style.preliminary:
        note += (
            " Style-controlled Elo in parentheses: the style fit is preliminary ("
            + "; ".join(lb.style.preliminary)
            + ")."
        )
    if lb.weights is not None:
        note += (
            f" {COMPOSITE}: Σ weight × Elo per axis ({weights_text(lb.weights)}, from "
            "ratings.weights) with its interval from the same bootstrap rounds, in parentheses "
            "where it has none; the ranking stays the overall Elo's."
        )
    note += " How Elo, intervals, ranks, marks and win rates are computed: in the detail below."
    table = Table("", header, rows, note, f"board-{board.key}", colours)
    if board.assistance is None:
        return table
    # people's overall preference with the judges' help: one interval, no axes
    kept = [c for c in header if "cluster-robust" not in c and "paper" not in c and c not in AXES]
    return pick_columns(table, kept, "", note, table.key)


COMPOSITE = "weighted composite [CI]"
STYLE_ELO = "Elo, style-controlled"


def style_elo_cell(lb: Leaderboard, s: Standing) -> str:
    """A system's style-controlled Elo, in parentheses when the style fit is preliminary."""
    text = num(s.style_elo)
    return f"({text})" if lb.style is not None and lb.style.preliminary and text != "–" else text


def board_method(board: Board) -> str:
    """How a board's numbers are computed: its Elo, the three intervals, the ranks, the
    preliminary marks and the win rates."""
    lb = board.leaderboard
    rule = lb.rule
    return (
        f"How the leaderboard is computed. Elo from a strength-weighted Bradley–Terry fit (mean "
        "1500 over the systems with an interval); the default interval resamples conversations "
        f"({lb.rounds} rounds); the cluster-robust one is the sandwich formula with conversations "
        "as clusters; both are widened for a system's number of conversations (Student's t "
        "with one fewer degrees of freedom than conversations). The paper's treats every "
        "comparison as independent. Rank: 1 + the systems whose interval lies wholly above, "
        "so systems that cannot be told apart share a rank, and the Elo colour follows the rank; "
        f"'–': no interval (fewer than {INTERVAL_CONVERSATIONS} conversations), so no rank. "
        f"Preliminary: fewer than {rule.conversations} conversations or {rule.comparisons} "
        "comparisons, or every verdict from one rater. Win rates: share of comparisons won, "
        f"ties half; per axis, over the verdicts that judged the axis ('{NO_DATA}': none did)."
    )


STYLE_METHOD = (
    "Style control. Judges, people included, can reward a reply for being long, for asking "
    "questions, for formatting or for stock warmth rather than for the support it gives. The "
    "style-controlled Elo refits the same Bradley–Terry model with four covariates per "
    "comparison: the normalised difference (a − b)/(a + b + 1) between the two replies' word "
    "counts, questions asked (runs of '?'), markdown elements (headings, list items, emphasis, "
    "code, links) and word pairs shared with the generic-warmth phrases (the control systems' "
    "replies unless ratings.warmth_phrases names others), each divided by its spread over the "
    "comparisons. What a style wins on its own goes to its coefficient, the log-odds of winning "
    "per spread of difference, and each system's controlled Elo is what remains. A coefficient "
    "whose interval lies above zero says the judges reward that style; a system that drops "
    "between the plain and the controlled column won partly by style. A feature that never "
    "differs, or that the systems compared already determine, is left out and named. Intervals "
    "resample conversations with the plain board's draws; each round is refitted in full on a "
    "small board, and on a large one (ratings.style_bootstrap) takes one Newton step from the "
    "full fit, within a fraction of an Elo point of refitting; each table's note says which. "
    "The fit rests on all the board's comparisons, so the board's evidence rule applies to all "
    "of them at once: below it, or when a style or a system decides every win, the fit is "
    "preliminary and its numbers are shown in parentheses."
)


def style_table(board: Board) -> Table | None:
    """What each style feature buys on this board, with its interval; None without style
    control."""
    style = board.leaderboard.style
    if style is None:
        return None
    lv = _level(board)
    header = ["style feature", "coefficient (log-odds per spread)", f"{lv} CI"]
    rows = [[c.feature, coefficient_cell(style, c), coefficient_interval(c)]
            for c in style.coefficients]  # fmt: skip
    rows += [[name, "left out", why] for name, why in style.dropped]
    note = style_note(style)
    return Table(f"Style control: {board.title}", header, rows, note, f"style-{board.key}")


def coefficient_cell(style: StyleControl, c: StyleCoefficient) -> str:
    """A coefficient to two decimals, in parentheses when the style fit is preliminary."""
    text = num(c.coefficient, 2)
    return f"({text})" if style.preliminary else text


def coefficient_interval(c: StyleCoefficient) -> str:
    """Like ``0.12–0.48``; a dash without an interval."""
    finite = math.isfinite(c.low) and math.isfinite(c.high)
    return f"{c.low:.2f}–{c.high:.2f}" if finite else "–"


def style_note(style: StyleControl) -> str:
    """How sure the style fit is: preliminary and why, the resamples, and the ridge guard."""
    note = (
        "Preliminary, read as a first look: " + "; ".join(style.preliminary) + ". "
        if style.preliminary
        else ""
    ) + f"{style.rounds} conversation resamples"
    if style.method == "one-step":
        note += (
            f", {style.stepped_rounds} of them fitted by one Newton step from the full fit "
            "(within a fraction of an Elo point of refitting them on a board this large), the "
            "others refitted."
        )
    else:
        note += ", each refitted."
    if style.separated_rounds:
        note += f" {style.separated_rounds} of them needed the weak ridge penalty (separation)."
    return note


def head_to_head_table(board: Board) -> Table:
    """Share of the comparisons between each two systems won by the row's system."""
    lb = board.leaderboard
    names = lb.systems
    rows, colours = [], []
    for i, name in enumerate(names):
        shares = [float(x) for x in lb.head_to_head[i]]
        rows.append([name, *("" if i == j else pct(x) for j, x in enumerate(shares))])
        colours.append(
            [None, *(None if i == j else band_colour(x, 0.0, 1.0) for j, x in enumerate(shares))]
        )
    return Table(
        f"Head to head: {board.title}",
        ["won by ↓ against →", *names],
        rows,
        "Share of the comparisons between the two systems won by the row's system (ties half).",
        f"h2h-{board.key}",
        colours,
    )


def differences_table(board: Board) -> Table:
    """Pairwise Elo differences with bootstrap intervals, Benjamini–Hochberg p-values and
    whether the pair is clear (the two systems' intervals lie apart)."""
    lb = board.leaderboard
    names = lb.systems
    diffs = sorted(
        lb.differences, key=lambda d: (not d.clear, not d.significant, d.p_adjusted, d.i, d.j)
    )
    shown = diffs if len(diffs) <= MAX_DIFFERENCE_ROWS else [d for d in diffs if d.clear]
    rows = [
        [
            names[d.i], names[d.j], f"{d.difference:+.0f}", interval(d.low, d.high),
            num(d.p_value, 3), num(d.p_adjusted, 3), "yes" if d.significant else "no",
            "yes" if d.clear else "no",
        ]
        for d in shown
    ]  # fmt: skip
    note = (
        f"{len(diffs)} pairs; intervals and two-sided p-values from the conversation bootstrap, "
        "the intervals widened for the fewer conversations of the two systems, the p-values "
        "adjusted by Benjamini–Hochberg across all pairs of this board (significant: adjusted "
        "p < 0.05). Clear: the two systems' own intervals lie apart, the rule the ranks follow, "
        "and neither system's verdicts all come from one rater. A system without an interval is "
        "in no significant or clear pair."
    )
    if len(shown) < len(diffs):
        note += " Only the clear pairs are listed; differences.csv has them all."
    return Table(
        f"Differences between systems: {board.title}",
        ["system", "vs", "Δ Elo", f"{_level(board)} CI", "p", "p (BH)", "significant", "clear"],
        rows,
        note,
        f"differences-{board.key}",
    )


def ablation_table(board: Board) -> Table:
    lb = board.leaderboard
    header = ["system", "Elo (default)", *(a.name for a in lb.ablations)]
    rows = [
        [s.system, f"{s.elo:.0f}", *(num(a.elo[s.system]) for a in lb.ablations)]
        for s in lb.standings
    ]
    rows.append(["Kendall τ with the default", "1", *(num(a.kendall_tau, 2) for a in lb.ablations)])
    note = " ".join(f"{a.name}: {a.description}." for a in lb.ablations)
    return Table(f"Ablations: {board.title}", header, rows, note, f"ablations-{board.key}")


def board_tables(
    board: Board, latency: LatencyReport | None = None, audits: list[JudgeAudit] | None = None
) -> list[Table]:
    """Every table of one board, the leaderboard first (with a median-TTFT column when systems
    have timings), then its five-axis profile (axes judged by a judge ``audits`` flags
    marked)."""
    if board.assistance is not None:  # people's overall preference only: no axes, no ablations
        return [board_table(board), head_to_head_table(board), differences_table(board)]
    style = style_table(board)
    return [
        with_ttft(board_table(board), latency),
        axis_profile_table(board, audits or []),
        head_to_head_table(board),
        differences_table(board),
        ablation_table(board),
        *([] if style is None else [style]),
    ]


def board_detail(board: Board, main: bool) -> str:
    """The line that says what a board's closed detail holds."""
    diffs = board.leaderboard.differences
    clear = sum(d.clear for d in diffs)
    heatmap = "heatmap, " if main else ""
    return (
        f"More on this board: how it is computed, {heatmap}forest plot, Elo per axis, head to "
        f"head, differences ({len(diffs)} pairs, {clear} clear), ablations"
    )


def board_section(facts: StudyFacts, board: Board, main: bool = False) -> Section:
    """One board: its leaderboard in full, then, closed in the HTML under a line saying what it
    holds, how the board is computed, the heatmap (the main board only), the forest plot, the
    five-axis profile's small multiples (the main board only, when its verdicts judged the
    axes; every board has the profile's table) and its other tables."""
    first, *others = board_tables(board, facts.latency, facts.audit)
    figures: list[Block] = []
    if main:
        figures.append(
            Figure(f"heatmap-{board.key}", "leaderboard heatmap", partial(heatmap_png, board))
        )
    figures.append(Figure(f"forest-{board.key}", "Elo forest plot", partial(forest_png, board)))
    if main and any(board.leaderboard.axis_judges.values()):  # some verdict judged the axes
        figures.append(
            Figure(
                f"profile-{board.key}", "five-axis profile, one panel per system",
                partial(profile_png, board, facts.audit),
            )
        )  # fmt: skip
    method = [board_method(board)] + ([STYLE_METHOD] if board.leaderboard.style else [])
    if board.assistance is not None:
        method.append(ASSISTED_METHOD)
    blocks = [*method, *figures, *others]
    detail = Details(board_detail(board, main), blocks, f"more-{board.key}")
    lead: list[Block] = [] if board.assistance is None else [assistance_text(board.assistance)]
    fragile = fragile_orders_text(board)
    after: list[Block] = [] if fragile is None else [Flag(fragile, f"fragile-{board.key}")]
    return Section(board.key, board.title, [*lead, first, *after, detail])


ASSISTED_METHOD = (
    "How the judges help. Prediction-powered inference (PPI++): every people's verdict on an "
    "item-pair an LLM judge also judged is a labelled point, its prediction the judges' mean "
    "outcome on that item-pair (ties half); every item-pair the judges judged, between systems "
    "people compared, is an unlabelled point with that prediction as its outcome. The fit "
    "minimises people's Bradley–Terry loss plus λ times the judges' loss on all item-pairs "
    "minus their loss on the people's: what the judges get wrong where people also judged is "
    "measured and taken out, so the board estimates people's Elo, not the judges'. λ (0 to 1) "
    "is chosen to make the intervals narrowest, with conversations as clusters; 0 is people "
    "alone. Intervals resample conversations, people's and judges' points together, with λ "
    "held at its value. Exact when the weight of a people's verdict does not depend on which "
    "item-pair it is."
)


def assistance_text(help_: Assistance) -> str:
    """What the judges added to people's board, in words."""
    judges = ", ".join(help_.judges)
    text = (
        f"People's verdicts with the LLM judges' help: λ = {help_.lam:.2f} (0 would be people "
        f"alone), from {help_.judge_verdicts} verdicts by {judges} on {help_.unlabelled_pairs} "
        f"item-pairs and {help_.labelled} people's verdicts on item-pairs they also judged."
    )
    if math.isfinite(help_.effective_verdicts) and help_.worth >= 0.5:
        text += (
            f" The judges' verdicts were worth about {help_.worth:.0f} more people's verdicts "
            f"(intervals {pct(help_.width_ratio)} as wide as people's alone on the same points)."
        )
    elif math.isfinite(help_.effective_verdicts):
        text += " The judges' verdicts did not narrow people's intervals."
    if help_.left_out:
        text += (
            f" {help_.left_out} people's verdicts are on item-pairs no LLM judge judged and are "
            "left out of this board (the people's board counts them)."
        )
    return text


def board_sections(facts: StudyFacts) -> list[Section]:
    """A section per board, the main one first; without a board, one line saying how to get
    one."""
    if not facts.boards:
        return [
            Section("boards", "Leaderboard", empty="No valid judgments yet: run `heart run` to "
                    "fill the board.")
        ]  # fmt: skip
    return [board_section(facts, b, main=n == 0) for n, b in enumerate(facts.boards)]


# --- CSV ---


BOARD_HEADER = [
    "board", "rank", "system", "kind", "family", "elo", "low", "high", "robust_low",
    "robust_high", "paper_low", "paper_high", "comparisons", "conversations", "opponents",
    "judges", "preliminary", "preliminary_reasons", "audit", "flagged_judges", "win_rate",
    *(f"win_rate_{a}" for a in AXES), *(f"elo_{a}" for a in AXES), *TTFT_COLUMNS,
    "composite_elo", "composite_low", "composite_high", "flip_verdicts", "flip_conversations",
    "flip_bound", "lambda", "effective_verdicts",
]  # fmt: skip


def board_rows(
    board: Board, audits: list[JudgeAudit], latency: LatencyReport | None = None
) -> list[list[Cell]]:
    """The board: one row per system, the best human last (rank †); rank empty where the system
    has no interval; the audit's verdict on the board's judges on every row; TTFT columns from
    ``latency``."""
    ranked: list[tuple[Cell, Standing]] = [
        (s.rank if s.ranked else None, s) for s in board.leaderboard.standings
    ]
    if board.best_human is not None:
        ranked.append(("†", board.best_human))
    audit = board_audit(board, audits)
    help_ = board.assistance
    assisted: list[Cell] = [None, None] if help_ is None else [help_.lam, help_.effective_verdicts]
    return [
        [
            board.key, rank, s.system, s.kind, s.family, s.elo, s.low, s.high, s.robust_low,
            s.robust_high, s.paper_low, s.paper_high, s.comparisons, s.conversations,
            s.opponents, s.judges, bool(s.preliminary), "; ".join(s.preliminary), audit.verdict,
            ";".join(audit.flagged), s.win_rate, *(s.axis_win_rates[a] for a in AXES),
            *(s.axis_elo[a] for a in AXES), *ttft_cells(latency, s.system), s.composite_elo,
            s.composite_low, s.composite_high, _count(s.flip_verdicts),
            _count(s.flip_conversations), not s.flip_narrowed, *assisted,
        ]
        for rank, s in ranked
    ]  # fmt: skip


def _count(x: float) -> int | None:
    """A count kept as a float (NaN: none) as a whole number or an empty cell."""
    return None if math.isnan(x) else int(x)


FRAGILE_SHARE = 0.01
"""An order that flips when fewer than this share of a board's verdicts are removed is marked."""


def fragile_orders_text(board: Board) -> str | None:
    """The board's orders that flip when under ``FRAGILE_SHARE`` of its verdicts are removed,
    in words (None when there is none)."""
    lb = board.leaderboard
    parts = []
    for upper, lower in itertools.pairwise(lb.standings):
        n = upper.flip_verdicts
        if math.isnan(n) or n >= FRAGILE_SHARE * lb.comparisons:
            continue
        bound = "at most " if not upper.flip_narrowed else ""
        conversations = upper.flip_conversations
        part = (
            f"{upper.system} above {lower.system}: {bound}{n:.0f} of {lb.comparisons} verdicts "
            f"({n / lb.comparisons:.1%})"
        )
        if not math.isnan(conversations):
            part += f" or {conversations:.0f} of {lb.conversations} conversations"
        parts.append(part)
    if not parts:
        return None
    return (
        "Fragile order, flipped by removing under 1% of the board's verdicts: "
        + "; ".join(parts)
        + ". (Found by removing the most gap-closing verdicts first and refitting: a count "
        "this small is enough; fewer might be.)"
    )


DIFFERENCE_HEADER = [
    "board", "system", "vs", "elo_difference", "low", "high", "p", "p_bh", "significant", "clear"
]  # fmt: skip


def difference_rows(board: Board) -> list[list[Cell]]:
    names = board.leaderboard.systems
    return [
        [board.key, names[d.i], names[d.j], d.difference, d.low, d.high, d.p_value, d.p_adjusted,
         d.significant, d.clear]
        for d in board.leaderboard.differences
    ]  # fmt: skip


def board_files(facts: StudyFacts) -> dict[str, str]:
    """leaderboard.csv, differences.csv and axis_profile.csv, every board's rows in one file
    each."""
    boards, differences = [], []
    for board in facts.boards:
        boards += board_rows(board, facts.audit, facts.latency)
        differences += difference_rows(board)
    files = {
        "leaderboard.csv": csv_text(BOARD_HEADER, boards),
        "differences.csv": csv_text(DIFFERENCE_HEADER, differences),
        **profile_file(facts.boards, facts.audit),
    }
    styled = [b for b in facts.boards if b.leaderboard.style is not None]
    if styled:
        files["style.csv"] = csv_text(STYLE_HEADER, [r for b in styled for r in style_rows(b)])
    return files


STYLE_HEADER = ["board", "what", "name", "value", "low", "high", "note"]


def style_rows(board: Board) -> list[list[Cell]]:
    """Style control on one board: per system its controlled Elo and interval, per style
    feature its coefficient and interval, and each feature left out with the reason."""
    style = board.leaderboard.style
    if style is None:
        return []
    fit = "; ".join(style.preliminary)
    rows: list[list[Cell]] = [
        [board.key, "elo", s.system, s.style_elo, s.style_low, s.style_high,
         "; ".join([*([evidence_cell(s)] if s.preliminary else []),
                    *([f"style fit preliminary: {fit}"] if fit else [])])]
        for s in board.leaderboard.standings
    ]  # fmt: skip
    rows += [
        [board.key, "coefficient", c.feature, c.coefficient, c.low, c.high,
         f"preliminary: {fit}" if fit else ""]
        for c in style.coefficients
    ]  # fmt: skip
    rows += [[board.key, "left out", name, None, None, None, why] for name, why in style.dropped]
    return rows


# --- figures ---


def heatmap_png(board: Board) -> bytes:
    """The board as a coloured grid: Elo with its interval, then overall and per-axis win rates,
    each column banded on its own scale (win rates around 50%)."""
    standings = board.leaderboard.standings
    k = len(standings)
    columns = ["Elo", "win rate", *AXES]
    elo = np.asarray([s.elo for s in standings])
    rates = np.asarray([[s.win_rate, *(s.axis_win_rates[a] for a in AXES)] for s in standings])
    spread = max(float(np.nanmax(np.abs(elo - 1500))), 1.0)
    scaled = np.column_stack([(elo - 1500) / (2 * spread) + 0.5, rates])
    fig = new_figure(1.25 * len(columns) + 2.2, 0.42 * k + 1.2)
    ax = fig.subplots()
    ax.imshow(np.nan_to_num(scaled, nan=0.5), cmap=bands(), vmin=0, vmax=1, aspect="auto")
    for i, s in enumerate(standings):
        ax.text(0, i, f"{s.elo:.0f} [{s.low:.0f}, {s.high:.0f}]", ha="center", va="center",
                fontsize=8)  # fmt: skip
        for j, value in enumerate(rates[i], start=1):
            text = ("–" if j == 1 else "no data") if math.isnan(value) else f"{100 * value:.0f}%"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(columns)), columns, fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(k), [s.system for s in standings], fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(f"HEART leaderboard ({board.title})", fontsize=10, pad=24)
    return png_bytes(fig)


def forest_png(board: Board) -> bytes:
    """Elo per system with the conversation-bootstrap interval (dark) and the paper's
    SE = sqrt(1/n) interval (light); the selection-biased best human in grey when present."""
    rows = list(board.leaderboard.standings)
    if board.best_human is not None:
        rows.append(board.best_human)
    k = len(rows)
    fig = new_figure(7.0, 0.34 * k + 1.3)
    ax = fig.subplots()
    y = np.arange(k)[::-1]
    for yi, s in zip(y, rows, strict=True):
        grey = s.system == BEST_HUMAN
        ax.plot([s.paper_low, s.paper_high], [yi - 0.18] * 2, color="#9bb7d4", lw=2.5,
                solid_capstyle="butt")  # fmt: skip
        ax.plot([s.low, s.high], [yi, yi], color="#888888" if grey else "#1f4e79", lw=2.5)
        ax.plot([s.elo], [yi], "o", color="#888888" if grey else "#1f4e79", ms=5)
    ax.axvline(1500, color="#bbbbbb", lw=1, ls="--")
    labels = [s.system + (" (selection-biased)" if s.system == BEST_HUMAN else "") for s in rows]
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel(
        f"Elo; dark: {100 * board.leaderboard.level:.0f}% conversation bootstrap, "
        "light: the paper's SE = √(1/n)",
        fontsize=8,
    )
    ax.set_title(f"Elo with intervals ({board.title})", fontsize=10)
    ax.grid(axis="x", color="#eeeeee")
    return png_bytes(fig)
