"""The regression gate: is a candidate system worse than its baseline, overall and on each HEART
axis, beyond a margin of Elo?

Both are compared on the items both were compared on, with every comparison of those items
(indirect ones through other systems included), by the board's own fit: strength-weighted
Bradley–Terry, a conversation bootstrap, intervals widened for few conversations. Each tested
scope (overall, each axis) gets an interval whose ends are one-sided bounds at 1 − α/m for m
scopes (Bonferroni), so the gate's answer holds with the study's confidence across all of them:

- ``worse`` (exit 1): on some scope the interval lies wholly below −margin;
- ``not worse`` (exit 0): on every scope the interval lies wholly above −margin;
- ``cannot tell`` (exit 2): otherwise, or when the evidence is not enough to trust an interval
  (a judge the audit flags, a system without verdicts on shared items, a scope where either
  system is preliminary by ``ratings.preliminary`` or the two are not linked by comparisons).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from heart.analyses._audit import JudgeAudit
from heart.analyses._comparisons import Comparisons
from heart.analyses._leaderboard import EvidenceRule, Leaderboard, build_leaderboard
from heart.stats import bonferroni_level
from heart.types import Axis

Call = Literal["worse", "not worse", "cannot tell"]
EXIT_CODES: dict[str, int] = {"not worse": 0, "worse": 1, "cannot tell": 2}
OVERALL = "overall"


@dataclass(frozen=True)
class GateScope:
    """The candidate against the baseline on one scope (``overall`` or an axis letter):
    Elo difference (candidate minus baseline) with its corrected interval, the call, and the
    evidence behind it. NaN numbers when the scope could not be fitted; ``reasons`` says why the
    evidence allows no call at all (then the call is ``cannot tell`` at any margin)."""

    scope: str
    difference: float
    low: float
    high: float
    call: Call
    verdicts: int  # verdicts in the fit (every system's, on the shared items)
    candidate_verdicts: int
    baseline_verdicts: int
    head_to_head: int  # verdicts on pairs of the candidate and the baseline
    candidate_conversations: int
    baseline_conversations: int
    judges: tuple[str, ...]
    reasons: tuple[str, ...] = ()

    def why(self, margin: float) -> tuple[str, ...]:
        """Why the call is ``cannot tell`` (empty when it is not)."""
        if self.reasons or self.call != "cannot tell":
            return self.reasons
        return (
            f"the interval [{self.low:+.0f}, {self.high:+.0f}] holds −{margin:g}: the verdicts "
            "neither show a regression beyond the margin nor rule one out",
        )


@dataclass(frozen=True)
class GateJudge:
    """A judge or rater whose verdicts the gate counts, and what the audit says of it."""

    judge: str
    source: str
    verdicts: int  # its verdicts in the gate's fit
    flagged: bool
    problems: tuple[str, ...]


@dataclass(frozen=True)
class GateVerdict:
    """The gate's answer (``call`` and ``exit_code``), why (``reason``, ``problems``), and the
    numbers behind it per scope."""

    candidate: str
    baseline: str
    margin: float
    confidence: float  # the level the whole answer holds at
    bound_level: float  # the one-sided level of each interval end (Bonferroni over scopes)
    source: str  # whose verdicts: llm, human or all
    call: Call
    reason: str
    scopes: list[GateScope]
    judges: list[GateJudge]
    items: int  # items both systems were compared on
    conversations: int
    verdicts: int
    problems: tuple[str, ...] = ()  # why the data cannot tell, whatever the scopes say
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.call]

    @property
    def tests(self) -> int:
        """How many scopes the correction counts."""
        return len(self.scopes)

    @property
    def interval_level(self) -> float:
        """The two-sided level of each scope's interval."""
        return 2.0 * self.bound_level - 1.0

    def at_margin(self, margin: float) -> GateVerdict:
        """The same intervals read at another margin (they do not depend on it)."""
        scopes = [
            replace(s, call="cannot tell" if s.reasons else _call(s.low, s.high, margin))
            for s in self.scopes
        ]
        call, reason = _decide(scopes, self.problems, margin)
        return replace(self, margin=float(margin), scopes=scopes, call=call, reason=reason)

    def to_json(self) -> dict[str, Any]:
        """Everything above as plain JSON values (NaN as null), for CI systems; each scope's
        ``reasons`` also say when its interval holds the margin."""
        data = asdict(self)
        data["exit_code"] = self.exit_code
        data["tests"] = self.tests
        data["interval_level"] = self.interval_level
        for scope, mine in zip(data["scopes"], self.scopes, strict=True):
            scope["reasons"] = list(mine.why(self.margin))
            for key in ("difference", "low", "high"):
                if not np.isfinite(scope[key]):
                    scope[key] = None
        return data


