"""The Rationales section's CSV files: numbers in their own columns at full precision, an empty
cell where there is no data; and every code with the phrase behind it."""

from __future__ import annotations

from heart.analyses import RationaleReport
from heart.report._csv import SHARE_COLUMNS, Cell, _csv, _share

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _words(text: str) -> str:
    """Words quoted from a rationale (people wrote them): one that would start a spreadsheet
    formula gets a leading apostrophe."""
    return "'" + text if text.startswith(FORMULA_START) else text


THEMES_HEADER = ["coder", "judges", "theme", "axis", "skill", "polarity", *SHARE_COLUMNS]
COMENTION_HEADER = [
    "coder", "theme", "agreed_pairs", *SHARE_COLUMNS, "chance", "kappa", "human_rate", "llm_rate",
]  # fmt: skip
VERDICTS_HEADER = [
    "coder", "judges", "theme", "judgments", "its_reply_won", "odds", "low", "high", "p", "p_bh",
    "log_odds_per_10_words_longer", "log_odds_shown_first", "log_odds_per_10_rationale_words",
    "note",
]  # fmt: skip
CODES_HEADER = ["coder", "judgment", "judge", "judges", "theme", "side", "negated", "evidence",
                "cue"]  # fmt: skip
CODERS_HEADER = ["coder", "reference", "theme", *SHARE_COLUMNS, "kappa"]


def rationale_files(report: RationaleReport | None) -> dict[str, str]:
    """rationale-themes, -comention, -verdicts, -coders and -codes, when anything is coded."""
    if report is None or not report.coders:
        return {}
    themes = report.codebook.themes
    mentions: list[list[Cell]] = [
        [c.coder, source, t.id, t.axis.value, t.skill, t.polarity, *_share(shares[n])]
        for c in report.coders
        for source, shares in c.rates.items()
        for n, t in enumerate(themes)
    ]
    comention: list[list[Cell]] = []
    for c in report.coders:
        m = c.comention
        if m is None:
            continue
        comention.append(
            [c.coder, "all", c.agreed_pairs, *_share(m.overall), m.chance_overall,
             m.kappa_overall, None, None]
        )  # fmt: skip
        comention += [
            [c.coder, t.id, c.agreed_pairs, *_share(m.themes[n]), float(m.chance[n]),
             float(m.kappa[n]), float(m.rate_first[n]), float(m.rate_second[n])]
            for n, t in enumerate(themes)
        ]  # fmt: skip
    verdicts: list[list[Cell]] = [
        [c.coder, v.source, v.theme, v.n, v.won, v.odds, v.low, v.high, v.p_value, v.p_adjusted,
         v.length, v.shown_first, v.rationale_words, v.note]
        for c in report.coders
        for v in c.links
    ]  # fmt: skip
    codes: list[list[Cell]] = [
        [r.coder, r.judgment, r.judge, r.source, r.theme, r.side, r.negated, _words(r.evidence),
         _words(r.cue)]
        for r in report.codes
    ]  # fmt: skip
    files = {
        "rationale-themes.csv": _csv(THEMES_HEADER, mentions),
        "rationale-comention.csv": _csv(COMENTION_HEADER, comention),
        "rationale-verdicts.csv": _csv(VERDICTS_HEADER, verdicts),
        "rationale-codes.csv": _csv(CODES_HEADER, codes),
    }
    a = report.agreement
    if a is not None:
        rows: list[list[Cell]] = [[a.coder, a.reference, "all", *_share(a.overall),
                                   a.kappa_overall]]  # fmt: skip
        rows += [
            [a.coder, a.reference, t.id, *_share(a.themes[n]), a.kappa[n]]
            for n, t in enumerate(themes)
        ]
        files["rationale-coders.csv"] = _csv(CODERS_HEADER, rows)
    return files
