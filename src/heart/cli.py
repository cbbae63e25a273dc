"""The `heart` command: one subcommand per stage, plus `heart run` for all of them in order."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.table import Table
from rich.text import Text

from heart.errors import HeartError

if TYPE_CHECKING:
    from heart.check import CheckReport
    from heart.engine import Progress, RunSummary
    from heart.generate import GenerationSummary
    from heart.items.adversarial import AdversarialSummary
    from heart.judging import JudgingPlan, JudgingSummary
    from heart.pipeline import DryRun, ItemsSummary, ReportSummary
    from heart.rationales.code import RationaleCodingSummary
    from heart.strategies.classify import ClassificationSummary
    from heart.study import Study

app = typer.Typer(
    help="Run the HEART benchmark: build items from ESConv, generate completions, judge pairs, "
    "and rank systems with honest intervals. Every command works on a study folder (--study).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # a docstring's line breaks wrap; a blank line starts a paragraph
)
items_app = typer.Typer(
    help="Build and inspect the benchmark's items (contexts).", no_args_is_help=True
)
app.add_typer(items_app, name="items")
judges_app = typer.Typer(
    help="Inspect the judges: the LLM ensemble and the human raters.", no_args_is_help=True
)
app.add_typer(judges_app, name="judges")
raters_app = typer.Typer(
    help="Invite people to write, judge and label in the web app, and list them.",
    no_args_is_help=True,
)
app.add_typer(raters_app, name="raters")
console = Console()

StudyOption = Annotated[
    Path, typer.Option("--study", "-s", help="The study folder (holds study.yaml).")
]


def _print_version(asked: bool) -> None:
    if asked:
        from heart.provenance import version_line

        console.print(version_line(), highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print heart's version (and its git commit when run from a checkout), and exit.",
        ),
    ] = False,
) -> None:
    """Run the HEART benchmark: build items from ESConv, generate completions, judge pairs, and
    rank systems with honest intervals. Every command works on a study folder (--study)."""


@contextmanager
def _study(root: Path) -> Iterator[Study]:
    from heart.study import open_study

    with open_study(root) as study:
        yield study


class ProgressBar:
    """Draws the engine's progress reports: one bar per stage with rate, ETA, tokens and cost."""

    def __init__(self) -> None:
        self.bar: RichProgress | None = None
        self.task = TaskID(0)

    def __call__(self, report: Progress) -> None:
        if self.bar is None:
            self.bar = RichProgress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[tokens]} tok ${task.fields[cost]:.4f}"),
                console=console, refresh_per_second=4,
            )  # fmt: skip
            self.task = self.bar.add_task(report.stage, total=report.total, rate="", tokens=0,
                                          cost=0.0)  # fmt: skip
            self.bar.start()
        elapsed = self.bar.tasks[self.task].elapsed or 0.0
        rate = f"{report.fresh / elapsed * 60:.0f}/min" if elapsed > 0 and report.fresh else ""
        self.bar.update(self.task, completed=report.done, total=report.total, rate=rate,
                        tokens=report.tokens, cost=report.cost_usd)  # fmt: skip
        if report.finished:
            self.bar.stop()
            self.bar = None


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Folder to create the study in.")],
    demo: Annotated[bool, typer.Option(help="Set up the bundled, offline demo study.")] = False,
) -> None:
    """Create a study folder with a study.yaml (and, with --demo, the demo corpus)."""
    from heart.study import create_study

    target = create_study(directory, demo=demo)
    console.print(
        f"Created {target}" + (" (demo study)" if demo else "; edit it, then `heart run`")
    )


