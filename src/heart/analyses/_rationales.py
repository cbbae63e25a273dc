"""Rationales: which themes of the codebook judges and raters bring up, whether humans and LLM
judges bring up the same ones when they agree, and which themes go with the verdict.

From one coder's codes (its ok codings of counted judgments under the codebook in use):

- mention rates: per source (LLM judges, human raters), the share of coded rationales that bring
  each theme up, with an interval from resampling conversations;
- co-mention on agreed pairs: the pairs where the human majority and the LLM-ensemble majority
  pick the same reply (the votes and majorities of the agreement figures). On such a pair a group
  mentions a theme when any rationale of its members who voted for the agreed reply mentions it.
  Per theme and pooled: the share of pairs where humans and LLM judges both mention or both omit
  it, the rate expected by chance (each pair's LLM rationales swapped for those of a random pair
  of another conversation), and Cohen's κ;
- theme and verdict: per source and theme, on the judgments where the theme is about one reply
  (a denied theme is about the other reply), the odds that that reply won, adjusted for the two
  replies' length difference, which of them was shown first and the rationale's length
  (logistic regression, intervals clustered by conversation, Benjamini–Hochberg across themes).
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from sqlalchemy import func, select

from heart.analyses._comparisons import Comparisons
from heart.analyses._majority import SPLIT, vote_table
from heart.plain import plain
from heart.rationales import Codebook
from heart.stats import (
    CoMention,
    Share,
    benjamini_hochberg,
    bootstrap_share_by_conversation,
    co_mention,
    cohen_kappa,
    fit_logistic,
)
from heart.store import (
    JudgeRow,
    JudgmentRow,
    RationaleCodeRow,
    RationaleCodingRow,
    Store,
    column_parts,
    counted_judgment,
)
from heart.tables import SHARE_COLUMNS, Cell, CellTable, ColumnRows, share_cells
from heart.types import JudgeSource, Order, Side, Status

SOURCES = (JudgeSource.LLM.value, JudgeSource.HUMAN.value)
MIN_FIT = 20  # judgments a theme needs before its link with the verdict is fitted
WORDS_UNIT = 10.0  # lengths enter the regression per ten words
TOP_PHRASES = 3
Ints = npt.NDArray[np.int64]


class CodedRationale(NamedTuple):
    """One counted judgment's rationale as a coder read it (a tuple: studies have many)."""

    judgment: str
    judge: str
    source: str
    a_id: str
    b_id: str
    order: str
    winner: str
    conversation: str
    words: int  # of the rationale
    length_a: int  # words of the pair's reply a
    length_b: int
    themes: frozenset[str]  # every theme coded, denied or not
    sides: dict[str, frozenset[str]]  # theme -> the replies (a, b) it is about, denials flipped


@dataclass(frozen=True)
class VerdictLink:
    """One theme and the verdict, for one source: on ``n`` judgments the theme is about one reply
    and the verdict names a winner; ``won`` of them the theme's reply won. ``odds`` (with its
    interval and p-value) is the adjusted odds that the theme's reply wins, at equal lengths,
    balanced positions and an average rationale; NaN when not fitted (too few judgments, one
    outcome only, or separated). The other coefficients are log-odds per ten words of length
    difference, for being shown first, and per ten words of rationale."""

    source: str
    theme: str
    n: int
    won: int
    odds: float
    low: float
    high: float
    p_value: float
    p_adjusted: float
    length: float
    shown_first: float
    rationale_words: float
    note: str = ""


@dataclass(frozen=True)
class CoderReport:
    """Every figure of one coder's codes."""

    coder: str
    coded: dict[str, int]  # source -> rationales coded (ok)
    failed: int
    rates: dict[str, list[Share]]  # source -> per theme (codebook order)
    phrases: dict[str, list[tuple[str, int]]]  # theme -> its most common evidence
    agreed_pairs: int  # pairs where the human and LLM-ensemble majorities agree
    paired: int  # of them, pairs with coded rationales from both humans and LLM judges
    comention: CoMention | None  # None when ``paired`` is 0
    links: list[VerdictLink]


@dataclass(frozen=True)
class CoderAgreement:
    """An LLM coder against the rule coder on the rationales both coded: per theme and pooled,
    the share of rationales where both find the theme or both do not, and Cohen's κ."""

    coder: str
    reference: str
    rationales: int
    themes: list[Share]
    overall: Share
    kappa: list[float]
    kappa_overall: float


