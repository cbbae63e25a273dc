"""The report's tables as plain cells, built once and rendered as Markdown, HTML, CSV or rich."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from heart.analyses import (
    BEST_HUMAN,
    CLEAR_CONSENSUS,
    INTERVAL_CONVERSATIONS,
    MIN_SEPARATION,
    MIN_SPEARMAN,
    SOURCE_TITLES,
    AdversarialReport,
    AgreementReport,
    Board,
    JudgeAudit,
    RaterCheck,
    Standing,
    SubsetComparison,
)
from heart.report._colours import band_colour
from heart.stats import Share
from heart.types import Axis

AXES = [a.value for a in Axis]
MAX_DIFFERENCE_ROWS = 40


@dataclass
class Table:
    """A titled table of text cells; ``colours`` (optional) gives each cell's background."""

    title: str
    header: list[str]
    rows: list[list[str]]
    note: str = ""
    key: str = ""
    colours: list[list[str | None]] = field(default_factory=list)


NO_DATA = "no data"
"""An axis cell of a system whose verdicts did not judge that axis (people, imports)."""


def pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.0f}%"


def axis_cell(x: float, text: str) -> str:
    return NO_DATA if math.isnan(x) else text


def _num(x: float, digits: int = 0) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def _interval(low: float, high: float) -> str:
    if math.isinf(low) or math.isinf(high) or math.isnan(low) or math.isnan(high):
        return "–"
    return f"{low:.0f}–{high:.0f}"


def _level(board: Board) -> str:
    return f"{100 * board.leaderboard.level:.0f}%"


def rank_cell(s: Standing) -> str:
    """A standing's rank, shared by the systems it cannot be told apart from; "–" unranked."""
    return str(s.rank) if s.ranked else "–"


def evidence_cell(s: Standing) -> str:
    return "preliminary: " + "; ".join(s.preliminary) if s.preliminary else "firm"


def board_table(board: Board) -> Table:
    """The leaderboard in the style of the paper's Figure 4, with all three intervals, the
    evidence behind each system and ranks that admit ties."""
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
                rank, s.system, s.family, f"{s.elo:.0f}", _interval(s.low, s.high),
                _interval(s.robust_low, s.robust_high), _interval(s.paper_low, s.paper_high),
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
    rule = lb.rule
    note = (
        f"{lb.comparisons} comparisons over {lb.conversations} conversations from "
        f"{len(lb.judges)} judges. Elo from a strength-weighted Bradley–Terry fit (mean 1500 over "
        "the systems with an interval); the default interval resamples conversations "
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
    if board.best_human is not None:
        add("†", board.best_human)
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
    return Table(f"Leaderboard: {board.title}", header, rows, note, f"board-{board.key}", colours)


def axis_elo_table(board: Board) -> Table:
    rows = [
        [s.system, *(axis_cell(s.axis_elo[a], f"{s.axis_elo[a]:.0f}") for a in AXES)]
        for s in board.leaderboard.standings
    ]
    return Table(
        f"Elo per axis: {board.title}",
        ["system", *AXES],
        rows,
        "Bradley–Terry on each axis's verdicts, weighted by their strength; 'no clear "
        f"advantage' counts as a tie. '{NO_DATA}': no verdict on this system judged the axis "
        "(human raters and imported verdicts give only the overall preference).",
        f"axes-{board.key}",
    )


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
            names[d.i], names[d.j], f"{d.difference:+.0f}", _interval(d.low, d.high),
            _num(d.p_value, 3), _num(d.p_adjusted, 3), "yes" if d.significant else "no",
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
        [s.system, f"{s.elo:.0f}", *(_num(a.elo[s.system]) for a in lb.ablations)]
        for s in lb.standings
    ]
    rows.append(
        ["Kendall τ with the default", "1", *(_num(a.kendall_tau, 2) for a in lb.ablations)]
    )
    note = " ".join(f"{a.name}: {a.description}." for a in lb.ablations)
    return Table(f"Ablations: {board.title}", header, rows, note, f"ablations-{board.key}")