def _print_items(summary: ItemsSummary, requested: int, command: str) -> bool:
    """The items stage's counts by problem type and by screening rule (or, when the LLM
    screener's calls did not all get an answer, what failed); returns whether they all did."""
    selection = summary.selection
    if not summary.complete:
        assert summary.model_calls is not None
        console.print(f"[yellow]The items were not changed: {_subsets(summary.stored)}.[/yellow]")
        return _print_calls("screen", "no items chosen", summary.model_calls,
                            "screener calls", command)  # fmt: skip
    if selection is None:
        console.print(f"items: {_subsets(summary.stored)} already built")
        return True
    by_problem = selection.counts_by_problem()
    table = Table(
        title=f"{len(selection.items)} regular items from {summary.conversations} conversations"
    )
    for col in ("problem type", "conversations", "share", "items"):
        table.add_column(col, justify="left" if col == "problem type" else "right")
    total = sum(selection.conversations_by_problem.values())
    for problem, n in sorted(selection.conversations_by_problem.items(), key=lambda kv: -kv[1]):
        table.add_row(problem, str(n), f"{requested * n / total:.1f}", str(by_problem[problem]))
    console.print(table)
    rules = Table(title=f"{len(selection.decisions)} couplets screened")
    rules.add_column("rule")
    rules.add_column("kept", justify="center")
    rules.add_column("couplets", justify="right")
    for rule, n in sorted(selection.counts_by_rule().items(), key=lambda kv: -kv[1]):
        rules.add_row(rule, "yes" if rule == "selected" else "", str(n))
    console.print(rules)
    if summary.duplicates:
        console.print(f"{summary.duplicates} duplicate conversations were skipped.")
    state = "stored" if summary.changed else "unchanged (already stored)"
    console.print(
        f"Items {state} in {summary.seconds:.1f} s; the study has {_subsets(summary.stored)}."
    )
    if summary.model_calls is not None:
        _print_calls("screen", f"{len(selection.items)} items chosen", summary.model_calls,
                     "screener calls", command)  # fmt: skip
    return True


def _subsets(counts: dict[str, int]) -> str:
    """Like ``12 regular and 2 adversarial items``."""
    return " and ".join(f"{n} {subset}" for subset, n in counts.items()) + " items"


@items_app.command("build")
def items_build(
    study: StudyOption = Path("."),
    esconv: Annotated[
        Path | None, typer.Option(help="ESConv file or folder (default: items.esconv).")
    ] = None,
) -> None:
    """Screen every couplet of the corpus and store the regular items, with a summary.

    With an LLM screener (items.screener): exits 1 when some calls failed for good (or the
    budget stopped them), printing them by cause with their fix and the command that asks
    again for just those; the items then stay as they were."""
    from heart.pipeline import build_items

    with _study(study) as s:
        summary = build_items(s, esconv, ProgressBar())
        regular = s.config.items.regular
    retry = _command("items build", study) + (
        f" --esconv {shlex.quote(str(esconv))}" if esconv else ""
    )
    if not _print_items(summary, regular, retry):
        raise typer.Exit(1)


def _print_adversarial(summary: AdversarialSummary, command: str) -> bool:
    """Per escalation profile: conversations rewritten, kept, and rejected by reason (or, when
    some calls got no answer, what failed: then nothing was stored); returns whether every call
    was answered."""
    from heart.items.adversarial import MIN_TURNS

    if not summary.model_calls.complete:
        console.print("[yellow]The adversarial items were not changed.[/yellow]")
        return _print_calls("adversarial", "no items kept", summary.model_calls,
                            "rewriter or rater calls", command)  # fmt: skip
    table = Table(
        title=f"{summary.kept} adversarial items kept of {summary.sources} conversations "
        f"rewritten ({summary.requested} asked for)"
    )
    for col in ("profile", "rewritten", "kept", "rejected", "reasons"):
        table.add_column(col, justify="left" if col in ("profile", "reasons") else "right")
    for profile, counts in summary.by_profile.items():
        reasons = ", ".join(f"{why} {n}" for why, n in counts.rejected.most_common())
        rejected = counts.requested - counts.kept
        table.add_row(profile, str(counts.requested), str(counts.kept), str(rejected), reasons)
    console.print(table)
    if summary.sources < summary.requested:
        console.print(
            f"[yellow]Only {summary.sources} conversations of the corpus have a supporter "
            f"greeting, {MIN_TURNS} or more turns and pass the safety screen.[/yellow]"
        )
    return _print_calls("adversarial", f"{summary.kept} items kept", summary.model_calls,
                        "rewriter or rater calls", command)  # fmt: skip


