"""Which support strategies systems use, and how far the strategy classifier can be trusted.

From one classifier's answers (its ok rows under the taxonomy in use; "present" counts as used):
usage, coverage, unique strategies per reply, entropy and the SD and range of the usage rates per
system, per family and per subset; humans against each model family, strategy by strategy, with
intervals from resampling conversations and Benjamini–Hochberg across the strategies; and the
classifier against two references, the human consensus and ESConv's own annotations of its
original replies.

Families: every system of kind human is pooled as ``human``; each model family and the dataset
(the ESConv original) are their own; controls repeat one fixed reply, which says nothing about a
family's repertoire, so they appear per system only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import select

from heart.analyses._labels import human_consensus
from heart.stats import (
    Diversity,
    F1Result,
    RateDifference,
    f1_by_conversation,
    rate_differences_by_conversation,
    strategy_diversity,
)
from heart.store import ClassificationRow, CompletionRow, ItemRow, Store, SystemRow
from heart.strategies import Taxonomy
from heart.tables import Cell, CellTable
from heart.types import Status, Subset, SystemKind

Bools = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]

MIN_REPLIES = 30  # replies a reference needs before the classifier's F1 can flag it
MIN_MACRO_F1 = 0.5  # macro F1 below which the classifier is unreliable
HUMAN = "human"  # the family every system of kind human is pooled into
ALL_ITEMS = "all"

ESCONV_MAPPING: dict[str, tuple[str, ...]] = {
    "Question": ("Clarification",),
    "Restatement or Paraphrasing": ("Reflective Statements",),
    "Reflection of feelings": ("Emotional Validation", "Reflective Statements"),
    "Self-disclosure": ("Normalize Experiences",),
    "Affirmation and Reassurance": ("Affirmation", "Offer Hope"),
    "Providing Suggestions": (
        "Suggest Options", "Promote Self-Care Practices", "Stress Management",
    ),
    "Information": ("Share Information",),
}  # fmt: skip
"""Each ESConv strategy with its counterparts in the taxonomy. A label with one counterpart says
the reply uses it; a label with several says the reply uses at least one of them (ESConv gives
an utterance one label, and these labels are broader than any one strategy of the taxonomy)."""

ESCONV_UNMAPPED = ("Others",)
"""ESConv strategies with no counterpart: Others holds pleasantries together with every strategy
outside ESConv's list, so it says nothing about any one strategy."""

ESCONV_UNSCORABLE: dict[str, str] = {
    "Avoid Judgment and Criticism": (
        "it is what a reply leaves out (blame, lectures), and no ESConv label says whether a "
        "reply judged"
    ),
    "Collaborative Planning": (
        "ESConv's Providing Suggestions is the supporter proposing a step; no label says the "
        "plan was worked out with the seeker"
    ),
    "Provide Different Perspectives": (
        "no ESConv label offers another way of seeing the situation; such replies are filed "
        "under Information, Providing Suggestions or Others beside replies that do not"
    ),
    "Reframe Negative Thoughts": (
        "no ESConv label challenges a harsh or distorted thought"
    ),
    "Chit Chat": (
        "ESConv files pleasantries under Others together with every strategy outside its list, "
        "so no label says a reply is chit chat"
    ),
}  # fmt: skip
"""The strategies of the taxonomy no ESConv label maps to, and why: the audit against ESConv
cannot score them."""

NO_ESCONV_LABEL = "no ESConv label maps to it"


def esconv_scored(names: list[str]) -> list[str]:
    """The strategies of ``names`` an ESConv label maps to, in the taxonomy's order."""
    mapped = {s for counterparts in ESCONV_MAPPING.values() for s in counterparts}
    return [s for s in names if s in mapped]


def esconv_labels(strategy: str) -> list[str]:
    """The ESConv strategies that map to ``strategy``."""
    return [label for label, counterparts in ESCONV_MAPPING.items() if strategy in counterparts]


def esconv_unscorable(names: list[str]) -> dict[str, str]:
    """The strategies of ``names`` the audit against ESConv cannot score, each with why."""
    scored = set(esconv_scored(names))
    return {s: ESCONV_UNSCORABLE.get(s, NO_ESCONV_LABEL) for s in names if s not in scored}


REFERENCES = ("human consensus", "ESConv annotations")


@dataclass(frozen=True)
class StrategyUse:
    """The strategy use of one group of classified replies: a system (``group`` its name) or a
    family, on ``subset`` items (all, regular or adversarial)."""

    group: str
    kind: str
    subset: str
    diversity: Diversity