def _linked(rows: Comparisons, first: int, second: int) -> bool:
    """Whether a chain of comparisons links the two systems (else their gap is not estimable)."""
    k = len(rows.systems)
    graph = coo_matrix((np.ones(len(rows)), (rows.a, rows.b)), shape=(k, k))
    _, labels = connected_components(graph, directed=False)
    return bool(labels[first] == labels[second])


def _call(low: float, high: float, margin: float) -> Call:
    if high < -margin:
        return "worse"
    if low > -margin:
        return "not worse"
    return "cannot tell"


def _scope(
    name: str,
    rows: Comparisons,
    candidate: str,
    baseline: str,
    margin: float,
    *,
    rule: EvidenceRule,
    rounds: int,
    seed: int,
    level: float,
) -> GateScope:
    """Fit one scope's comparisons as a board at the two-sided ``level`` and read the gap."""
    nan = float("nan")
    missing = [s for s in (candidate, baseline) if s not in rows.systems]
    if missing:
        what = "the verdicts" if name == OVERALL else f"axis {name}"
        reason = f"no verdict on the shared items judged {what} for {' or '.join(missing)}"
        return GateScope(name, nan, nan, nan, "cannot tell", len(rows), 0, 0, 0, 0, 0,
                         tuple(rows.judges), (reason,))  # fmt: skip
    c, b = rows.systems.index(candidate), rows.systems.index(baseline)
    head_to_head = int((((rows.a == c) & (rows.b == b)) | ((rows.a == b) & (rows.b == c))).sum())
    board: Leaderboard = build_leaderboard(
        rows, rounds=rounds, seed=seed, level=level, rule=rule, ablations=False
    )
    standing = {s.system: s for s in board.standings}
    mine, theirs = standing[candidate], standing[baseline]
    reasons = [f"{s.system}: {why}" for s in (mine, theirs) for why in s.preliminary]
    if not _linked(rows, c, b):
        reasons.append("no chain of comparisons links the candidate to the baseline on these items")
    order = board.systems
    at = {order.index(candidate), order.index(baseline)}
    gap = next(d for d in board.differences if {d.i, d.j} == at)
    if order[gap.i] == candidate:
        difference, low, high = gap.difference, gap.low, gap.high
    else:
        difference, low, high = -gap.difference, -gap.high, -gap.low
    if not reasons and not (np.isfinite(low) and np.isfinite(high)):
        reasons.append("no interval could be estimated")
    call = "cannot tell" if reasons else _call(low, high, margin)
    return GateScope(
        scope=name,
        difference=float(difference),
        low=float(low),
        high=float(high),
        call=call,
        verdicts=len(rows),
        candidate_verdicts=mine.comparisons,
        baseline_verdicts=theirs.comparisons,
        head_to_head=head_to_head,
        candidate_conversations=mine.conversations,
        baseline_conversations=theirs.conversations,
        judges=tuple(rows.judges),
        reasons=tuple(reasons),
    )


def shared_items(comparisons: Comparisons, candidate: str, baseline: str) -> Comparisons:
    """Every comparison on the items where both systems were compared (with anyone)."""
    seen = []
    for name in (candidate, baseline):
        if name not in comparisons.systems:
            return comparisons.select(np.zeros(len(comparisons), dtype=bool))
        i = comparisons.systems.index(name)
        seen.append(np.unique(comparisons.item[(comparisons.a == i) | (comparisons.b == i)]))
    both = np.intersect1d(seen[0], seen[1])
    return comparisons.select(np.isin(comparisons.item, both))