@items_app.command("adversarial")
def items_adversarial(study: StudyOption = Path("."), dry_run: DryRunOption = False) -> None:
    """Rewrite the seeker turns of items.adversarial conversations to escalation profiles, rate
    and check every rewrite, and store the kept ones as adversarial items.

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those; nothing is then
    stored."""
    from heart import pipeline

    with _study(study) as s:
        if dry_run:
            _print_dry_run(pipeline.dry_run(s, ("adversarial",)), s.config.engine.budget_usd)
            return
        summary = pipeline.build_adversarial(s, ProgressBar())
    if not _print_adversarial(summary, _command("items adversarial", study)):
        raise typer.Exit(1)


@items_app.command("show")
def items_show(
    item_id: Annotated[str, typer.Argument(help="An item id, as in `heart items list`.")],
    study: StudyOption = Path("."),
) -> None:
    """Print one item's context, its original reply, and its metadata."""
    from heart.items import stored_item
    from heart.transcript import ROLE_NAMES
    from heart.types import Role

    with _study(study) as s:
        item, screened = stored_item(s.store, item_id)
    console.print(
        f"[bold]{item.id}[/bold]  {item.subset}  {item.problem_type} / {item.emotion_type}"
    )
    if "profile" in item.meta:
        console.print(
            f"escalation: {item.meta['profile']}, target hostility {item.meta['targets']}, "
            f"rated {item.meta['ratings']}"
        )
    console.print(f"situation: {item.situation}")
    console.print(
        f"conversation {item.conversation_id}, reply turn {item.turn_index}, "
        f"hash {item.content_hash[:16]}"
    )
    if screened is not None:
        console.print(f"screen: {screened}")
    console.print()
    for turn in item.context:
        colour = "cyan" if turn.role is Role.SEEKER else "green"
        console.print(f"[{colour}]{ROLE_NAMES[turn.role]}:[/{colour}] {turn.text}")
    console.print(f"\n[bold]original reply:[/bold] {item.reference}")


@items_app.command("list")
def items_list(study: StudyOption = Path(".")) -> None:
    """List the stored items."""
    from heart.items import stored_items

    with _study(study) as s:
        items = stored_items(s.store)
    table = Table()
    for col in ("id", "subset", "problem type", "turn", "last seeker turn"):
        table.add_column(col)
    for item in items:
        last = item.context[-1].text
        table.add_row(
            item.id,
            item.subset,
            item.problem_type,
            str(item.turn_index),
            last[:70] + ("…" if len(last) > 70 else ""),
        )
    console.print(table)


def _command(stage: str, study: Path) -> str:
    """The command line that runs ``stage`` on ``study`` again (the default folder left out)."""
    return f"heart {stage}" + ("" if study == Path(".") else f" --study {shlex.quote(str(study))}")


def _print_calls(stage: str, done: str, calls: RunSummary, what: str, command: str) -> bool:
    """One line per stage: what was done, how many calls, from cache, failed. Then, when some
    calls got no answer, the failures by cause with their fix and the command that asks again
    for just those; returns whether every call was answered."""
    console.print(
        f"{stage}: {done}, {calls.calls} model calls ({calls.cached} from cache, "
        f"{calls.failed} failed)",
        highlight=False,
    )
    if calls.failed:
        _print_failures(calls, what)
    if calls.not_started:
        console.print(
            f"[yellow]Budget reached: {calls.not_started} calls were not started (spent "
            f"${calls.cost_usd:.4f}); raise engine.budget_usd if you want more per run.[/yellow]",
            highlight=False,
        )
    if calls.complete:
        return True
    missing = calls.failed + calls.not_started
    these = f"these {missing} calls" if missing > 1 else "this call"
    console.print(
        f"[bold]Retry just {these} (finished work is skipped): {escape(command)}[/bold]",
        highlight=False,
        soft_wrap=True,
    )
    return False


