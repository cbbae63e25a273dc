"""The report's Agreement section: human–LLM and inter-human agreement, the LLM judges with
each other, the reliability of the preference and the ranking's stability when judges are
subsampled; its tables and CSV files."""

from __future__ import annotations

from heart.analyses import CLEAR_CONSENSUS, AgreementReport
from heart.report._csv import SHARE_COLUMNS, Cell, csv_text, share_cells
from heart.report._facts import StudyFacts
from heart.report._section import Section
from heart.report._table import AXES, Table, num, pct, share_text
from heart.stats import Share

NO_AGREEMENT = "Agreement needs verdicts from at least two judges or raters on the same pairs."


def agreement_tables(report: AgreementReport | None) -> list[Table]:
    """Human–LLM and inter-human agreement, judges with each other, reliability, stability."""
    if report is None or report.empty:
        return []
    tables = []
    summary = [
        ["human majority vs LLM-ensemble majority (all pairs)", share_text(report.human_llm)],
        ["each human rater vs the majority of the others", share_text(report.inter_human)],
        ["human vs LLM on ambiguous pairs", share_text(report.ambiguous)],
        ["human vs LLM on clear pairs", share_text(report.clear)],
        *[
            [f"LLM judge {j} vs human majority", share_text(r)]
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
    judges = [[f"{x} & {y}", share_text(r)] for x, y, r in report.judge_pairs]
    judges += [[" & ".join(t), share_text(r)] for t, r in report.judge_triples]
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
                r.group, str(r.units), str(r.raters), f"{num(r.kappa, 3)} (on {r.kappa_units})",
                num(r.alpha_nominal, 3), num(r.alpha_ordinal, 3),
                ", ".join(f"{a} {num(v, 2)}" for a, v in r.axis_kappa.items()) or "–",
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
                s.group, f"{s.subset_size} of {s.judges}", str(s.draws), num(s.median, 2),
                num(s.p05, 2), num(s.minimum, 2), pct(s.same_top),
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


def agreement_files(facts: StudyFacts) -> dict[str, str]:
    """Agreement with humans and between judges, reliability and stability, one file each."""
    report = facts.agreement
    if report is None or report.empty:
        return {}
    humans: list[tuple[str, Share | None]] = [
        ("human majority vs LLM-ensemble majority", report.human_llm),
        ("each human rater vs the majority of the others", report.inter_human),
        ("human vs LLM on ambiguous pairs", report.ambiguous),
        ("human vs LLM on clear pairs", report.clear),
        *((f"LLM judge {j} vs human majority", r) for j, r in report.judge_vs_humans.items()),
    ]
    judges = [(f"{x} & {y}", r) for x, y, r in report.judge_pairs]
    judges += [(" & ".join(t), r) for t, r in report.judge_triples]
    reliability: list[list[Cell]] = [
        [r.group, r.units, r.raters, r.kappa, r.kappa_units, r.alpha_nominal, r.alpha_ordinal,
         *(r.axis_kappa.get(a) for a in AXES)]
        for r in report.reliability
    ]  # fmt: skip
    stability: list[list[Cell]] = [
        [s.group, s.subset_size, s.judges, s.draws, s.median, s.p05, s.minimum, s.same_top]
        for s in report.stability
    ]
    reliability_header = [
        "raters", "pairs", "n_raters", "fleiss_kappa", "kappa_pairs", "alpha_nominal",
        "alpha_ordinal", *(f"kappa_{a}" for a in AXES),
    ]  # fmt: skip
    stability_header = [
        "judges", "subset_size", "n_judges", "draws", "median_tau", "p05_tau", "min_tau",
        "same_top",
    ]  # fmt: skip
    return {
        "agreement-humans.csv": csv_text(
            ["what", *SHARE_COLUMNS], [[w, *share_cells(r)] for w, r in humans if r is not None]
        ),
        "agreement-judges.csv": csv_text(
            ["judges", *SHARE_COLUMNS], [[w, *share_cells(r)] for w, r in judges]
        ),
        "reliability.csv": csv_text(reliability_header, reliability),
        "stability.csv": csv_text(stability_header, stability),
    }


def agreement_section(facts: StudyFacts) -> Section:
    tables = agreement_tables(facts.agreement)
    if not tables:
        return Section("agreement", "Agreement", empty=NO_AGREEMENT)
    return Section("agreement", "Agreement", list(tables))
