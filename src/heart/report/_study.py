"""The report's Study section: the study's counts, its provenance (which heart wrote the
report, when, from which study file, with which models at which endpoints, at what tokens and
cost per stage, and every bundle imported into the study), the prompts in use and the study
file itself."""

from __future__ import annotations

from heart.provenance import PROVENANCE_FILE, Provenance, StageUse
from heart.report._facts import StudyFacts
from heart.report._section import Block, Bullets, Code, Heading, Section
from heart.report._table import Table
from heart.version import PACKAGE


def _study_counts(facts: StudyFacts) -> list[str]:
    """The study's counts, a list item each (names in backticks)."""
    out = ["items: " + ", ".join(f"{k} {v}" for k, v in sorted(facts.items.items()))]
    out += [f"pairs: {facts.pairs}"]
    for system, (ok, failed) in facts.completions.items():
        done = f"{ok} ok, {failed} failed" if ok or failed else "none yet"
        out.append(f"completions by `{system}`: {done}")
    for judge, n in facts.judgments.items():
        left_out = f", {n.left_out} valid but left out" if n.left_out else ""
        out.append(
            f"judgments by `{judge}`: {n.counted} counted{left_out}, {n.failed} failed "
            "(failed ones are never counted)"
        )
    if facts.left_out:
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(facts.left_out.items()))
        out.append(f"judgments left out of the analyses: {reasons}")
    return out


def _prompt_lines(facts: StudyFacts) -> list[str]:
    """Each prompt in use with its version and hash, a list item each."""
    return [f"{n} {v}: `{h}`" for n, v, h in facts.prompts]


def _heart(p: Provenance) -> str:
    commit = (
        f"commit `{p.git_commit}`" if p.git_commit else "git commit unknown (not a git checkout)"
    )
    return f"{PACKAGE} {p.heart_version}, {commit}"


def _models(p: Provenance) -> str:
    return "; ".join(f"{m.name} ({m.provider} {m.model})" for m in p.models) or "none"


def provenance_lines(p: Provenance) -> list[str]:
    """List items: the heart, the date, the study file, and each imported bundle."""
    study_file = (
        f"study file sha256 `{p.study_file_sha256}`" if p.study_file_sha256 else "no study file"
    )
    lines = [
        f"written by {_heart(p)}",
        f"written at {p.written_at} (UTC)",
        study_file,
        f"the same as JSON: `{PROVENANCE_FILE}` beside this report",
    ]
    spend = _spend(p)
    if spend:
        lines.append(spend)
    for q in p.imported:
        hashed = f"study file sha256 `{q.study_file_sha256}`" if q.study_file_sha256 else ""
        lines.append(
            f"imported from a bundle of study `{q.study}` written by {_heart(q)} at "
            f"{q.written_at}{', ' + hashed if hashed else ''}; its models: {_models(q)}"
        )
    return lines


def _spend(p: Provenance) -> str:
    """One line: what the study's calls were billed, the cached share, and the saving."""
    calls = sum(s.calls for s in p.stages)
    if not calls:
        return ""
    billed = sum(s.cost_usd for s in p.stages)
    tokens = sum(s.tokens_in for s in p.stages)
    cached = _share(sum(s.cached_tokens_in for s in p.stages), tokens)
    line = (
        f"spend: ${billed:.4f} billed for {calls:,} calls; {cached} of {tokens:,} prompt "
        "tokens from a provider cache"
    )
    if all(s.list_cost_usd is not None for s in p.stages):
        listed = sum(s.list_cost_usd or 0.0 for s in p.stages)
        share = f" ({100 * (listed - billed) / listed:.0f}%)" if listed > 0 else ""
        line += f"; ${listed:.4f} at list price, so ${listed - billed:.4f}{share} saved"
    return line


def _share(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.0f}%)" if whole else "0"


def _dollars(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def _saved(use: StageUse) -> str:
    saved = use.saved_usd
    if saved is None or use.list_cost_usd is None:
        return "–"
    share = f" ({100 * saved / use.list_cost_usd:.0f}%)" if use.list_cost_usd > 0 else ""
    return f"${saved:.4f}{share}"


def provenance_tables(p: Provenance) -> list[Table]:
    """The models and their endpoints; tokens and cost per stage."""
    models = Table(
        "Models and endpoints",
        ["role", "name", "provider", "model", "endpoint"],
        [[m.role, m.name, m.provider, m.model, m.endpoint] for m in p.models],
        "Every model the study calls, from the study file; endpoints without any query, and "
        "never a key.",
        "provenance-models",
    )
    stages = Table(
        "Tokens and cost per stage",
        ["stage", "answers", "failed", "calls", "tokens in", "from cache", "tokens out", "cost",
         "at list price", "saved"],
        [[s.stage, str(s.answers), str(s.failed), str(s.calls), f"{s.tokens_in:,}",
          _share(s.cached_tokens_in, s.tokens_in), f"{s.tokens_out:,}", f"${s.cost_usd:.4f}",
          _dollars(s.list_cost_usd), _saved(s)] for s in p.stages],
        "Answers from model calls held in the store, imported ones included; answers that asked "
        "the very same thing share one call, counted once. Tokens count every ask of a re-asked "
        "answer; from cache is the share of tokens in a provider's prompt cache served. Cost is "
        "what was billed at the prices the study file gave when each call was made (batch "
        "prices for batch answers, cache prices for cached tokens); at list price is what the "
        "same calls cost live without a cache, and saved the difference. The LLM screener's "
        "calls are not counted.",
        "provenance-stages",
    )  # fmt: skip
    return [models, stages]


def study_section(facts: StudyFacts) -> Section:
    blocks: list[Block] = [Bullets(_study_counts(facts))]
    if facts.provenance is not None:
        blocks += [
            Heading("Provenance", "provenance"),
            Bullets(provenance_lines(facts.provenance)),
            *provenance_tables(facts.provenance),
        ]
    blocks += [Heading("Prompts"), Bullets(_prompt_lines(facts))]
    blocks += [Heading("Configuration"), Code(facts.config_text.rstrip(), "yaml")]
    return Section("study", "Study", blocks)