def _print_failures(calls: RunSummary, what: str) -> None:
    """Failed calls by cause, most common first, each cause with its fix; under it, per model,
    how many and the first reason."""
    from heart.models._errors import FIXES

    console.print(
        f"[bold red]{calls.failed} {what} failed for good[/bold red] (stored with their "
        "reason, never counted), by cause:",
        highlight=False,
    )
    for cause, n in calls.by_cause().most_common():
        calls_n = f"{n} call{'s' * (n > 1)}"
        console.print(f"  {cause}, {calls_n}: {FIXES[cause]}", highlight=False, soft_wrap=True)
        models: dict[tuple[str, str, str], list[str]] = {}
        for f in calls.failures:
            if f.cause is cause:
                models.setdefault((f.provider, f.model, f.endpoint), []).append(f.reason)
        for (provider, model, endpoint), reasons in models.items():
            reason = reasons[0] if len(reasons[0]) <= 300 else reasons[0][:300] + "…"
            line = f"{len(reasons)} to {provider} {model} at {endpoint}: {reason}"
            console.print(f"    {escape(line)}", highlight=False, soft_wrap=True)


DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print the calls, tokens and cost this would spend, per endpoint and model; call "
        "nothing. Work the earlier stages have not done yet is projected (items, replies, "
        "verdicts) and the calls that read it are counted as estimates.",
    ),
]
ReplyTokensOption = Annotated[
    int | None,
    typer.Option(
        "--reply-tokens",
        min=1,
        help="With --dry-run: assume every reply not generated yet is this many tokens long "
        "(default: its system's max_tokens, the most it can be).",
    ),
]


def _print_dry_run(plan: DryRun, budget: float | None) -> None:
    """Per stage: calls, cached, new, of them estimated, tokens and the most they can cost, per
    endpoint; then what the estimates assume."""
    for stage in plan.stages:
        if stage.stage == "adversarial":
            extra = " (first tries; hostility ratings and retries come on top)"
        elif stage.stage == "generate":
            extra = f" ({stage.fixed} fixed replies to store)"
        elif stage.stage == "rationales":
            extra = " (the LLM coder)"
        else:
            extra = ""
        table = Table(title=f"{stage.stage}: what a run would call{extra}")
        for col in ("provider", "endpoint", "model", "calls", "cached", "new", "estimated",
                    "≈ tokens in", "≤ tokens out", "≤ cost (USD)"):  # fmt: skip
            table.add_column(
                col, justify="left" if col in ("provider", "endpoint", "model") else "right"
            )
        for p in stage.models:
            counts = (p.calls, p.cached, p.calls - p.cached, p.estimated)
            table.add_row(p.provider, p.endpoint, p.model, *map(str, counts), f"{p.tokens_in:,}",
                          f"{p.max_tokens_out:,}", f"{p.max_cost_usd:.4f}")  # fmt: skip
        if not stage.models:
            table.add_row("–", "–", "nothing to do", "0", "0", "0", "0", "0", "0", "0")
        console.print(table)
        if stage.judging is not None:
            _print_schedule(stage.judging, 0)
    estimated = plan.estimated
    if estimated:
        console.print(
            f"{estimated} of these calls are estimates: they read work not done yet, so their "
            "tokens in (and the pairs and samples they come from) are projected. Assumed:",
            highlight=False,
            soft_wrap=True,
        )
    elif plan.notes:
        console.print("Assumed:")
    for note in plan.notes:
        console.print(f"  - {escape(note)}", highlight=False, soft_wrap=True)
    console.print(f"At most ${plan.max_cost_usd:.4f} in all.", highlight=False)
    if budget is not None and plan.max_cost_usd > budget:
        console.print(f"[yellow]The budget of ${budget:g} stops this run before it ends.[/yellow]")


def _print_generation(summary: GenerationSummary, command: str) -> bool:
    return _print_calls(
        "generate",
        f"{summary.fixed} fixed replies stored, {summary.already_done} completions already done",
        summary.model_calls,
        "completions",
        command,
    )


def _print_judging(summary: JudgingSummary, command: str) -> bool:
    complete = _print_calls(
        "judge",
        f"{summary.new_pairs} new pairs, {summary.already_done} judgments already done",
        summary.model_calls,
        "verdicts",
        command,
    )
    _print_schedule(summary.plan, summary.model_calls.reasks)
    return complete