def _judges(rows: Comparisons, audits: Sequence[JudgeAudit]) -> list[GateJudge]:
    by_judge = {a.judge: a for a in audits}
    counts = np.bincount(rows.judge, minlength=len(rows.judges))
    out = []
    for j, name in enumerate(rows.judges):
        audit = by_judge.get(name)
        out.append(
            GateJudge(
                judge=name,
                source=rows.judge_sources[j],
                verdicts=int(counts[j]),
                flagged=audit is not None and audit.flagged,
                problems=audit.problems if audit is not None else (),
            )
        )
    return out


def _decide(
    scopes: Sequence[GateScope], problems: Sequence[str], margin: float
) -> tuple[Call, str]:
    """The gate's call from its scopes' and one sentence saying why, for the log of a CI job:
    a study-wide problem → cannot tell; else any scope worse → worse; else any scope that
    cannot tell → cannot tell; else not worse."""
    if problems:
        return "cannot tell", "cannot tell: " + "; ".join(problems)
    calls = {s.call for s in scopes}
    call: Call = next(c for c in ("worse", "cannot tell", "not worse") if c in calls)
    named = ", ".join(s.scope for s in scopes if s.call == call)
    if call == "worse":
        return call, f"worse than the baseline by more than {margin:g} Elo on: {named}"
    if call == "not worse":
        return call, f"not worse than the baseline by more than {margin:g} Elo on any scope tested"
    return call, f"cannot tell on: {named}"


def run_gate(
    comparisons: Comparisons,
    candidate: str,
    baseline: str,
    *,
    axes: Sequence[Axis] | None = None,
    margin: float = 0.0,
    audits: Sequence[JudgeAudit] = (),
    rule: EvidenceRule | None = None,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    source: str = "llm",
) -> GateVerdict:
    """The gate of ``candidate`` against ``baseline`` on ``comparisons`` (already those of the
    judges asked for): overall and on ``axes`` (default: every axis the shared items' verdicts
    judged), each interval end a one-sided bound at ``bonferroni_level(level, scopes)``.
    ``audits`` is the judge audit (a flagged judge among the gate's makes it ``cannot tell``);
    ``rule`` when a system's standing is preliminary."""
    if margin < 0 or not np.isfinite(margin):
        raise ValueError(f"margin must be a non-negative number of Elo, got {margin}")
    rule = rule or EvidenceRule()
    rows = shared_items(comparisons, candidate, baseline)
    notes: list[str] = []
    if axes is None:
        judged: list[int] = (
            np.flatnonzero(rows.axis_given.any(axis=0)).tolist() if len(rows) else []
        )
        axes = [list(Axis)[int(k)] for k in judged]
        if not axes and len(rows):
            notes.append("no verdict on the shared items judged the axes: overall only")
    bound = bonferroni_level(level, 1 + len(axes))
    problems = []
    for name, role in ((candidate, "candidate"), (baseline, "baseline")):
        if name not in comparisons.systems:
            problems.append(
                f"the {role} {name} has no counted verdict from these judges yet: generate its "
                "replies and judge them first"
            )
    if not problems and not len(rows):
        problems.append(f"{candidate} and {baseline} were never compared on the same items")
    judges = _judges(rows, audits)
    flagged = [j.judge for j in judges if j.flagged]
    if flagged:
        problems.append(
            f"the audit flags {', '.join(flagged)} as unreliable (verdicts that follow the order "
            "of presentation): see `heart judges audit`"
        )
    scopes = [
        _scope(name, part, candidate, baseline, margin, rule=rule, rounds=rounds, seed=seed,
               level=2.0 * bound - 1.0)
        for name, part in [(OVERALL, rows), *((a.value, rows.on_axis(a)) for a in axes)]
    ] if len(rows) else []  # fmt: skip
    call, reason = _decide(scopes, problems, margin)
    return GateVerdict(
        candidate=candidate,
        baseline=baseline,
        margin=float(margin),
        confidence=level,
        bound_level=bound,
        source=source,
        call=call,
        reason=reason,
        scopes=scopes,
        judges=judges,
        items=len(rows.items),
        conversations=len(rows.conversations),
        verdicts=len(rows),
        problems=tuple(problems),
        notes=tuple(notes),
    )