def agreement_tables(report: AgreementReport | None) -> list[Table]:
    """Human–LLM and inter-human agreement, judges with each other, reliability, stability."""
    if report is None or report.empty:
        return []
    tables = []
    summary = [
        ["human majority vs LLM-ensemble majority (all pairs)", _share(report.human_llm)],
        ["each human rater vs the majority of the others", _share(report.inter_human)],
        ["human vs LLM on ambiguous pairs", _share(report.ambiguous)],
        ["human vs LLM on clear pairs", _share(report.clear)],
        *[
            [f"LLM judge {j} vs human majority", _share(r)]
            for j, r in report.judge_vs_humans.items()
        ],
    ]
    if any(cells[1] != "–" for cells in summary):
        tables.append(
            Table(
                "Agreement with human raters",
                ["what", "agreement"],
                summary,
                "Share of pairs where the two sides picked the same reply, with a percentile "
                "interval from resampling conversations. Ties and judges whose verdicts changed "
                "with the order abstain. Ambiguous: no side holds "
                f"{pct(CLEAR_CONSENSUS)} of the human raters.",
                "agreement-humans",
            )
        )
    judges = [[f"{x} & {y}", _share(r)] for x, y, r in report.judge_pairs]
    judges += [[" & ".join(t), _share(r)] for t, r in report.judge_triples]
    if judges:
        tables.append(
            Table(
                "Agreement between LLM judges",
                ["judges", "agreement"],
                judges,
                "Share of the pairs all of them voted on where they picked the same reply.",
                "agreement-judges",
            )
        )
    if report.reliability:
        rows = [
            [
                r.group, str(r.units), str(r.raters), f"{_num(r.kappa, 3)} (on {r.kappa_units})",
                _num(r.alpha_nominal, 3), _num(r.alpha_ordinal, 3),
                ", ".join(f"{a} {_num(v, 2)}" for a, v in r.axis_kappa.items()) or "–",
            ]
            for r in report.reliability
        ]  # fmt: skip
        tables.append(
            Table(
                "Reliability of the preference",
                [
                    "raters",
                    "pairs",
                    "raters",
                    "Fleiss κ",
                    "Krippendorff α (nominal)",
                    "Krippendorff α (ordinal)",
                    "Fleiss κ per axis",
                ],
                rows,
                "κ on a / tie / b over the pairs rated by the most common number of raters; α "
                "nominal on the same labels, ordinal on the signed strength.",
                "reliability",
            )
        )
    if report.stability:
        rows = [
            [
                s.group, f"{s.subset_size} of {s.judges}", str(s.draws), _num(s.median, 2),
                _num(s.p05, 2), _num(s.minimum, 2), pct(s.same_top),
            ]
            for s in report.stability
        ]  # fmt: skip
        tables.append(
            Table(
                "Ranking stability when judges are subsampled",
                [
                    "judges",
                    "subset",
                    "draws",
                    "median τ",
                    "5th percentile τ",
                    "minimum τ",
                    "same top system",
                ],
                rows,
                "Kendall τ between the full board and boards refitted on subsets of the judges.",
                "stability",
            )
        )
    return tables


def _share(share: Share | None) -> str:
    return share.text() if share is not None else "–"


AUDIT_HEADER = [
    "judge", "source", "family", "verdicts", "flip rate (both orders)", "first shown won",
    "longer won", "control won", "own family won", "re-asked", "failed", "audit",
]  # fmt: skip

AUDIT_NOTE = (
    "LLM judges and human raters, collected by heart or imported, held to the same rules. Shares "
    "of verdicts with 95% Wilson intervals. An unbiased judge is near 50% for first shown, "
    "longer and own family, and near 0% flip rate; the control should rarely win. A tie ("
    '"about the same") favours neither reply: it takes no part in the shares, and verdicts '
    "counts it. The flip rate counts pairs judged in both orders with a winner both times (LLM "
    "judges need pairs.both_orders: true); own family is an LLM judge's (judging.own_family: "
    "allow). A judge or rater is flagged unreliable when the first-shown share is beyond 70/30 "
    "with its interval clear of 50%, or when the flip rate's interval lies above 25%."
)


def audit_source(audit: JudgeAudit) -> str:
    """Who gave the verdicts and where they came from: "LLM judge", "person, imported", ..."""
    who = "person" if audit.person else "LLM judge"
    imported, ok = audit.counts.imported, audit.counts.ok
    if not imported:
        return who
    return f"{who}, imported" if imported >= ok else f"{who}, {imported} of {ok} imported"


def audit_verdicts(audit: JudgeAudit) -> str:
    """The verdicts counted, with the ties among them: "40 (6 ties)"."""
    ties = f" ({audit.ties} tie{'s' * (audit.ties != 1)})" if audit.ties else ""
    return f"{audit.verdicts}{ties}"


def audit_verdict(audit: JudgeAudit) -> str:
    """The audit's conclusion on one judge, in words."""
    if audit.flagged:
        return "UNRELIABLE: " + "; ".join(audit.problems) + "."
    if audit.cautions:
        return "Caution: " + "; ".join(audit.cautions) + "."
    return "no problem found"


def audit_rows(audits: list[JudgeAudit]) -> list[list[str]]:
    """One row per judge: who it is, its shares with intervals, its answer health, and the
    verdict."""

    return [
        [
            a.judge, audit_source(a), a.family, audit_verdicts(a), _share(a.flip),
            _share(a.first_position), _share(a.longer), _share(a.control), _share(a.own_family),
            str(a.counts.reasked), str(a.counts.failed), audit_verdict(a),
        ]
        for a in audits
    ]  # fmt: skip