def _print_schedule(plan: JudgingPlan, reasks: int) -> None:
    """Judge loads, and the pairs the ensemble could not cover as asked."""
    loads = ", ".join(f"{name} {n}" for name, n in plan.loads.items())
    console.print(f"judge loads (verdicts scheduled): {loads}")
    if reasks:
        console.print(f"{reasks} invalid verdicts were asked again with their validation error")
    schedule = plan.schedule
    if schedule.unjudgeable:
        console.print(
            f"[yellow]{len(schedule.unjudgeable)} pairs have no eligible judge: every judge "
            "shares a family with one of the two replies. Add a judge from another family to "
            "rate them.[/yellow]"
        )
    if schedule.short:
        console.print(
            f"[yellow]{len(schedule.short)} pairs have fewer eligible judges than "
            "judging.judges_per_pair asks; they get every eligible one.[/yellow]"
        )


def _print_report(summary: ReportSummary) -> None:
    from heart.report import rater_verdict, terminal_audit, terminal_conclusions, terminal_table

    if summary.warning:
        console.print(f"[bold red]{summary.warning}[/bold red]")
    labels = summary.facts.strategies
    if labels is not None and labels.flagged:
        console.print(
            f"[bold red]Strategy classifier: UNRELIABLE: {'; '.join(labels.problems)}.[/bold red]",
            highlight=False,
        )
    adversarial = summary.facts.adversarial
    if adversarial is not None and adversarial.rater.flagged:
        console.print(
            f"[bold red]Hostility rater: {rater_verdict(adversarial.rater)}[/bold red]",
            highlight=False,
        )
    console.print(terminal_table(summary.facts))
    for line in terminal_conclusions(summary.facts):
        console.print(line, markup=False, highlight=False)
    if summary.facts.audit:
        console.print(terminal_audit(summary.facts.audit))
    console.print(f"Report: {summary.path}")


@app.command()
def generate(study: StudyOption = Path("."), dry_run: DryRunOption = False) -> None:
    """Generate every missing completion (models, the ESConv original, controls).

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study) as s:
        if dry_run:
            _print_dry_run(pipeline.dry_run(s, ("generate",)), s.config.engine.budget_usd)
            return
        summary = pipeline.generate(s, ProgressBar())
    if not _print_generation(summary, _command("generate", study)):
        raise typer.Exit(1)


@app.command()
def judge(
    study: StudyOption = Path("."),
    dry_run: DryRunOption = False,
    reply_tokens: ReplyTokensOption = None,
) -> None:
    """Build the pairs and ask every LLM judge for the verdicts it has not given yet.

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study) as s:
        if dry_run:
            _print_dry_run(
                pipeline.dry_run(s, ("judge",), reply_tokens), s.config.engine.budget_usd
            )
            return
        summary = pipeline.judge(s, ProgressBar())
    if not _print_judging(summary, _command("judge", study)):
        raise typer.Exit(1)


def _print_strategies(summary: ClassificationSummary, command: str) -> bool:
    plan = summary.plan
    return _print_calls(
        "strategies",
        f"{plan.sampled} completions to label by {plan.classifier}, {plan.already_done} already "
        "labelled",
        summary.model_calls,
        "classifications",
        command,
    )


@app.command()
def strategies(
    study: StudyOption = Path("."),
    dry_run: DryRunOption = False,
    reply_tokens: ReplyTokensOption = None,
) -> None:
    """Label completions with the 15 support strategies (strategies.classifier, else the
    embedded model): strategies.completions of them spread over systems, or all.

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study) as s:
        if dry_run:
            _print_dry_run(
                pipeline.dry_run(s, ("strategies",), reply_tokens), s.config.engine.budget_usd
            )
            return
        summary = pipeline.classify_strategies(s, ProgressBar())
    if not _print_strategies(summary, _command("strategies", study)):
        raise typer.Exit(1)


def _print_rationales(summary: RationaleCodingSummary, command: str) -> bool:
    rules = summary.rules
    console.print(
        f"rationales: {rules.coded} coded by the rule-based coder ({rules.coder}, codebook "
        f"{rules.codebook}), {rules.codes} themes found, {rules.already_done} coded before"
    )
    if summary.llm is None:
        return True
    plan = summary.llm.plan
    return _print_calls(
        "rationales",
        f"{plan.to_code} rationales to code by {plan.coder}, {plan.already_done} already coded",
        summary.llm.model_calls,
        "codings",
        command,
    )


@app.command()
def rationales(
    study: StudyOption = Path("."),
    dry_run: DryRunOption = False,
    reply_tokens: ReplyTokensOption = None,
) -> None:
    """Code judges' and raters' rationales with the codebook's themes: the rule-based coder, then
    the LLM coder when rationales.coder is set. Only rationales not coded yet are read.

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study) as s:
        if dry_run:
            _print_dry_run(
                pipeline.dry_run(s, ("rationales",), reply_tokens), s.config.engine.budget_usd
            )
            console.print("The rule-based coder makes no model calls.")
            return
        summary = pipeline.code_rationales(s, ProgressBar())
    if not _print_rationales(summary, _command("rationales", study)):
        raise typer.Exit(1)