class CodeRecord(NamedTuple):
    """One stored code, for the report's list of every code and the phrase behind it."""

    coder: str
    judgment: str
    judge: str
    source: str
    theme: str
    side: str
    negated: bool
    evidence: str
    cue: str


@dataclass(frozen=True)
class Codes:
    """Stored codes as columns, by coder, judgment and place: ``row`` is each code's judgment's
    row in ``comparisons``; ``coder``, ``theme``, ``side``, ``evidence`` and ``cue`` index
    ``words`` (each name and phrase held once: a study may have millions of codes).
    Iterating gives each as a ``CodeRecord``."""

    comparisons: Comparisons
    words: list[str]
    coder: Ints
    row: Ints
    theme: Ints
    side: Ints
    negated: npt.NDArray[np.bool_]
    evidence: Ints
    cue: Ints

    def __len__(self) -> int:
        return int(self.row.size)

    def apart(self) -> dict[str, Any]:
        """Every column but ``comparisons``, by name: what another process that holds the
        comparisons needs to make the codes again (``Codes(comparisons, **apart)``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "comparisons"}

    def __iter__(self) -> Iterator[CodeRecord]:
        return (CodeRecord(*cells) for cells in zip(*self.columns(), strict=True))

    def columns(self, quoted: Callable[[str], str] = str) -> list[list[Any]]:
        """The codes' cells column by column, as CodeRecord orders them: coder, judgment,
        judge, judge source, theme, side, negated, evidence and cue (the words quoted from
        rationales passed through ``quoted``, each once)."""
        c, words = self.comparisons, self.words
        judge = c.judge[self.row]
        judges = np.asarray(c.judges, dtype=object)
        sources = np.asarray(c.judge_sources, dtype=object)
        said = np.asarray(words, dtype=object)
        used = np.union1d(self.evidence, self.cue)
        said[used] = [quoted(words[w]) for w in used.tolist()]
        return [
            [words[w] for w in self.coder.tolist()],
            [c.judgments[r] for r in self.row.tolist()],
            judges[judge].tolist(),
            sources[judge].tolist(),
            [words[w] for w in self.theme.tolist()],
            [words[w] for w in self.side.tolist()],
            self.negated.tolist(),
            said[self.evidence].tolist(),
            said[self.cue].tolist(),
        ]


@dataclass(frozen=True)
class RationaleReport:
    codebook: Codebook
    rationales: dict[str, int]  # source -> counted judgments with a rationale
    coders: list[CoderReport]  # the primary coder first
    agreement: CoderAgreement | None = None
    level: float = 0.95
    rounds: int = 1000
    llm_coder: str | None = None  # the configured LLM coder, coded or not
    codes: Codes | None = None  # every code of the counted judgments

    @property
    def primary(self) -> CoderReport | None:
        return self.coders[0] if self.coders else None

    def tables(self, quoted: Callable[[str], str] = str) -> dict[str, CellTable]:
        """The report's CSV tables, by file name without ``.csv``: rationale-themes (mention
        rate per coder, judge source and theme), rationale-comention (per coder and theme, on
        the pairs humans and LLM judges agreed on), rationale-verdicts (themes with the
        verdict), rationale-codes (every code, with the words behind it, passed through
        ``quoted``) and rationale-coders (the LLM coder against the rule coder). Empty tables
        when nothing is coded."""
        return rationale_tables(self, quoted)

    def to_pandas(self) -> Any:
        """rationale-themes as a data frame: one row per coder, judge source and theme, with
        the share of rationales mentioning it (hits, n, estimate, low, high)."""
        return self.tables()["rationale-themes"].to_pandas()


def count_rationales(store: Store) -> dict[str, int]:
    """Counted judgments with a rationale, by the source of their judge."""
    query = (
        select(JudgeRow.source, func.count())
        .select_from(JudgmentRow)
        .join(JudgeRow, JudgeRow.name == JudgmentRow.judge)
        .where(counted_judgment(), func.length(func.trim(JudgmentRow.rationale)) > 0)
        .group_by(JudgeRow.source)
    )
    with store.session() as session:
        return {str(source): int(n) for source, n in session.execute(query)}


@dataclass(frozen=True)
class Coded:
    """One coder's coded rationales as columns, in the order of ``comparisons``: ``row`` is each
    one's row there, ``words`` the rationale's length in words; ``themes[r, t]`` whether it
    brings theme t of the codebook up (denied or not) and ``sides[r, t]`` the replies that theme
    is about (1: a, 2: b, 3: both, 0: neither said; a denied theme is about the other reply).
    Iterating gives each as a ``CodedRationale``."""

    comparisons: Comparisons
    theme_ids: list[str]
    row: Ints
    words: Ints
    themes: npt.NDArray[np.bool_]
    sides: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.row.size)

    def __iter__(self) -> Iterator[CodedRationale]:
        c = self.comparisons
        winner = (Side.A.value, Side.B.value, Side.TIE.value)
        order = {True: Order.AB.value, False: Order.BA.value}
        for n, row in enumerate(self.row.tolist()):
            j = int(c.judge[row])
            about = {
                theme: frozenset(side for side, bit in SIDE_BITS.items() if self.sides[n, t] & bit)
                for t, theme in enumerate(self.theme_ids)
                if self.sides[n, t]
            }
            yield CodedRationale(
                c.judgments[row], c.judges[j], c.judge_sources[j],
                c.completions[int(c.completion_a[row])], c.completions[int(c.completion_b[row])],
                order[bool(c.order_ab[row])], winner[int(c.outcome[row])],
                c.conversations[int(c.conversation[row])], int(self.words[n]),
                int(c.length_a[row]), int(c.length_b[row]),
                frozenset(t for k, t in enumerate(self.theme_ids) if self.themes[n, k]), about,
            )  # fmt: skip

    @property
    def source(self) -> npt.NDArray[np.str_]:
        """Each rationale's judge source."""
        sources = np.asarray([*self.comparisons.judge_sources, ""], dtype=np.str_)
        return sources[self.comparisons.judge[self.row]]

    @property
    def conversation(self) -> Ints:
        """Each rationale's conversation, numbered as in ``comparisons``."""
        return self.comparisons.conversation[self.row]