def audit_table(audits: list[JudgeAudit]) -> Table:
    return Table(
        "Judge audit (LLM judges and human raters)",
        AUDIT_HEADER,
        audit_rows(audits),
        AUDIT_NOTE,
        "judge-audit",
    )


ADVERSARIAL_NOTE = (
    "A rewrite becomes an item only if it alternates supporter and seeker, opens with the "
    "supporter's greeting, keeps every supporter turn word for word and the number of seeker "
    "turns, has at least 4 turns, passes the safety screen, ends on a seeker turn rated 8 or "
    "more, and keeps every rated seeker turn within the tolerance of its target. A rewrite that "
    "fails is asked again with the reasons (items.rewrite_retries), then rejected with the "
    "reasons of its last try. ESConv's original reply answered the calm seeker of the source "
    "conversation, so the ESConv original takes no part in adversarial items."
)


def rater_verdict(check: RaterCheck) -> str:
    """The hostility rater check's conclusion, in words."""
    if check.flagged:
        return "UNRELIABLE: " + "; ".join(check.problems) + "."
    if check.cautions:
        return "Caution: " + "; ".join(check.cautions) + "."
    return "no problem found"


def adversarial_tables(report: AdversarialReport) -> list[Table]:
    """Per escalation profile what became of the rewrites, and the hostility rater check."""
    outcome = [
        [p.profile, str(p.rewritten), str(p.kept), str(p.rewritten - p.kept),
         ", ".join(f"{why} {n}" for why, n in p.rejected.items()) or "–"]
        for p in report.profiles
    ]  # fmt: skip
    check = report.rater
    rater = [
        ["rewritten seeker turns rated", str(check.turns)],
        ["mean |rating − target|", _num(check.mean_error, 1)],
        ["Spearman ρ of ratings with targets", _num(check.spearman, 2)],
        ["mean rating of the rewritten turns", _num(check.rewritten_mean, 1)],
        ["mean rating of the original, calm turns", _num(check.original_mean, 1)],
        ["conclusion", rater_verdict(check)],
    ]
    return [
        Table(
            "Adversarial items by escalation profile",
            ["profile", "rewritten", "kept", "rejected", "reasons (last try)"],
            outcome,
            ADVERSARIAL_NOTE,
            "adversarial-items",
        ),
        Table(
            "Hostility rater check",
            ["what", "value"],
            rater,
            "The rater is the only check that a rewrite is as hostile as asked. It should rate "
            "the rewritten turns near their targets and well above the original seeker turns "
            f"(by {MIN_SEPARATION:g} or more, with Spearman ρ of {MIN_SPEARMAN:g} or more and "
            f"a mean miss within the tolerance of {check.tolerance}); otherwise its ratings, and "
            "the items it let through, are not evidence of hostility.",
            "hostility-rater",
        ),
    ]


def subset_tables(comparison: SubsetComparison) -> list[Table]:
    """Each system's Elo on regular and on adversarial items, the shift, and agreement."""
    lv = f"{100 * comparison.level:.0f}%"
    rows = [
        [s.system, f"{s.regular:.0f}", f"{s.adversarial:.0f}", f"{s.shift:+.0f}",
         _interval(s.low, s.high), str(s.rank_regular), str(s.rank_adversarial)]
        for s in comparison.shifts
    ]  # fmt: skip
    changes = "changes" if comparison.order_changes else "does not change"
    note = (
        "Elo on each subset, centred on the systems both rank (mean 1500); shift = adversarial "
        f"minus regular, with a {lv} interval from resampling conversations "
        f"({comparison.rounds} rounds, the same draws for both subsets). Kendall τ between the "
        f"two orders: {_num(comparison.kendall_tau, 2)}; the order {changes}."
    )
    if comparison.only_regular:
        note += f" On regular items only: {', '.join(comparison.only_regular)}."
    title = SOURCE_TITLES[comparison.source]
    tables = [
        Table(
            f"Regular against adversarial items: {title}",
            [
                "system",
                "Elo regular",
                "Elo adversarial",
                "shift",
                f"{lv} CI",
                "rank regular",
                "rank adversarial",
            ],
            rows,
            note,
            f"subsets-{comparison.source}",
        )
    ]
    if any(share is not None for share in comparison.agreement.values()):
        tables.append(
            Table(
                "Human–LLM agreement by subset",
                ["items", "agreement"],
                [[subset, _share(share)] for subset, share in comparison.agreement.items()],
                "Human majority against the LLM ensemble's majority on the pairs both voted on.",
                "agreement-subsets",
            )
        )
    return tables