@judges_app.command("audit")
def judges_audit(study: StudyOption = Path(".")) -> None:
    """Per judge and rater (LLM judges and people, collected by heart or imported): flip rate,
    first-position, longer-reply, control and own-family shares.

    Exits with status 1 when a judge or a rater is flagged unreliable, so scripts can stop on it;
    the message names the people among them apart.
    """
    from heart.pipeline import audit
    from heart.report import terminal_audit

    with _study(study) as s:
        audits = audit(s)
    if not audits:
        console.print("No valid verdicts yet: run `heart judge`, or import judgments, first.")
        return
    console.print(terminal_audit(audits))
    judges = [a.judge for a in audits if a.flagged and not a.person]
    people = [a.judge for a in audits if a.flagged and a.person]
    if judges:
        console.print(
            Text(
                f"Unreliable: {', '.join(judges)}. Their verdicts follow the order of "
                "presentation more than the replies; use stronger judges for a real study.",
                style="bold red",
            )
        )
    if people:
        console.print(
            Text(
                f"Unreliable human raters: {', '.join(people)}. Their verdicts follow the order "
                "of presentation more than the replies; for imported verdicts, check that each "
                "row's a_system is the reply the person saw first.",
                style="bold red",
            )
        )
    if judges or people:
        raise typer.Exit(1)


@app.command()
def leaderboard(
    study: StudyOption = Path("."),
    judges: Annotated[
        str, typer.Option(help="Whose verdicts: 'llm' judges, 'human' raters, or 'all'.")
    ] = "llm",
    subset: Annotated[
        str, typer.Option(help="Which items: 'all', 'regular' or 'adversarial'.")
    ] = "all",
) -> None:
    """Print a leaderboard in the terminal (default: LLM judges, all items)."""
    from heart.report import gather_facts, terminal_conclusions, terminal_table

    if judges not in ("llm", "human", "all") or subset not in ("all", "regular", "adversarial"):
        raise HeartError(
            f"--judges must be llm, human or all and --subset all, regular or adversarial; "
            f"got --judges {judges} --subset {subset}"
        )
    with _study(study) as s:
        facts = gather_facts(s)
    board = facts.find(judges, subset)
    if board is None and facts.boards:
        have = ", ".join(f"--judges {b.source} --subset {b.subset}" for b in facts.boards)
        raise HeartError(
            f"this study has no board for --judges {judges} --subset {subset}; it has: {have}"
        )
    console.print(terminal_table(facts, board))
    for line in terminal_conclusions(facts, board):
        console.print(line, markup=False, highlight=False)


@app.command()
def report(
    study: StudyOption = Path("."),
    index: Annotated[
        Path | None,
        typer.Option(
            "--index",
            help="A capability index CSV (columns system and value) to set Elo against; "
            "overrides ratings.capability_index.",
        ),
    ] = None,
) -> None:
    """Write the report (HTML, Markdown, CSV, provenance.json) into the study's report/ folder,
    put in place whole once written: a failed or interrupted report leaves the previous one."""
    from heart import pipeline

    with _study(study) as s:
        _print_report(pipeline.report(s, index))