@dataclass(frozen=True)
class UsageGap:
    """Humans' usage rate of one strategy minus one model family's (``difference.rate_a`` is the
    humans', ``rate_b`` the family's)."""

    family: str
    strategy: str
    difference: RateDifference
    human_replies: int
    family_replies: int


@dataclass(frozen=True)
class ClassifierF1:
    """The classifier against a reference on the ``strategies`` it can score; ``uncertain`` says
    how its "uncertain" answers were taken: as absent, or left out. ``not_scored`` holds the
    strategies of the taxonomy the reference cannot score, each with why."""

    reference: str
    uncertain: str
    strategies: list[str]
    result: F1Result
    not_scored: dict[str, str] = field(default_factory=dict)

    @property
    def replies(self) -> int:
        return self.result.replies

    @property
    def flagged(self) -> bool:
        """Macro F1 below MIN_MACRO_F1 on at least MIN_REPLIES replies."""
        return self.replies >= MIN_REPLIES and self.result.macro < MIN_MACRO_F1


@dataclass(frozen=True)
class StrategyReport:
    """Everything the report shows about strategies, for one classifier and taxonomy.

    ``order`` lists the strategies by their usage over every family's replies, most used first.
    ``checks`` holds the classifier against human consensus (uncertain as absent, then left
    out, when people labelled) and against ESConv (when its original replies were classified).
    """

    classifier: str
    taxonomy: list[str]
    order: list[str]
    classified: int
    systems: list[StrategyUse]
    families: list[StrategyUse]
    subsets: list[StrategyUse]
    gaps: list[UsageGap]
    checks: list[ClassifierF1]
    labelled: int  # completions with counted human labels
    disagreements: int  # of those, left out because labellers split evenly on a strategy
    problems: tuple[str, ...] = ()
    cautions: tuple[str, ...] = ()
    level: float = 0.95
    rounds: int = 1000

    @property
    def flagged(self) -> bool:
        return bool(self.problems)

    def check(self, reference: str, uncertain: str = "absent") -> ClassifierF1 | None:
        return next(
            (c for c in self.checks if (c.reference, c.uncertain) == (reference, uncertain)), None
        )

    def tables(self) -> dict[str, CellTable]:
        """The report's CSV tables, by file name without ``.csv``: strategy_usage (one row per
        group and strategy), strategy_diversity (per group), strategy_differences (humans
        against each family, per strategy), classifier_f1 (against human consensus) and
        classifier_audit (against ESConv's annotations), a macro row then one per strategy."""
        return strategy_tables(self)

    def to_pandas(self) -> Any:
        """strategy_usage as a data frame: one row per group (``scope`` system or family, on
        ``items``) and strategy, with its ``uses`` and usage ``rate``."""
        return self.tables()["strategy_usage"].to_pandas()


@dataclass(frozen=True)
class _Replies:
    """Classified replies: one row each, strategies in taxonomy order."""

    completion: list[str]
    system: list[str]
    kind: list[str]
    family: list[str]  # controls: ""
    subset: list[str]
    conversation: list[str]
    esconv: list[list[str]]  # the item's reference strategies, for the ESConv original
    present: Bools
    uncertain: Bools


def _load(store: Store, classifier: str, taxonomy: Taxonomy) -> _Replies:
    with store.session() as s:
        rows = s.execute(
            select(CompletionRow.id, CompletionRow.system, SystemRow.kind, SystemRow.family,
                   ItemRow.subset, ItemRow.conversation_id, ItemRow.meta,
                   ClassificationRow.labels)
            .join(ClassificationRow, ClassificationRow.completion_id == CompletionRow.id)
            .join(SystemRow, SystemRow.name == CompletionRow.system)
            .join(ItemRow, ItemRow.id == CompletionRow.item_id)
            .where(
                CompletionRow.status == Status.OK,
                ClassificationRow.classifier == classifier,
                ClassificationRow.taxonomy_hash == taxonomy.hash,
                ClassificationRow.status == Status.OK,
            )
            .order_by(CompletionRow.id)
        ).all()  # fmt: skip
    names = taxonomy.names

    def answers(labels: dict[str, Any], status: str) -> list[bool]:
        return [(labels.get(n) or {}).get("status") == status for n in names]

    def family(kind: str, name: str) -> str:
        return {SystemKind.HUMAN: HUMAN, SystemKind.CONTROL: ""}.get(SystemKind(kind), name)

    return _Replies(
        completion=[r[0] for r in rows],
        system=[r[1] for r in rows],
        kind=[r[2] for r in rows],
        family=[family(r[2], r[3]) for r in rows],
        subset=[r[4] for r in rows],
        conversation=[r[5] for r in rows],
        esconv=[list((r[6] or {}).get("reference_strategies") or []) for r in rows],
        present=np.array([answers(r[7], "present") for r in rows], dtype=bool).reshape(
            -1, len(names)
        ),
        uncertain=np.array([answers(r[7], "uncertain") for r in rows], dtype=bool).reshape(
            -1, len(names)
        ),
    )