SIDE_BITS = {Side.A.value: 1, Side.B.value: 2}


def _rows(comparisons: Comparisons, judgments: Sequence[str]) -> Ints:
    """Each judgment's row in ``comparisons``; -1 for one that does not count."""
    row_of = comparisons.row_of
    return np.fromiter(map(row_of.get, judgments, itertools.repeat(-1)), np.int64, len(judgments))


@dataclass
class StoredCodes:
    """What the store holds of the coders' work under a codebook, read before the comparisons
    are known (so it can be read beside them): each code and each coding with its judgment's
    id, and the length in words of each coded rationale, in parts as read. ``code_records`` and
    ``load_coded`` place them among the comparisons."""

    coders: list[str]
    codebook: Codebook
    words: list[str]  # every name and phrase, once; the columns below index it
    codes: list[tuple[Any, ...]]  # coder, judgment, theme, side, negated, evidence, cue, start
    codings: list[tuple[Ints, Sequence[str], npt.NDArray[np.bool_]]]  # coder, judgment, ok
    lengths: list[tuple[Sequence[str], Ints]]  # judgment, words in its rationale
    rationales: dict[str, int]  # ``count_rationales``


def read_codes(store: Store, coders: list[str], codebook: Codebook) -> StoredCodes:
    """The codes and codings of ``coders`` under ``codebook`` and the lengths of the rationales
    they coded, as the store holds them (see ``StoredCodes``)."""
    mine = (RationaleCodingRow.coder.in_(coders), RationaleCodingRow.codebook_hash == codebook.hash)
    codes_query = (
        select(RationaleCodeRow.coder, RationaleCodeRow.judgment_id, RationaleCodeRow.theme,
               RationaleCodeRow.side, RationaleCodeRow.negated, RationaleCodeRow.evidence,
               RationaleCodeRow.cue, RationaleCodeRow.span_start)
        .where(RationaleCodeRow.coder.in_(coders),
               RationaleCodeRow.codebook_hash == codebook.hash)
    )  # fmt: skip
    codings_query = select(
        RationaleCodingRow.coder, RationaleCodingRow.judgment_id, RationaleCodingRow.status
    ).where(*mine)
    lengths_query = select(JudgmentRow.id, func.coalesce(JudgmentRow.rationale, "")).where(
        JudgmentRow.id.in_(select(RationaleCodingRow.judgment_id).where(*mine))
    )
    words: list[str] = []
    index: dict[str | None, int] = {}

    def held(column: tuple[str | None, ...]) -> Ints:
        """The column's words as their places in ``words``, each new one added once (no cue
        is the empty cue)."""
        for word in dict.fromkeys(column):
            if word not in index:
                text = word or ""
                if text not in index:
                    index[text] = len(words)
                    words.append(text)
                index[word] = index[text]
        return np.fromiter(map(index.__getitem__, column), np.int64, len(column))

    stored = StoredCodes(list(coders), codebook, words, [], [], [], {})
    with store.session() as session:
        connection = session.connection()
        for read in column_parts(connection, codes_query):
            stored.codes.append((
                held(read[0]), read[1], held(read[2]), held(read[3]),
                np.fromiter(map(bool, read[4]), bool), held(read[5]), held(read[6]),
                np.asarray(read[7], dtype=np.float64),
            ))  # fmt: skip
        for coder, judgments, statuses in column_parts(connection, codings_query):
            ok = np.fromiter(map(Status.OK.__eq__, statuses), bool, len(statuses))
            stored.codings.append((held(coder), judgments, ok))
        for judgments, texts in column_parts(connection, lengths_query):
            lengths = np.fromiter(map(len, map(str.split, texts)), np.int64, len(texts))
            stored.lengths.append((judgments, lengths))
    stored.rationales = count_rationales(store)
    return stored