def _print_check(report: CheckReport) -> None:
    """Each problem on one line with its fix, else a short summary of what was checked; the
    notes and the probes either way."""
    for note in report.notes:
        console.print(f"note: {escape(note)}", highlight=False, soft_wrap=True)
    for probe in report.probes:
        if probe.answered:
            line = (
                f"probe: {probe.provider} {probe.model} at {probe.endpoint} answered in "
                f"{probe.seconds:.1f} s ({', '.join(probe.users)})"
            )
            console.print(escape(line), highlight=False, soft_wrap=True)
    if report.problems:
        n = len(report.problems)
        console.print(f"[bold red]{n} problem{'s' * (n > 1)} in {escape(str(report.study))}:"
                      "[/bold red]", highlight=False)  # fmt: skip
        for problem in report.problems:
            console.print(f"  {escape(str(problem))}", highlight=False, soft_wrap=True)
        return
    probed = f"; {len(report.probes)} probes answered" if report.probes else ""
    console.print(
        f"[green]All good[/green]: {escape('; '.join(report.checked))}{probed}.",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
def check(
    study: StudyOption = Path("."),
    probe: Annotated[
        bool,
        typer.Option(
            "--probe",
            help="Also make one minimal call (a few tokens) to every model the study uses: "
            "systems, judges, screener, rewriter, hostility rater, classifier, coder.",
        ),
    ] = False,
) -> None:
    """Check that the study is ready to run, changing nothing: the study file, every path it
    names (corpus, capability index, store folder), every API key variable, the SDKs and the
    embedded model, the store's schema.

    Prints each problem on one line with its fix and exits with status 1 on any; else a short
    summary and status 0. `heart run` starts with this check (without probes)."""
    from heart.check import check_study

    report = check_study(study, probe=probe)
    _print_check(report)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def run(
    study: StudyOption = Path("."),
    dry_run: DryRunOption = False,
    reply_tokens: ReplyTokensOption = None,
) -> None:
    """Every stage in order (items, adversarial items, generate, judge, strategies when a
    classifier is set, rationale coding, report), skipping finished work.

    Starts with `heart check` (without probes) and stops on a problem. Stops after a stage
    whose calls did not all get an answer, with exit status 1, the failures by cause and the
    command that retries just those: judging never starts while replies are missing."""
    from heart import pipeline
    from heart.check import check_study

    found = check_study(study)
    if not found.ok and not (dry_run and found.valid):
        _print_check(found)
        raise typer.Exit(1)
    with _study(study) as s:
        if dry_run:
            _print_dry_run(
                pipeline.dry_run(s, reply_tokens=reply_tokens), s.config.engine.budget_usd
            )
            if not found.ok:  # the price is known; a real run would stop on these first
                _print_check(found)
                raise typer.Exit(1)
            return
        done = pipeline.run(s, ProgressBar())
        regular = s.config.items.regular
    _print_items(done.items, regular, _command("items build", study))
    if done.adversarial is not None:
        _print_adversarial(done.adversarial, _command("items adversarial", study))
    if done.generation is not None:
        _print_generation(done.generation, _command("generate", study))
    if done.judging is not None:
        _print_judging(done.judging, _command("judge", study))
    if done.strategies is not None:
        _print_strategies(done.strategies, _command("strategies", study))
    if done.rationales is not None:
        _print_rationales(done.rationales, _command("rationales", study))
    if done.report is not None:
        _print_report(done.report)
    if done.stopped is not None:
        why = (
            "replies are missing, so judging did not start"
            if done.stopped == "generate"
            else ("the later stages did not run")
        )
        console.print(
            f"[bold red]heart run stopped after {done.stopped}: {why}.[/bold red] Finish those "
            f"calls with the command above; then `{_command('run', study)}` goes on.",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
    console.print(f"Done in {done.seconds:.0f} s.")


@app.command("export")
def export(
    out: Annotated[Path, typer.Argument(help="Folder to write the bundle into.")],
    study: StudyOption = Path("."),
) -> None:
    """Write the study as a bundle: JSON Lines per table, the study file, its provenance
    (provenance.json: heart's version and commit, prompts, models and endpoints, tokens and cost
    per stage; never a key), a sha256 manifest.

    People appear by pseudonymous ids only (raters with their exclusion reason); invite-token
    hashes and entry metadata stay in the study."""
    from heart.pipeline import export

    with _study(study) as s:
        rows = export(s, out)
    console.print(f"Exported to {out}: " + ", ".join(f"{k} {v}" for k, v in rows.items()))


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A bundle folder, or a CSV/JSON Lines file.")],
    study: StudyOption = Path("."),
    table: Annotated[
        str | None,
        typer.Option(help="For a file: 'completions', 'judgments' or 'labels'."),
    ] = None,
) -> None:
    """Import a bundle (or completions/judgments from a file) into the study, all or nothing.

    Importing a bundle into a folder without a study.yaml creates the study from the bundle. The
    bundle's provenance is kept beside the study's own, never in its place.
    """
    from heart.pipeline import import_into

    summary = import_into(study, path, table)
    added = ", ".join(f"{k} {v}" for k, v in summary.added.items()) or "nothing new"
    stored = sum(summary.unchanged.values())
    console.print(f"Imported: {added}" + (f" ({stored} rows already stored)" if stored else ""))


@app.command()
def serve(
    study: StudyOption = Path("."),
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
) -> None:
    """Run the web app where people write, judge and label (needs the web extra).

    The admin token comes from HEART_ADMIN_TOKEN, else a fresh one is printed once; the session
    secret from HEART_SECRET, else from the study's .heart-secret (made on first use)."""
    import os
    import secrets

    try:
        import uvicorn

        from heart.web import create_app, study_secret
    except ImportError as exc:
        raise HeartError(
            f"the web app needs the web extra ({exc.name} is missing): "
            "pip install 'heart-bench[web]'"
        ) from None
    given = os.environ.get("HEART_ADMIN_TOKEN")
    token = given or secrets.token_urlsafe(24)
    if len(token) < 16:
        raise HeartError("HEART_ADMIN_TOKEN must be at least 16 characters; use a random one")
    secret_text = os.environ.get("HEART_SECRET")
    if secret_text is not None and len(secret_text) < 16:
        raise HeartError("HEART_SECRET must be at least 16 characters; use a random one")
    secret = secret_text.encode("utf-8") if secret_text else study_secret(study)
    web_app = create_app(study, admin_token=token, secret=secret)
    if given:
        typer.echo(f"admin: http://{host}:{port}/admin?token=<the token in HEART_ADMIN_TOKEN>")
    else:
        typer.echo(f"admin: http://{host}:{port}/admin?token={token}")
    uvicorn.run(web_app, host=host, port=port, log_level="info")


@raters_app.command("invite")
def raters_invite(
    n: Annotated[int, typer.Argument(help="How many invite links to make.")],
    study: StudyOption = Path("."),
    base_url: Annotated[
        str, typer.Option(help="Where people reach `heart serve`.")
    ] = "http://127.0.0.1:8000",
    note: Annotated[str, typer.Option(help="A note kept with these raters.")] = "",
) -> None:
    """Make N raters and print one invite link each (shown once: only a hash is stored)."""
    from heart.people import invite

    if n < 1:
        raise HeartError(f"the number of invites must be at least 1, got {n}")
    with _study(study) as s:
        made = invite(s.store, n, note)
    for _, token in made:
        typer.echo(f"{base_url.rstrip('/')}/invite/{token}")


@raters_app.command("list")
def raters_list(study: StudyOption = Path(".")) -> None:
    """List raters: how they came in, tasks done, checks failed, verdicts counted, exclusion."""
    from heart.people import KINDS, review_quality

    with _study(study) as s:
        people = review_quality(s.store)
    table = Table()
    for col in ("rater", "entry", *KINDS, "checks failed", "verdicts counted", "excluded"):
        table.add_column(col)
    for q in people:
        table.add_row(
            q.rater, q.entry, *(str(q.tasks.get(k, 0)) for k in KINDS),
            f"{q.failed} of {q.checks}", str(q.counted), q.excluded or "",
        )  # fmt: skip
    console.print(table)


def main() -> None:
    """Entry point: run the app, turning the project's own errors into a message and exit code 2."""
    try:
        app()
    except HeartError as exc:
        console.print(f"[bold red]error:[/bold red] {exc}", highlight=False)
        sys.exit(2)


__all__ = ["app", "main"]