KIND_ORDER = {SystemKind.HUMAN: 0, SystemKind.MODEL: 1, SystemKind.DATASET: 2}


def _in_order(groups: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """(group, kind) pairs: humans, then models, the dataset and controls, each by name."""
    return sorted(groups, key=lambda gk: (KIND_ORDER.get(SystemKind(gk[1]), 3), gk[0]))


def _family_order(replies: _Replies) -> list[tuple[str, str]]:
    """(family, kind) of every family: humans, then model families, then the dataset."""
    return _in_order({(f, k) for f, k in zip(replies.family, replies.kind, strict=True) if f})


def _uses(replies: _Replies, rows: Bools, subset: str, group: str, kind: str) -> StrategyUse:
    return StrategyUse(group, kind, subset, strategy_diversity(replies.present[rows]))


def _usage(replies: _Replies) -> tuple[list[StrategyUse], list[StrategyUse], list[StrategyUse]]:
    """Per system and per family on all items, and per family on each subset when both have
    classified replies."""
    system = np.asarray(replies.system, dtype=object)
    family = np.asarray(replies.family, dtype=object)
    kind = np.asarray(replies.kind, dtype=object)
    subset = np.asarray(replies.subset, dtype=object)
    systems = [
        _uses(replies, system == name, ALL_ITEMS, name, k)
        for name, k in _in_order(set(zip(replies.system, replies.kind, strict=True)))
    ]
    families = _family_order(replies)
    by_family = [_uses(replies, (family == f) & (kind == k), ALL_ITEMS, f, k) for f, k in families]
    subsets: list[StrategyUse] = []
    if {Subset.REGULAR.value, Subset.ADVERSARIAL.value} <= set(replies.subset):
        subsets = [
            _uses(replies, rows, part, f, k)
            for part in (Subset.REGULAR.value, Subset.ADVERSARIAL.value)
            for f, k in families
            if np.any(rows := (family == f) & (kind == k) & (subset == part))
        ]
    return systems, by_family, subsets


def _per_conversation(
    replies: _Replies, rows: Bools, conversations: list[str]
) -> tuple[Floats, Floats]:
    """Uses per conversation and strategy, and replies per conversation, of the chosen rows."""
    index = {c: n for n, c in enumerate(conversations)}
    member = np.zeros((len(conversations), len(replies.system)))
    chosen = np.flatnonzero(rows)
    member[[index[replies.conversation[n]] for n in chosen], chosen] = 1.0
    uses: Floats = member @ replies.present.astype(np.float64)
    return uses, member.sum(axis=1)


def _gaps(
    replies: _Replies, names: list[str], *, rounds: int, seed: int, level: float
) -> list[UsageGap]:
    """Humans against each model family, per strategy."""
    family = np.asarray(replies.family, dtype=object)
    kind = np.asarray(replies.kind, dtype=object)
    humans = family == HUMAN
    if not humans.any():
        return []
    conversations = sorted(set(replies.conversation))
    human_uses, human_replies = _per_conversation(replies, humans, conversations)
    gaps = []
    for f, k in _family_order(replies):
        if k != SystemKind.MODEL:
            continue
        mine = (family == f) & (kind == k)
        uses, n = _per_conversation(replies, mine, conversations)
        differences = rate_differences_by_conversation(
            human_uses, human_replies, uses, n, rounds=rounds, seed=seed, level=level
        )
        gaps += [
            UsageGap(f, names[d.index], d, int(humans.sum()), int(mine.sum())) for d in differences
        ]
    return gaps


def _against_humans(
    replies: _Replies, agreed: dict[str, tuple[str, ...]], names: list[str], *, rounds: int,
    seed: int, level: float,
) -> list[ClassifierF1]:  # fmt: skip
    """F1 against the consensus of the completions people agreed on, uncertain answers taken
    as absent and, as a check of that choice, left out."""
    rows = [n for n, c in enumerate(replies.completion) if c in agreed]
    if not rows:
        return []
    truth = np.array(
        [[s in agreed[replies.completion[n]] for s in names] for n in rows], dtype=bool
    )
    present, uncertain = replies.present[rows], replies.uncertain[rows]
    conversation = [replies.conversation[n] for n in rows]
    return [
        ClassifierF1(
            REFERENCES[0], how, list(names),
            f1_by_conversation(truth, present, conversation, counted, rounds=rounds, seed=seed,
                               level=level),
        )
        for how, counted in (("absent", None), ("left out", ~uncertain))
    ]  # fmt: skip


def esconv_reference(
    annotated: list[str], mapped: list[str], predicted: list[bool]
) -> tuple[list[bool], list[bool]]:
    """What ESConv's annotations of one reply say about each ``mapped`` strategy, given which of
    them the classifier marked (``predicted``): whether it is present, and whether that cell is
    scored.

    A label with one counterpart marks it present. A label with several marks each present and
    is met by any of them: a counterpart the classifier marked counts as found, and when it
    marked none of them each counts as missed; but when it marked another counterpart and not
    this one, the label is accounted for and this cell is left out."""
    marked = {s for s, p in zip(mapped, predicted, strict=True) if p}
    groups = [ESCONV_MAPPING[a] for a in annotated if a in ESCONV_MAPPING]
    present = [any(s in g for g in groups) for s in mapped]
    known = [
        not here or s in marked or any(s in g and not marked & set(g) for g in groups)
        for s, here in zip(mapped, present, strict=True)
    ]
    return present, known


def _against_esconv(
    replies: _Replies, names: list[str], *, rounds: int, seed: int, level: float
) -> ClassifierF1 | None:
    """F1 on the strategies ESConv's labels map to, over the classified ESConv originals that
    carry annotations (uncertain answers taken as absent)."""
    rows = [
        n for n, (k, labels) in enumerate(zip(replies.kind, replies.esconv, strict=True))
        if k == SystemKind.DATASET and labels
    ]  # fmt: skip
    if not rows:
        return None
    mapped = esconv_scored(names)
    columns = [names.index(s) for s in mapped]
    predicted = replies.present[np.ix_(rows, columns)]
    reference = [
        esconv_reference(replies.esconv[n], mapped, predicted[k].tolist())
        for k, n in enumerate(rows)
    ]
    truth = np.array([r[0] for r in reference], dtype=bool).reshape(-1, len(mapped))
    known = np.array([r[1] for r in reference], dtype=bool).reshape(-1, len(mapped))
    conversation = [replies.conversation[n] for n in rows]
    result = f1_by_conversation(
        truth, predicted, conversation, known, rounds=rounds, seed=seed, level=level
    )
    return ClassifierF1(REFERENCES[1], "absent", mapped, result, esconv_unscorable(names))


def _judgement(checks: list[ClassifierF1]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Problems (the flag) and cautions from the checks that take uncertain answers as absent."""
    problems, cautions = [], []
    for check in checks:
        if check.uncertain != "absent":
            continue
        r = check.result
        if check.flagged:
            problems.append(
                f"its macro F1 against {check.reference} is {r.macro:.2f} "
                f"[{r.macro_low:.2f}–{r.macro_high:.2f}] on {r.replies} replies, below "
                f"{MIN_MACRO_F1:g}"
            )
        elif check.replies < MIN_REPLIES:
            cautions.append(
                f"only {check.replies} replies can be scored against {check.reference}: too few "
                f"to judge the classifier (it takes {MIN_REPLIES})"
            )
    return tuple(problems), tuple(cautions)


def analyse_strategies(
    store: Store, classifier: str, taxonomy: Taxonomy, *, rounds: int = 1000, seed: int = 0,
    level: float = 0.95,
) -> StrategyReport | None:  # fmt: skip
    """The strategy analyses of ``classifier``'s answers under ``taxonomy``, or None when it has
    classified nothing yet."""
    replies = _load(store, classifier, taxonomy)
    if not replies.completion:
        return None
    names = taxonomy.names
    systems, families, subsets = _usage(replies)
    in_families = np.asarray(replies.family, dtype=object) != ""
    overall = replies.present[in_families].sum(axis=0)
    order = [names[i] for i in sorted(range(len(names)), key=lambda i: (-overall[i], i))]
    labelled = human_consensus(store, taxonomy)
    agreed = {c.completion_id: c.strategies for c in labelled if not c.disagreement}
    checks = _against_humans(replies, agreed, names, rounds=rounds, seed=seed, level=level)
    esconv = _against_esconv(replies, names, rounds=rounds, seed=seed, level=level)
    if esconv is not None:
        checks.append(esconv)
    problems, cautions = _judgement(checks)
    return StrategyReport(
        classifier=classifier,
        taxonomy=list(names),
        order=order,
        classified=len(replies.completion),
        systems=systems,
        families=families,
        subsets=subsets,
        gaps=_gaps(replies, names, rounds=rounds, seed=seed, level=level),
        checks=checks,
        labelled=len(labelled),
        disagreements=sum(c.disagreement for c in labelled),
        problems=problems,
        cautions=cautions,
        level=level,
        rounds=rounds,
    )


# --- as tables ---


GROUP_COLUMNS = ["scope", "items", "group", "kind", "replies"]
F1_COLUMNS = ["classifier", "reference", "uncertain", "strategy", "esconv_labels", "f1", "low",
              "high", "tp", "fp", "fn", "replies", "flagged", "not_scored"]  # fmt: skip


def _f1_rows(classifier: str, check: ClassifierF1) -> list[list[Cell]]:
    """The macro F1 (flagged or not), one row per strategy the check scores, then one per
    strategy it cannot score, with why (``not_scored``) and no numbers."""
    r = check.result
    esconv = check.reference == "ESConv annotations"
    rows: list[list[Cell]] = [
        [classifier, check.reference, check.uncertain, "macro", None, r.macro, r.macro_low,
         r.macro_high, None, None, None, r.replies, check.flagged, None],
    ]  # fmt: skip
    for n, name in enumerate(check.strategies):
        rows.append(
            [classifier, check.reference, check.uncertain, name,
             "; ".join(esconv_labels(name)) if esconv else None, float(r.f1[n]),
             float(r.low[n]), float(r.high[n]), int(r.tp[n]), int(r.fp[n]), int(r.fn[n]),
             r.replies, None, None]
        )  # fmt: skip
    rows += [
        [classifier, check.reference, check.uncertain, name, None, None, None, None, None, None,
         None, None, None, why]
        for name, why in check.not_scored.items()
    ]  # fmt: skip
    return rows


def strategy_tables(report: StrategyReport) -> dict[str, CellTable]:
    """See ``StrategyReport.tables``."""
    groups = [("system", u) for u in report.systems]
    groups += [("family", u) for u in [*report.families, *report.subsets]]
    usage: list[list[Cell]] = [
        [scope, u.subset, u.group, u.kind, u.diversity.replies, name, int(u.diversity.uses[i]),
         float(u.diversity.rates[i])]
        for scope, u in groups
        for i, name in enumerate(report.taxonomy)
    ]  # fmt: skip
    diversity: list[list[Cell]] = [
        [scope, u.subset, u.group, u.kind, u.diversity.replies, u.diversity.strategies,
         u.diversity.coverage, u.diversity.mean_unique, u.diversity.entropy_bits,
         u.diversity.sd_points, u.diversity.range_points]
        for scope, u in groups
    ]  # fmt: skip
    gaps: list[list[Cell]] = [
        [g.family, g.strategy, g.human_replies, g.family_replies, g.difference.rate_a,
         g.difference.rate_b, g.difference.difference, g.difference.low, g.difference.high,
         g.difference.p_value, g.difference.p_adjusted, g.difference.significant]
        for g in report.gaps
    ]  # fmt: skip

    def checked(reference: str) -> CellTable:
        return CellTable(F1_COLUMNS, [
            row for check in report.checks if check.reference == reference
            for row in _f1_rows(report.classifier, check)
        ])  # fmt: skip

    diversity_columns = [*GROUP_COLUMNS, "strategies", "coverage", "mean_unique",
                         "entropy_bits", "sd_points", "range_points"]  # fmt: skip
    difference_columns = ["family", "strategy", "human_replies", "family_replies", "human_rate",
                          "family_rate", "difference", "low", "high", "p", "p_bh",
                          "significant"]  # fmt: skip
    return {
        "strategy_usage": CellTable([*GROUP_COLUMNS, "strategy", "uses", "rate"], usage),
        "strategy_diversity": CellTable(diversity_columns, diversity),
        "strategy_differences": CellTable(difference_columns, gaps),
        "classifier_f1": checked("human consensus"),
        "classifier_audit": checked("ESConv annotations"),
    }