class Codings(NamedTuple):
    """Every stored coding placed among the comparisons: its coder (a place in the words of
    ``StoredCodes``), its judgment's row (-1: one that does not count) and whether it is ok;
    and each counted rationale's length in words, by row (0 when none was coded)."""

    coder: Ints
    row: Ints
    ok: npt.NDArray[np.bool_]
    words: Ints


def place_codings(stored: StoredCodes, comparisons: Comparisons) -> Codings:
    """The codings of ``stored`` placed among ``comparisons`` (see ``Codings``)."""
    coder = np.concatenate([np.zeros(0, np.int64), *(c for c, _, _ in stored.codings)])
    row = np.concatenate(
        [np.zeros(0, np.int64), *(_rows(comparisons, ids) for _, ids, _ in stored.codings)]
    )
    ok = np.concatenate([np.zeros(0, bool), *(good for _, _, good in stored.codings)])
    words = np.zeros(len(comparisons), dtype=np.int64)
    for judgments, lengths in stored.lengths:
        placed = _rows(comparisons, judgments)
        words[placed[placed >= 0]] = lengths[placed >= 0]
    return Codings(coder, row, ok, words)


def load_coded(
    codings: Codings, comparisons: Comparisons, coder: str, codebook: Codebook, records: Codes
) -> tuple[Coded, int]:
    """The judgments of ``comparisons`` (the counted ones) that ``coder`` coded (ok) under
    ``codebook``, in the order of ``comparisons``, with their codes from ``records``
    (``code_records``), and the coder's failed codings of them."""
    index = {word: n for n, word in enumerate(records.words)}
    counted = (codings.coder == index.get(coder, -1)) & (codings.row >= 0)  # of counted ones
    done = codings.row[counted & codings.ok]
    rows = done[np.argsort(done, kind="stable")]
    words = codings.words[rows]
    place = np.full(len(comparisons), -1, dtype=np.int64)
    place[rows] = np.arange(rows.size)
    theme_at = np.full(len(records.words), -1, dtype=np.int64)
    for t, theme in enumerate(codebook.ids):
        if theme in index:
            theme_at[index[theme]] = t
    side_bit = np.zeros(len(records.words), dtype=np.int64)
    for side, bit in SIDE_BITS.items():
        if side in index:
            side_bit[index[side]] = bit
    mine = (records.coder == index.get(coder, -1)) & (theme_at[records.theme] >= 0)
    bits = side_bit[records.side[mine]]
    bits = np.where(records.negated[mine] & (bits > 0), 3 - bits, bits)  # denied: the other reply
    coded_at = place[records.row[mine]]
    kept = coded_at >= 0
    cell = (coded_at[kept], theme_at[records.theme[mine]][kept])
    themes = np.zeros((rows.size, len(codebook.ids)), dtype=bool)
    themes[cell] = True
    sides = np.zeros(themes.shape, dtype=np.int64)
    np.bitwise_or.at(sides, cell, bits[kept])
    coded = Coded(comparisons, list(codebook.ids), rows, words, themes, sides)
    return coded, int(counted.sum()) - rows.size


def code_records(stored: StoredCodes, comparisons: Comparisons) -> Codes:
    """Every code of ``stored`` on the judgments of ``comparisons`` (the counted ones, in the
    order of their ids), by coder, judgment and place (the span's start, a code without one
    first, then the theme)."""
    words = stored.words
    parts = [(c, _rows(comparisons, judgments), *rest) for c, judgments, *rest in stored.codes]
    columns = [
        np.concatenate([np.zeros(0, dtype=column.dtype), *(p[k] for p in parts)])
        for k, column in enumerate(_EMPTY_CODES)
    ]
    kept = columns[1] >= 0  # codes of judgments that count
    coder, row, theme, side, negated, evidence, cue, start = (c[kept] for c in columns)
    rank = np.empty(len(words), dtype=np.int64)  # each word's place in sorted order
    rank[sorted(range(len(words)), key=words.__getitem__)] = np.arange(len(words))
    start = np.where(np.isnan(start), -np.inf, start)  # no span first
    order = np.lexsort((rank[theme], start, row, rank[coder]))
    return Codes(
        comparisons, words, coder[order], row[order], theme[order], side[order],
        negated[order], evidence[order], cue[order],
    )  # fmt: skip


_EMPTY_CODES = (
    *(np.zeros(0, np.int64) for _ in range(4)), np.zeros(0, bool),
    *(np.zeros(0, np.int64) for _ in range(2)), np.zeros(0, np.float64),
)  # fmt: skip
"""The columns ``code_records`` reads, empty: their types."""


def _phrases(records: Codes, coder: str, codebook: Codebook) -> dict[str, list[tuple[str, int]]]:
    """Per theme, the evidence ``coder`` quoted most often (case aside)."""
    words = records.words
    mine = records.coder == (words.index(coder) if coder in words else -1)
    said, first, times = np.unique(
        records.theme[mine] * len(words) + records.evidence[mine],
        return_index=True,
        return_counts=True,
    )
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for k in np.argsort(first).tolist():  # in the order first said: ties stay in order
        theme, evidence = divmod(int(said[k]), len(words))
        counts[words[theme]][plain(words[evidence])] += int(times[k])
    return {t: counts[t].most_common(TOP_PHRASES) for t in codebook.ids if counts[t]}


def _share(hits: np.ndarray, totals: np.ndarray, rounds: int, seed: int, level: float) -> Share:
    if not totals.sum():
        return Share(0, 0, float("nan"), float("nan"))
    low, high = bootstrap_share_by_conversation(hits, totals, rounds=rounds, seed=seed, level=level)
    return Share(int(hits.sum()), int(totals.sum()), low, high)


def mention_rates(
    coded: Coded, codebook: Codebook, *, rounds: int, seed: int, level: float
) -> dict[str, list[Share]]:
    """Per source, the share of its coded rationales that bring each theme up."""
    used, conversation = np.unique(coded.conversation, return_inverse=True)
    source = coded.source
    out = {}
    for name in SOURCES:
        mine = source == name
        if not mine.any():
            continue
        conv = conversation.reshape(-1)[mine]
        totals = np.bincount(conv, minlength=used.size).astype(np.float64)
        hits = np.stack(
            [
                np.bincount(conv, weights=column, minlength=used.size)
                for column in coded.themes[mine].T
            ],
            axis=1,
        ).reshape(used.size, len(codebook.ids))
        out[name] = [
            _share(hits[:, t], totals, rounds, seed, level) for t in range(len(codebook.ids))
        ]
    return out


def agreed_mentions(
    coded: Coded, comparisons: Comparisons, codebook: Codebook
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The agreed pairs' count, and for those with coded rationales from both groups: whether the
    humans (pairs, themes) and the LLM judges mention each theme, and each pair's conversation
    index in ``comparisons``."""
    votes = vote_table(comparisons)
    groups = {
        source: {j for j, s in enumerate(comparisons.judge_sources) if s == source}
        for source in SOURCES
    }
    human = votes.majority(groups[JudgeSource.HUMAN])[0]
    llm = votes.majority(groups[JudgeSource.LLM])[0]
    agreed = (human == llm) & (human != SPLIT)  # per pair voted on (``votes.pairs``)
    pair, judge = comparisons.pair[coded.row], comparisons.judge[coded.row]
    on = np.searchsorted(votes.pairs, pair)
    judges = max(len(comparisons.judges), 1)  # the votes are sorted by pair, then judge
    cast = votes.vote[np.searchsorted(votes.pair * judges + votes.judge, pair * judges + judge)]
    # a member who did not vote for the agreed reply is left out
    counts = agreed[on] & (cast == human[on])
    source = coded.source
    mentions, said = {}, {}
    for name in (JudgeSource.HUMAN.value, JudgeSource.LLM.value):
        mine = counts & (source == name)
        said[name] = np.bincount(on[mine], minlength=votes.pairs.size) > 0
        mentions[name] = np.zeros((votes.pairs.size, len(codebook.ids)), dtype=bool)
        np.logical_or.at(mentions[name], on[mine], coded.themes[mine])
    paired = np.flatnonzero(said["human"] & said["llm"])
    humans, llms = mentions["human"][paired], mentions["llm"][paired]
    return int(agreed.sum()), humans, llms, votes.conversation[paired]


class _Columns(NamedTuple):
    """What the theme–verdict regression reads of each coded rationale."""

    source: npt.NDArray[np.str_]
    winner: Ints  # 0 a, 1 b, 2 tie
    order_ab: npt.NDArray[np.bool_]
    length_a: Ints
    length_b: Ints
    words: Ints
    conversation: npt.NDArray[Any]  # labels
    sides: npt.NDArray[np.int64]  # (rationales, themes) as in ``Coded``


def _columns(coded: Coded | Sequence[CodedRationale], codebook: Codebook) -> _Columns:
    if isinstance(coded, Coded):
        c, row = coded.comparisons, coded.row
        return _Columns(coded.source, c.outcome[row], c.order_ab[row], c.length_a[row],
                        c.length_b[row], coded.words, coded.conversation, coded.sides)  # fmt: skip
    winner = {Side.A.value: 0, Side.B.value: 1}
    sides = np.asarray(
        [[sum(SIDE_BITS[x] for x in c.sides.get(t, ())) for t in codebook.ids] for c in coded],
        dtype=np.int64,
    ).reshape(len(coded), len(codebook.ids))
    return _Columns(
        np.asarray([c.source for c in coded], dtype=np.str_),
        np.asarray([winner.get(c.winner, 2) for c in coded], dtype=np.int64),
        np.asarray([c.order == Order.AB for c in coded], dtype=bool),
        np.asarray([c.length_a for c in coded], dtype=np.int64),
        np.asarray([c.length_b for c in coded], dtype=np.int64),
        np.asarray([c.words for c in coded], dtype=np.int64),
        np.asarray([c.conversation for c in coded], dtype=np.str_),
        sides,
    )


def _theme_rows(columns: _Columns, mine: npt.NDArray[np.bool_], t: int) -> _ThemeRows:
    """One row per rationale of ``mine`` where theme ``t`` is about one reply and the verdict
    names a winner."""
    about = columns.sides[:, t]
    on = mine & (columns.winner != 2) & ((about == 1) | (about == 2))
    side_b = about[on] == 2
    length_a, length_b = columns.length_a[on], columns.length_b[on]
    own, other = np.where(side_b, length_b, length_a), np.where(side_b, length_a, length_b)
    first = side_b != columns.order_ab[on]  # theme's reply shown first
    return _ThemeRows(
        won=(columns.winner[on] == 1) == side_b,
        covariates=np.column_stack(
            [(own - other) / WORDS_UNIT, np.where(first, 0.5, -0.5), columns.words[on] / WORDS_UNIT]
        ),
        clusters=columns.conversation[on],
    )


class _ThemeRows(NamedTuple):
    won: npt.NDArray[np.bool_]
    covariates: npt.NDArray[np.float64]  # length difference, shown first, rationale words
    clusters: npt.NDArray[Any]


def _link(rows: _ThemeRows, source: str, theme: str, level: float) -> VerdictLink:
    """The odds that the reply a theme is about wins, from its rows."""
    n, won = int(rows.won.size), int(rows.won.sum())
    nan = float("nan")
    empty = VerdictLink(source, theme, n, won, nan, nan, nan, nan, nan, nan, nan, nan)
    if n < MIN_FIT or won in (0, n):
        note = f"fewer than {MIN_FIT} judgments" if n < MIN_FIT else "one outcome only"
        return replace(empty, note=note)
    y = rows.won.astype(np.float64)
    covariates = rows.covariates.copy()
    covariates[:, 2] -= covariates[:, 2].mean()  # the rationale's length, centred
    varies = [k for k in range(3) if np.ptp(covariates[:, k]) > 0]
    design = np.column_stack([np.ones(n), covariates[:, varies]])
    try:
        fit = fit_logistic(design, y, clusters=rows.clusters, level=level)
    except ValueError:
        return replace(empty, note="covariates not independent")
    if fit.separated:
        return replace(empty, note="separated: no finite estimate")
    coef = dict.fromkeys(range(3), nan)
    for column, k in enumerate(varies, 1):
        coef[k] = float(fit.coef[column])
    return VerdictLink(
        source, theme, n, won, float(np.exp(fit.coef[0])), float(np.exp(fit.low[0])),
        float(np.exp(fit.high[0])), float(fit.p_value[0]), nan, coef[0], coef[1], coef[2],
    )  # fmt: skip


def verdict_links(
    coded: Coded | Sequence[CodedRationale], codebook: Codebook, *, level: float
) -> list[VerdictLink]:
    """Per source and theme, the adjusted odds that the theme's reply wins; p-values adjusted by
    Benjamini–Hochberg across the themes of a source."""
    columns = _columns(coded, codebook)
    out = []
    for source in SOURCES:
        mine = columns.source == source
        if not mine.any():
            continue
        links = [
            _link(_theme_rows(columns, mine, t), source, theme, level)
            for t, theme in enumerate(codebook.ids)
        ]
        adjusted, _ = benjamini_hochberg(np.asarray([link.p_value for link in links]))
        out += [replace(link, p_adjusted=float(p)) for link, p in zip(links, adjusted, strict=True)]
    return out


def analyse_coder(
    comparisons: Comparisons, coder: str, codebook: Codebook,
    loaded: tuple[Coded, int], records: Codes, *, rounds: int,
    seed: int, level: float,
) -> CoderReport | None:  # fmt: skip
    """Every figure of ``coder``'s codes (its coded rationales and failed codings as
    ``load_coded`` gives them, ``records`` holding its codes), or None when it has coded nothing
    yet."""
    coded, failed = loaded
    if not len(coded) and not failed:
        return None
    n_agreed, humans, llms, conversation = agreed_mentions(coded, comparisons, codebook)
    comention = (
        co_mention(humans, llms, conversation, len(comparisons.conversations), rounds=rounds,
                   seed=seed, level=level)
        if len(conversation)
        else None
    )  # fmt: skip
    return CoderReport(
        coder=coder,
        coded=dict(Counter(coded.source.tolist())),
        failed=failed,
        rates=mention_rates(coded, codebook, rounds=rounds, seed=seed, level=level),
        phrases=_phrases(records, coder, codebook),
        agreed_pairs=n_agreed,
        paired=len(conversation),
        comention=comention,
        links=verdict_links(coded, codebook, level=level),
    )


def compare_coders(
    coder: str, coded: Coded, reference: str, reference_coded: Coded,
    codebook: Codebook, *, rounds: int, seed: int, level: float,
) -> CoderAgreement | None:  # fmt: skip
    """``coder`` against ``reference`` on the rationales both coded; None when there are none."""
    both, mine, theirs = np.intersect1d(coded.row, reference_coded.row, return_indices=True)
    if not both.size:
        return None
    ids = codebook.ids
    x, y = coded.themes[mine], reference_coded.themes[theirs]
    used, conv = np.unique(coded.conversation[mine], return_inverse=True)
    conv = conv.reshape(-1)
    hits = np.stack(
        [np.bincount(conv, weights=column, minlength=used.size) for column in (x == y).T], axis=1
    ).reshape(used.size, len(ids))
    totals = np.bincount(conv, minlength=used.size).astype(np.float64)
    return CoderAgreement(
        coder=coder,
        reference=reference,
        rationales=int(both.size),
        themes=[_share(hits[:, t], totals, rounds, seed, level) for t in range(len(ids))],
        overall=_share(hits.sum(axis=1), totals * len(ids), rounds, seed, level),
        kappa=[cohen_kappa(x[:, t], y[:, t]) for t in range(len(ids))],
        kappa_overall=cohen_kappa(x.reshape(-1), y.reshape(-1)),
    )


def analyse_rationales(
    store: Store, comparisons: Comparisons, codebook: Codebook, rule_coder: str,
    llm_coder: str | None = None, *, rounds: int = 1000, seed: int = 0, level: float = 0.95,
) -> RationaleReport:  # fmt: skip
    """The rationale figures of the rule coder and, when one is set, the LLM coder; the LLM
    coder leads once it has coded something, with its agreement with the rule coder beside it.
    ``comparisons`` are the counted judgments of every source (``load_comparisons(..., "all")``)."""
    coders = rationale_coders(rule_coder, llm_coder)
    stored = read_codes(store, coders, codebook)
    return rationale_figures(stored, comparisons, rounds=rounds, seed=seed, level=level)


def rationale_coders(rule_coder: str, llm_coder: str | None) -> list[str]:
    """The coders whose codes the rationale figures show: the LLM coder first when one is set."""
    return ([llm_coder] if llm_coder else []) + [rule_coder]


def rationale_figures(
    stored: StoredCodes, comparisons: Comparisons, *, rounds: int = 1000, seed: int = 0,
    level: float = 0.95,
) -> RationaleReport:  # fmt: skip
    """``analyse_rationales`` on codes already read (``read_codes``, its coders in the order of
    ``rationale_coders``)."""
    codebook, coders = stored.codebook, stored.coders
    llm_coder, rule_coder = (coders[0], coders[1]) if len(coders) > 1 else (None, coders[0])
    records = code_records(stored, comparisons)
    codings = place_codings(stored, comparisons)
    loaded = {coder: load_coded(codings, comparisons, coder, codebook, records) for coder in coders}
    reports = [
        report
        for coder in coders
        if (
            report := analyse_coder(
                comparisons,
                coder,
                codebook,
                loaded[coder],
                records,
                rounds=rounds,
                seed=seed,
                level=level,
            )
        )
        is not None
    ]
    reports.sort(key=lambda r: not sum(r.coded.values()))  # a coder that coded nothing last
    agreement = (
        compare_coders(
            llm_coder,
            loaded[llm_coder][0],
            rule_coder,
            loaded[rule_coder][0],
            codebook,
            rounds=rounds,
            seed=seed,
            level=level,
        )
        if llm_coder
        else None
    )
    return RationaleReport(
        codebook=codebook,
        rationales=stored.rationales,
        coders=reports,
        agreement=agreement,
        level=level,
        rounds=rounds,
        llm_coder=llm_coder,
        codes=records,
    )


# --- as tables ---


THEMES_COLUMNS = ["coder", "judges", "theme", "axis", "skill", "polarity", *SHARE_COLUMNS]
COMENTION_COLUMNS = [
    "coder", "theme", "agreed_pairs", *SHARE_COLUMNS, "chance", "kappa", "human_rate", "llm_rate",
]  # fmt: skip
VERDICTS_COLUMNS = [
    "coder", "judges", "theme", "judgments", "its_reply_won", "odds", "low", "high", "p", "p_bh",
    "log_odds_per_10_words_longer", "log_odds_shown_first", "log_odds_per_10_rationale_words",
    "note",
]  # fmt: skip
CODES_COLUMNS = ["coder", "judgment", "judge", "judges", "theme", "side", "negated", "evidence",
                 "cue"]  # fmt: skip
CODERS_COLUMNS = ["coder", "reference", "theme", *SHARE_COLUMNS, "kappa"]


def rationale_tables(
    report: RationaleReport, quoted: Callable[[str], str] = str
) -> dict[str, CellTable]:
    """See ``RationaleReport.tables``."""
    themes = report.codebook.themes
    mentions: list[list[Cell]] = [
        [c.coder, source, t.id, t.axis.value, t.skill, t.polarity, *share_cells(shares[n])]
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
            [c.coder, "all", c.agreed_pairs, *share_cells(m.overall), m.chance_overall,
             m.kappa_overall, None, None]
        )  # fmt: skip
        comention += [
            [c.coder, t.id, c.agreed_pairs, *share_cells(m.themes[n]), float(m.chance[n]),
             float(m.kappa[n]), float(m.rate_first[n]), float(m.rate_second[n])]
            for n, t in enumerate(themes)
        ]  # fmt: skip
    verdicts: list[list[Cell]] = [
        [c.coder, v.source, v.theme, v.n, v.won, v.odds, v.low, v.high, v.p_value, v.p_adjusted,
         v.length, v.shown_first, v.rationale_words, v.note]
        for c in report.coders
        for v in c.links
    ]  # fmt: skip
    codes: Sequence[Sequence[Cell]] = (
        ColumnRows(report.codes.columns(quoted)) if report.codes is not None else []
    )
    coders: list[list[Cell]] = []
    a = report.agreement
    if a is not None:
        coders.append([a.coder, a.reference, "all", *share_cells(a.overall), a.kappa_overall])
        coders += [
            [a.coder, a.reference, t.id, *share_cells(a.themes[n]), a.kappa[n]]
            for n, t in enumerate(themes)
        ]
    return {
        "rationale-themes": CellTable(THEMES_COLUMNS, mentions),
        "rationale-comention": CellTable(COMENTION_COLUMNS, comention),
        "rationale-verdicts": CellTable(VERDICTS_COLUMNS, verdicts),
        "rationale-codes": CellTable(CODES_COLUMNS, codes),
        "rationale-coders": CellTable(CODERS_COLUMNS, coders),
    }
