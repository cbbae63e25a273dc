"""The `heart` command: one subcommand per stage, plus `heart run` for all of them in order."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
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

from heart.console import console, say, show
from heart.errors import HeartError

if TYPE_CHECKING:
    from heart.analyses import GateVerdict
    from heart.batches import BatchLine
    from heart.check import CheckReport
    from heart.engine import Progress, RunSummary
    from heart.generate import GenerationSummary
    from heart.items.adversarial import AdversarialSummary
    from heart.judging import JudgingPlan, JudgingSummary
    from heart.people import PeoplePlan
    from heart.pipeline import DryRun, ItemsSummary, ReportSummary
    from heart.rationales.code import RationaleCodingSummary
    from heart.strategies.classify import ClassificationSummary
    from heart.study import Study
    from heart.types import Item
    from heart.verdicts import Reply, VerdictRow

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
batches_app = typer.Typer(
    help="The batches runs have sent to provider batch APIs: list the open ones with their "
    "progress, or cancel them.",
)
app.add_typer(batches_app, name="batches")

StudyOption = Annotated[
    Path, typer.Option("--study", "-s", help="The study folder (holds study.yaml).")
]


BatchOption = Annotated[
    bool,
    typer.Option(
        "--batch",
        help="Send this command's OpenAI and Anthropic calls through the providers' batch APIs "
        "at half price, as engine.batch.enabled does (an endpoint set to batch: false stays "
        "live). Answers come within a day; stopping and rerunning picks up the batches "
        "already submitted, and `heart batches` lists them.",
    ),
]


def _print_version(asked: bool) -> None:
    if asked:
        from heart.version import version_line

        say(version_line())
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
def _study(root: Path, *, read_only: bool = False, batch: bool = False) -> Iterator[Study]:
    """The study at ``root``; with ``batch``, its OpenAI and Anthropic calls go through their
    providers' batch APIs for this command (unless an endpoint's own setting says no)."""
    from heart.study import open_study

    with open_study(root, read_only=read_only) as study:
        if batch:
            engine = study.config.engine
            batches = engine.batch.model_copy(update={"enabled": True})
            study.config = study.config.model_copy(
                update={"engine": engine.model_copy(update={"batch": batches})}
            )
        yield study


def progress_label(report: Progress) -> str:
    """The stage, the provider batches it waits on, and the calls each replica answered."""
    from heart.engine import replica_lines

    waiting = f" ({report.batches_open} batches open)" if report.batches_open else ""
    replicas = "; ".join(replica_lines(report.replicas))
    return report.stage + waiting + (f" · {replicas}" if replicas else "")


class ProgressBar:
    """Draws the engine's progress reports: one bar per stage with rate, ETA, tokens and cost."""

    def __init__(self) -> None:
        self.bar: RichProgress | None = None
        self.task = TaskID(0)

    def __call__(self, report: Progress) -> None:
        if self.bar is None:
            self.bar = RichProgress(
                TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                MofNCompleteColumn(), TextColumn("{task.fields[rate]}", markup=False),
                TimeElapsedColumn(), TextColumn("eta", markup=False), TimeRemainingColumn(),
                TextColumn("{task.fields[tokens]} tok ${task.fields[cost]:.4f}", markup=False),
                console=console, refresh_per_second=4,
            )  # fmt: skip
            self.task = self.bar.add_task(report.stage, total=report.total, rate="", tokens=0,
                                          cost=0.0)  # fmt: skip
            self.bar.start()
        elapsed = self.bar.tasks[self.task].elapsed or 0.0
        rate = f"{report.fresh / elapsed * 60:.0f}/min" if elapsed > 0 and report.fresh else ""
        self.bar.update(self.task, completed=report.done, total=report.total, rate=rate,
                        tokens=report.tokens, cost=report.cost_usd,
                        description=progress_label(report))  # fmt: skip
        if report.finished:
            self.bar.stop()
            self.bar = None


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Folder to create the study in.")],
    demo: Annotated[bool, typer.Option(help="Set up the bundled, offline demo study.")] = False,
) -> None:
    """Create a study folder with a study.yaml (and, with --demo, the demo corpus).

    Without --demo the study file is a commented start: the ESConv original, a human system
    and a control, with models and judges of every provider (an OpenAI-compatible endpoint,
    Anthropic, the embedded model) shown commented out. `heart check` then says what is left
    to fill in."""
    from heart.study import create_study

    target = create_study(directory, demo=demo)
    if demo:
        say(f"Created {target} (demo study)", soft_wrap=True)
        return
    say(
        f"Created {target}: set items.esconv and switch on your models and judges (its "
        f"comments say how), then `heart check --study {shlex.quote(str(directory))}`",
        soft_wrap=True,
    )


@app.command()
def settings(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the reference to this file instead of printing it."
        ),
    ] = None,
) -> None:
    """Print every setting study.yaml may hold, with its type, default and meaning, as Markdown
    (the reference docs/study-file.md is written with `heart settings -o docs/study-file.md`)."""
    from heart.settings_reference import settings_reference

    text = settings_reference()
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise HeartError(f"{output}: cannot be written ({exc.strerror})") from None
    say(f"Wrote {output}", soft_wrap=True)


def _print_items(summary: ItemsSummary, requested: int, command: str) -> bool:
    """The items stage's counts by problem type and by screening rule (or, when the LLM
    screener's calls did not all get an answer, what failed); returns whether they all did."""
    selection = summary.selection
    if not summary.complete:
        assert summary.model_calls is not None
        say(f"The items were not changed: {_subsets(summary.stored)}.", style="yellow")
        return _print_calls("screen", "no items chosen", summary.model_calls,
                            "screener calls", command)  # fmt: skip
    if selection is None:
        say(f"items: {_subsets(summary.stored)} already built")
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
    show(table)
    rules = Table(title=f"{len(selection.decisions)} couplets screened")
    rules.add_column("rule")
    rules.add_column("kept", justify="center")
    rules.add_column("couplets", justify="right")
    for rule, n in sorted(selection.counts_by_rule().items(), key=lambda kv: -kv[1]):
        rules.add_row(rule, "yes" if rule == "selected" else "", str(n))
    show(rules)
    if summary.duplicates:
        say(f"{summary.duplicates} duplicate conversations were skipped.")
    state = "stored" if summary.changed else "unchanged (already stored)"
    say(f"Items {state} in {summary.seconds:.1f} s; the study has {_subsets(summary.stored)}.")
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
        say("The adversarial items were not changed.", style="yellow")
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
    show(table)
    if summary.sources < summary.requested:
        say(
            f"Only {summary.sources} conversations of the corpus have a supporter greeting, "
            f"{MIN_TURNS} or more turns and pass the safety screen.",
            style="yellow",
        )
    return _print_calls("adversarial", f"{summary.kept} items kept", summary.model_calls,
                        "rewriter or rater calls", command)  # fmt: skip


@items_app.command("adversarial")
def items_adversarial(
    study: StudyOption = Path("."), dry_run: DryRunOption = False, batch: BatchOption = False
) -> None:
    """Rewrite the seeker turns of items.adversarial conversations to escalation profiles, rate
    and check every rewrite, and store the kept ones as adversarial items.

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those; nothing is then
    stored."""
    from heart import pipeline

    with _study(study, batch=batch) as s:
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
    system: Annotated[
        str | None,
        typer.Option(help="Only this system's reply, and the verdicts on pairs holding it."),
    ] = None,
    judge: Annotated[
        str | None, typer.Option(help="Only the verdicts of this judge or rater.")
    ] = None,
) -> None:
    """Print one item: its context and original reply, every system's reply to it, and every
    verdict on it (judge, the reply shown first, winner and strength, the five axes, the
    rationale, and why a verdict is left out of the analyses when it is)."""
    from heart.items import stored_item
    from heart.verdicts import item_replies, verdict_rows

    with _study(study) as s:
        item, screened = stored_item(s.store, item_id)
        _require_known(s, system, judge)
        replies = item_replies(s.store, item_id, system)
        verdicts = verdict_rows(s.store, item=item_id, system=system, judge=judge)
    _print_item(item, screened)
    _print_replies(replies, system)
    _print_verdicts(verdicts, system, judge)


def _require_known(study: Study, system: str | None, judge: str | None) -> None:
    """A one-line error naming what the study has, for a --system or --judge it does not."""
    from sqlalchemy import select

    from heart.store import JudgeRow, SystemRow

    for given, option, column in ((system, "system", SystemRow.name),
                                  (judge, "judge", JudgeRow.name)):  # fmt: skip
        if given is None:
            continue
        with study.store.session() as session:
            names = list(session.scalars(select(column).order_by(column)))
        if given not in names:
            raise HeartError(
                f"--{option} {given!r}: this study has no such {option}; it has: "
                f"{', '.join(names) or 'none yet'}"
            )


def _print_item(item: Item, screened: str | None) -> None:
    from heart.transcript import ROLE_NAMES
    from heart.types import Role

    say((item.id, "bold"), f"  {item.subset}  {item.problem_type} / {item.emotion_type}")
    if "profile" in item.meta:
        say(
            f"escalation: {item.meta['profile']}, target hostility {item.meta['targets']}, "
            f"rated {item.meta['ratings']}"
        )
    say(f"situation: {item.situation}")
    say(
        f"conversation {item.conversation_id}, reply turn {item.turn_index}, "
        f"hash {item.content_hash[:16]}"
    )
    if screened is not None:
        say(f"screen: {screened}")
    say()
    for turn in item.context:
        colour = "cyan" if turn.role is Role.SEEKER else "green"
        say((f"{ROLE_NAMES[turn.role]}:", colour), f" {turn.text}")
    say()
    say(("original reply:", "bold"), f" {item.reference}")


def _reply_name(system: str, contributor: str) -> str:
    return f"{system} ({contributor})" if contributor else system


def _print_replies(replies: list[Reply], system: str | None) -> None:
    say()
    if not replies:
        whose = f"{system} has" if system else "no system has"
        say((f"Replies: {whose} replied to this item yet", "bold"))
        return
    say((f"Replies ({len(replies)})", "bold"))
    for r in replies:
        name = _reply_name(r.system, r.contributor)
        if r.status == "ok":
            say((f"{name}:", "magenta"), f" {r.text}")
        else:
            say((f"{name}:", "magenta"), (f" failed: {r.error or 'no reply'}", "red"))


def _print_verdicts(verdicts: list[VerdictRow], system: str | None, judge: str | None) -> None:
    from heart.types import Axis

    say()
    about = "".join(
        f" {word} {name}" for word, name in (("on pairs with", system), ("by", judge)) if name
    )
    if not verdicts:
        say((f"Verdicts{about}: none yet", "bold"))
        return
    counted = sum(v.counted for v in verdicts)
    say((f"Verdicts{about} ({len(verdicts)}, {counted} counted)", "bold"))
    for v in verdicts:
        a = _reply_name(v.a_system, v.a_contributor)
        b = _reply_name(v.b_system, v.b_contributor)
        first, second = (a, b) if v.order == "ab" else (b, a)
        outcome = "tie" if v.winner == "tie" else f"{a if v.winner == 'a' else b} wins"
        strength = (
            f", strength {v.strength}" if v.strength is not None and v.winner != "tie" else ""
        )
        say()
        say(
            (v.judge, "bold"), f" ({v.judge_source}, {v.judge_family or 'no family'}"
            f"{', imported' if v.imported else ''}) saw {first} first, then {second}: ",
            (f"{outcome}{strength}", "bold"),
        )  # fmt: skip
        axes = []
        for axis in Axis:
            side, size = v.axis(axis.value)
            if side is not None:
                named = {"a": a, "b": b}.get(side, "none")
                axes.append(
                    f"{axis.value} {named}" + (f" {size}" if size and named != "none" else "")
                )
        if axes:
            say(f"  axes: {'; '.join(axes)}")
        if v.rationale:
            say(f"  rationale: {v.rationale}")
        if not v.counted:
            say((f"  left out: {v.left_out}", "yellow"))
            if v.excluded:
                say((f"  rater excluded: {v.excluded}", "yellow"))


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
    show(table)


def _command(stage: str, study: Path) -> str:
    """The command line that runs ``stage`` on ``study`` again (the default folder left out)."""
    return f"heart {stage}" + ("" if study == Path(".") else f" --study {shlex.quote(str(study))}")


def _print_calls(stage: str, done: str, calls: RunSummary, what: str, command: str) -> bool:
    """One line per stage: what was done, how many calls, from cache, failed. Then, when some
    calls got no answer, the failures by cause with their fix and the command that asks again
    for just those; returns whether every call was answered. A model served by replicas gets a
    line of what each answered."""
    from heart.engine import replica_lines

    say(
        f"{stage}: {done}, {calls.calls} model calls ({calls.cached} from cache, "
        f"{calls.failed} failed)"
    )
    for line in replica_lines(calls.replicas):
        say(f"  answered by replicas: {line}", soft_wrap=True)
    if calls.failed:
        _print_failures(calls, what)
    if calls.not_started:
        say(
            f"Budget reached: {calls.not_started} calls were not started (spent "
            f"${calls.cost_usd:.4f}); raise engine.budget_usd if you want more per run.",
            style="yellow",
        )
    if calls.complete:
        return True
    missing = calls.failed + calls.not_started
    these = f"these {missing} calls" if missing > 1 else "this call"
    say(f"Retry just {these} (finished work is skipped): {command}", style="bold", soft_wrap=True)
    return False


def _print_failures(calls: RunSummary, what: str) -> None:
    """Failed calls by cause, most common first, each cause with its fix; under it, per model,
    how many and the first reason."""
    from heart.models._errors import FIXES

    say(
        (f"{calls.failed} {what} failed for good", "bold red"),
        " (stored with their reason, never counted), by cause:",
    )
    for cause, n in calls.by_cause().most_common():
        calls_n = f"{n} call{'s' * (n > 1)}"
        say(f"  {cause}, {calls_n}: {FIXES[cause]}", soft_wrap=True)
        models: dict[tuple[str, str, str], list[str]] = {}
        for f in calls.failures:
            if f.cause is cause:
                models.setdefault((f.provider, f.model, f.endpoint), []).append(f.reason)
        for (provider, model, endpoint), reasons in models.items():
            reason = reasons[0] if len(reasons[0]) <= 300 else reasons[0][:300] + "…"
            line = f"{len(reasons)} to {provider} {model} at {endpoint}: {reason}"
            say(f"    {line}", soft_wrap=True)


DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print the calls, tokens and cost this would spend, per endpoint (with a model's "
        "replicas) and model; call "
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
                    "≈ tokens in", "≤ tokens out", "≤ cost (USD)", "price"):  # fmt: skip
            table.add_column(
                col, justify="left" if col in ("provider", "endpoint", "model") else "right"
            )
        for p in stage.models:
            counts = (p.calls, p.cached, p.calls - p.cached, p.estimated)
            endpoint = "\n".join(p.replicas) if p.replicas else p.endpoint
            table.add_row(p.provider, endpoint, p.model, *map(str, counts), f"{p.tokens_in:,}",
                          f"{p.max_tokens_out:,}", f"{p.max_cost_usd:.4f}",
                          "batch" if p.batch else "list")  # fmt: skip
        if not stage.models:
            table.add_row("–", "–", "nothing to do", "0", "0", "0", "0", "0", "0", "0", "–")
        show(table)
        if stage.judging is not None:
            _print_schedule(stage.judging, 0)
    estimated = plan.estimated
    if estimated:
        say(
            f"{estimated} of these calls are estimates: they read work not done yet, so their "
            "tokens in (and the pairs and samples they come from) are projected. Assumed:",
            soft_wrap=True,
        )
    elif plan.notes:
        say("Assumed:")
    for note in plan.notes:
        say(f"  - {note}", soft_wrap=True)
    say(f"At most ${plan.max_cost_usd:.4f} in all.")
    if plan.people is not None:
        _print_people_plan(plan.people)
    if budget is not None and plan.max_cost_usd > budget:
        say(f"The budget of ${budget:g} stops this run before it ends.", style="yellow")


def _print_people_plan(people: PeoplePlan) -> None:
    """The people's seats per kind, the sessions they make, the time, and the crowd's cost."""
    table = Table(title="people: the seats a run's items, pairs and replies give")
    for col in ("work", "seats", "done", "left"):
        table.add_column(col, justify="left" if col == "work" else "right")
    for kind, seats in people.seats.items():
        done = people.done.get(kind, 0)
        table.add_row(kind, str(seats), str(done), str(max(0, seats - done)))
    show(table)
    say("Pairs that hold people's replies get their seats once those are written: not counted "
        "here.", soft_wrap=True)  # fmt: skip
    pace = f"{people.time.seconds:.0f} s a task, {people.time.text()}"
    if people.sessions is None:
        say(f"{people.left} tasks left, priced one by one (no people.tasks_per_person): "
            f"{people.hours:.1f} hours of work at {pace}.", soft_wrap=True)  # fmt: skip
    else:
        say(f"{people.left} tasks left make {people.sessions} sessions of "
            f"{people.tasks_per_session} tasks, {people.session_minutes:.0f} minutes each at "
            f"{pace}: {people.hours:.1f} hours paid.", soft_wrap=True)  # fmt: skip
    money = people.currency
    if people.pay is None or people.fee is None or people.total is None:
        say("Set people.pay_per_hour to price the crowd (and people.platform_fee, a third by "
            "default on Prolific).", soft_wrap=True)  # fmt: skip
        return
    say(f"The crowd: {money}{people.pay:,.2f} pay + {money}{people.fee:,.2f} platform fee "
        f"({people.fee_share:.0%}) = {money}{people.total:,.2f}, beside the models' cost "
        "above.", soft_wrap=True)  # fmt: skip


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
        f"{summary.new_pairs} new pairs"
        + (f" in {summary.rounds} adaptive rounds" if summary.rounds else "")
        + f", {summary.already_done} judgments already done",
        summary.model_calls,
        "verdicts",
        command,
    )
    _print_schedule(summary.plan, summary.model_calls.reasks)
    return complete


def _print_schedule(plan: JudgingPlan, reasks: int) -> None:
    """Judge loads, and the pairs the ensemble could not cover as asked."""
    loads = ", ".join(f"{name} {n}" for name, n in plan.loads.items())
    say(f"judge loads (verdicts scheduled): {loads}")
    if reasks:
        say(f"{reasks} invalid verdicts were asked again with their validation error")
    schedule = plan.schedule
    if schedule.unjudgeable:
        say(
            f"{len(schedule.unjudgeable)} pairs have no eligible judge: every judge shares a "
            "family with one of the two replies. Add a judge from another family to rate them.",
            style="yellow",
        )
    if schedule.short:
        say(
            f"{len(schedule.short)} pairs have fewer eligible judges than "
            "judging.judges_per_pair asks; they get every eligible one.",
            style="yellow",
        )


def _print_report(summary: ReportSummary) -> None:
    from heart.report import rater_verdict, terminal_audit, terminal_conclusions, terminal_table

    if summary.warning:
        say(summary.warning, style="bold red")
    labels = summary.facts.strategies
    if labels is not None and labels.flagged:
        say(f"Strategy classifier: UNRELIABLE: {'; '.join(labels.problems)}.", style="bold red")
    adversarial = summary.facts.adversarial
    if adversarial is not None and adversarial.rater.flagged:
        say(f"Hostility rater: {rater_verdict(adversarial.rater)}", style="bold red")
    show(terminal_table(summary.facts))
    for line in terminal_conclusions(summary.facts):
        say(line)
    if summary.facts.audit:
        show(terminal_audit(summary.facts.audit))
    say(f"Report: {summary.path}", soft_wrap=True)


@app.command()
def generate(
    study: StudyOption = Path("."), dry_run: DryRunOption = False, batch: BatchOption = False
) -> None:
    """Generate every missing completion (models, the ESConv original, controls).

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study, batch=batch) as s:
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
    batch: BatchOption = False,
) -> None:
    """Build the pairs and ask every LLM judge for the verdicts it has not given yet (with
    pairs.design: adaptive, in rounds until pairs.budget or pairs.stop).

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study, batch=batch) as s:
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
    batch: BatchOption = False,
) -> None:
    """Label completions with the 15 support strategies (strategies.classifier, else the
    embedded model): strategies.completions of them spread over systems, or all.

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study, batch=batch) as s:
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
    say(
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
    batch: BatchOption = False,
) -> None:
    """Code judges' and raters' rationales with the codebook's themes: the rule-based coder, then
    the LLM coder when rationales.coder is set. Only rationales not coded yet are read.

    Exits 1 when some calls failed for good (or the budget stopped them), printing them by
    cause with their fix and the command that asks again for just those."""
    from heart import pipeline

    with _study(study, batch=batch) as s:
        if dry_run:
            _print_dry_run(
                pipeline.dry_run(s, ("rationales",), reply_tokens), s.config.engine.budget_usd
            )
            say("The rule-based coder makes no model calls.")
            return
        summary = pipeline.code_rationales(s, ProgressBar())
    if not _print_rationales(summary, _command("rationales", study)):
        raise typer.Exit(1)


@judges_app.command("audit")
def judges_audit(study: StudyOption = Path(".")) -> None:
    """Per judge and rater (LLM judges and people, collected by heart or imported): flip rate,
    first-position, longer-reply, control and own-family shares; then, per LLM judge that judged
    item-pairs people judged too, the systems it rates above or below people beyond noise.

    Exits with status 1 when a judge or a rater is flagged unreliable, so scripts can stop on it;
    the message names the people among them apart.
    """
    from heart.pipeline import audit, judges_vs_people
    from heart.report import tau_text, terminal_audit

    with _study(study) as s:
        audits = audit(s)
        against = judges_vs_people(s) if audits else []
    if not audits:
        say("No valid verdicts yet: run `heart judge`, or import judgments, first.")
        return
    show(terminal_audit(audits))
    for found in against:  # where each judge parts from people, system by system
        say(f"{found.sentence()} Orders: {tau_text(found)}.", soft_wrap=True)
    judges = [a.judge for a in audits if a.flagged and not a.person]
    people = [a.judge for a in audits if a.flagged and a.person]
    if judges:
        say(
            f"Unreliable: {', '.join(judges)}. Their verdicts follow the order of presentation "
            "more than the replies; use stronger judges for a real study.",
            style="bold red",
        )
    if people:
        say(
            f"Unreliable human raters: {', '.join(people)}. Their verdicts follow the order of "
            "presentation more than the replies; for imported verdicts, check that each row's "
            "a_system is the reply the person saw first.",
            style="bold red",
        )
    if judges or people:
        raise typer.Exit(1)


@app.command()
def leaderboard(
    study: StudyOption = Path("."),
    judges: Annotated[
        str,
        typer.Option(
            help="Whose verdicts: 'llm' judges, 'human' raters, 'all', or 'assisted' (people's "
            "verdicts with the LLM judges' help: prediction-powered, people's estimand)."
        ),
    ] = "llm",
    subset: Annotated[
        str, typer.Option(help="Which items: 'all', 'regular' or 'adversarial'.")
    ] = "all",
    axes: Annotated[
        bool,
        typer.Option(
            "--axes",
            help="Also print the board's five-axis profile: per system (in the board's order) "
            "its Elo on H, E, A, R and T with the interval and the verdicts behind each, "
            "preliminary and flagged-judge axes marked, and the weighted composite when "
            "ratings.weights sets one.",
        ),
    ] = False,
) -> None:
    """Print a leaderboard in the terminal (default: LLM judges, all items); with --axes, its
    five-axis profile under it. With ratings.weights in study.yaml the board also shows the
    weighted composite of the axes beside the overall Elo, which stays the ranking; unless
    ratings.style_control is false, each row's second line (SC) gives its style-controlled Elo
    and interval."""
    from heart.report import gather_boards, terminal_conclusions, terminal_profile, terminal_table

    sources = ("llm", "human", "all", "assisted")
    if judges not in sources or subset not in ("all", "regular", "adversarial"):
        raise HeartError(
            f"--judges must be llm, human, all or assisted and --subset all, regular or "
            "adversarial; "
            f"got --judges {judges} --subset {subset}"
        )
    with _study(study) as s:
        facts = gather_boards(s, axes=axes)
    board = facts.find(judges, subset)
    if board is None and facts.boards:
        have = ", ".join(f"--judges {b.source} --subset {b.subset}" for b in facts.boards)
        raise HeartError(
            f"this study has no board for --judges {judges} --subset {subset}; it has: {have}"
        )
    show(terminal_table(facts, board))
    if axes:
        show(terminal_profile(facts, board))
    for line in terminal_conclusions(facts, board):
        say(line)


def _print_gate(verdict: GateVerdict) -> None:
    """One screen: what was compared on what, per scope the gap, its interval and the evidence,
    the judges, and the answer with why."""
    from heart.analyses import EXIT_CODES

    say(
        f"{verdict.candidate} (candidate) against {verdict.baseline} (baseline): "
        f"{verdict.items} shared items, {verdict.conversations} conversations, "
        f"{verdict.verdicts} verdicts of {verdict.source} judges",
        soft_wrap=True,
    )
    if verdict.scopes:
        table = Table(
            title=f"Elo of the candidate minus the baseline's; {verdict.interval_level:.1%} "
            f"intervals (each end a {verdict.bound_level:.2%} bound: {verdict.tests} "
            f"scope{'s' * (verdict.tests > 1)} tested, {verdict.confidence:.0%} in all)"
        )
        for col in ("scope", "difference", "interval", "call", "verdicts", "cand./base.",
                    "head-to-head", "conversations", "judges"):  # fmt: skip
            table.add_column(col, justify="left" if col in ("scope", "call") else "right")
        for sc in verdict.scopes:
            known = sc.low == sc.low and sc.high == sc.high
            table.add_row(
                sc.scope, "–" if sc.difference != sc.difference else f"{sc.difference:+.0f}",
                f"[{sc.low:+.0f}, {sc.high:+.0f}]" if known else "–", sc.call,
                str(sc.verdicts), f"{sc.candidate_verdicts}/{sc.baseline_verdicts}",
                str(sc.head_to_head),
                f"{sc.candidate_conversations}/{sc.baseline_conversations}", str(len(sc.judges)),
            )  # fmt: skip
        show(table)
    judges = ", ".join(
        f"{j.judge} ({j.verdicts}{', FLAGGED' if j.flagged else ''})" for j in verdict.judges
    )
    say(f"judges (verdicts): {judges or 'none'}", soft_wrap=True)
    for note in verdict.notes:
        say(f"note: {note}", soft_wrap=True)
    for sc in verdict.scopes:
        for why in sc.why(verdict.margin):
            say(f"  {sc.scope}: {why}", soft_wrap=True)
    style = {"worse": "bold red", "not worse": "bold green"}.get(verdict.call, "bold yellow")
    say(
        (f"{verdict.call.upper()} (exit {EXIT_CODES[verdict.call]})", style),
        f": {verdict.reason} (margin {verdict.margin:g} Elo).",
        soft_wrap=True,
    )


def _write_json(path: Path, data: object, what: str) -> None:
    """Write ``data`` as JSON to a --json file and say so; a one-line error when it cannot."""
    import json

    try:
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise HeartError(
            f"--json {path}: cannot write it ({error.strerror}); name a file in a folder that "
            "exists"
        ) from None
    say(f"{what} written to {path}", soft_wrap=True)


@app.command()
def gate(
    candidate: Annotated[
        str, typer.Option("--candidate", help="The new system, as named in the study file.")
    ],
    baseline: Annotated[
        str, typer.Option("--baseline", help="The system it must not be worse than.")
    ],
    study: StudyOption = Path("."),
    axes: Annotated[
        str | None,
        typer.Option(
            "--axes",
            help="The axes to test besides the overall verdict, as letters: H,E,A,R,T "
            "(default: every axis the verdicts judged). Each one tested widens every interval.",
        ),
    ] = None,
    margin: Annotated[
        float,
        typer.Option(
            "--margin",
            min=0,
            help="The drop in Elo the gate tolerates: worse beyond it fails, not worse beyond "
            "it passes.",
        ),
    ] = 50.0,
    judges: Annotated[
        str, typer.Option(help="Whose verdicts: 'llm' judges, 'human' raters, or 'all'.")
    ] = "llm",
    json_file: Annotated[
        Path | None,
        typer.Option("--json", help="Also write the verdict, its reason and numbers to this file."),
    ] = None,
) -> None:
    """Gate a new system for CI: is the candidate worse than the baseline by more than the
    margin, overall or on any axis, on the items both were compared on?

    Every interval comes from the conversation bootstrap and is corrected for the number of
    scopes tested, so the answer holds with the study's confidence (ratings.level) across all
    of them. Exits 1 when the candidate is worse beyond the margin on some scope; 0 when it is
    not worse beyond it on every scope; 2 when the data cannot tell: an interval holds the
    margin, a system's standing is preliminary (ratings.preliminary), the two were never
    compared on the same items, or the judge audit flags a judge.
    """

    from heart import pipeline

    chosen = None if axes is None else [a.strip().upper() for a in axes.split(",") if a.strip()]
    with _study(study) as s:
        verdict = pipeline.gate(
            s, candidate, baseline, axes=chosen, margin=margin,
            judges=judges,  # type: ignore[arg-type]
        )  # fmt: skip
    _print_gate(verdict)
    if json_file is not None:
        _write_json(json_file, verdict.to_json(), "Verdict")
    raise typer.Exit(verdict.exit_code)


@app.command()
def plan(
    study: StudyOption = Path("."),
    half_width: Annotated[
        float | None,
        typer.Option(
            "--half-width",
            min=0,
            help="Target: every system's interval within ± this many Elo "
            "(in 80% of studies of the size named).",
        ),
    ] = None,
    gap: Annotated[
        float | None,
        typer.Option(
            "--gap",
            min=0,
            help="Target: 80% power to tell apart two systems this many Elo "
            "apart. With --half-width, the spacing of the assumed systems.",
        ),
    ] = None,
    systems: Annotated[
        int | None,
        typer.Option(
            "--systems",
            min=2,
            help="Plan from assumptions, not the study's verdicts: this many "
            "systems (default when the study has no verdicts: those of study.yaml).",
        ),
    ] = None,
    agreement: Annotated[
        float,
        typer.Option(
            "--agreement",
            min=0.5,
            max=1.0,
            help="Assumptions only: the share of pairs on "
            "which the LLM judges and people pick the same reply.",
        ),
    ] = 0.8,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Also write the plan's numbers to this file.")
    ] = None,
) -> None:
    """How big a study must be before paying for it: the items, LLM-judge verdicts and people's
    verdicts (with and without the judges' help) a target needs, their dollars and rater hours,
    and what the study already has.

    Simulated from the study's verdicts as a pilot (studies of each size tried are drawn by
    resampling its conversations, so verdicts stay clustered as they are), or, with no verdicts
    yet or with --systems, from assumptions. Give one target: --half-width W or --gap G.
    """

    from heart import pipeline
    from heart.report import plan_lines

    with _study(study) as s:  # with --half-width, a --gap spaces the assumed systems
        found = pipeline.plan(
            s, half_width=half_width, gap=None if half_width is not None else gap,
            systems=systems, agreement=agreement, spacing=gap if half_width is not None else None,
        )  # fmt: skip
    for line in plan_lines(found):
        say(line, soft_wrap=True)
    if json_file is not None:
        _write_json(json_file, found.to_json(), "Plan")


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
        say(f"note: {note}", soft_wrap=True)
    for probe in report.probes:
        if probe.answered:
            say(
                f"probe: {probe.provider} {probe.model} at {probe.endpoint} answered in "
                f"{probe.seconds:.1f} s ({', '.join(probe.users)})",
                soft_wrap=True,
            )
    if report.problems:
        n = len(report.problems)
        say(f"{n} problem{'s' * (n > 1)} in {report.study}:", style="bold red")
        for problem in report.problems:
            say(f"  {problem}", soft_wrap=True)
        return
    probed = f"; {len(report.probes)} probes answered" if report.probes else ""
    say(("All good", "green"), f": {'; '.join(report.checked)}{probed}.", soft_wrap=True)


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
    batch: BatchOption = False,
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
    with _study(study, batch=batch) as s:
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
        say(
            (f"heart run stopped after {done.stopped}: {why}.", "bold red"),
            f" Finish those calls with the command above; then `{_command('run', study)}` goes on.",
            soft_wrap=True,
        )
        raise typer.Exit(1)
    say(f"Done in {done.seconds:.0f} s.")


@app.command("export")
def export(
    out: Annotated[
        Path | None, typer.Argument(help="Folder to write the bundle into.", show_default=False)
    ] = None,
    study: StudyOption = Path("."),
    verdicts: Annotated[
        Path | None,
        typer.Option(
            "--verdicts",
            help="Write the verdicts table instead, one row per verdict, to this .csv, .jsonl "
            "or .parquet file (Parquet needs the parquet extra).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write the study as a bundle: JSON Lines per table, the study file, its provenance
    (provenance.json: heart's version and commit, prompts, models and endpoints, tokens and cost
    per stage; never a key), a sha256 manifest.

    People appear by pseudonymous ids only (raters with their exclusion reason); invite-token
    hashes and entry metadata stay in the study.

    With --verdicts FILE, write instead the flat table of verdicts: one row per valid verdict
    with its item, subset and problem type, both systems, the order shown, the judge with its
    source and family, winner and strength, every axis, the rationale, the rater's exclusion,
    whether the analyses count it, tokens, cost and time (the columns are listed in the docs).
    """
    if (out is None) == (verdicts is None):
        raise HeartError(
            "give a folder to write the bundle into, or --verdicts FILE for the verdicts table "
            "(one of the two)"
        )
    if verdicts is not None:
        from heart.verdicts import verdict_rows, verdicts_format, write_verdicts

        verdicts_format(verdicts)  # a wrong extension is refused before the study is read
        with _study(study, read_only=True) as s:
            rows = verdict_rows(s.store)
        write_verdicts(rows, verdicts)
        counted = sum(r.counted for r in rows)
        say(f"Wrote {len(rows)} verdicts ({counted} counted) to {verdicts}", soft_wrap=True)
        return
    from heart.pipeline import export

    assert out is not None
    with _study(study) as s:
        rows_written = export(s, out)
    say(
        f"Exported to {out}: " + ", ".join(f"{k} {v}" for k, v in rows_written.items()),
        soft_wrap=True,
    )


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A bundle folder, or a CSV/JSON Lines file.")],
    study: StudyOption = Path("."),
    table: Annotated[
        str | None,
        typer.Option(help="For a file: 'completions', 'judgments' or 'labels'."),
    ] = None,
) -> None:
    """Import a bundle (or completions/judgments from a file) into the study, all or nothing; a
    refused import leaves nothing behind.

    A bundle is data: its rows go into the study's own store. Into a folder without a study.yaml
    it makes the study, whose study.yaml is the bundle's without its store setting. The bundle's
    provenance is kept beside the study's own, never in its place.

    Rows follow the web app's rules (no control or bidirectional characters, nobody judging or
    labelling their own reply); a file of no rows is refused. The summary counts the new rows
    per table, the rows already stored and the rows the file repeats.
    """
    from heart.pipeline import import_into

    summary = import_into(study, path, table)
    say(f"Imported: {summary.describe()}")


@app.command()
def serve(
    study: StudyOption = Path("."),
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    seat_refresh: Annotated[
        float,
        typer.Option(
            min=0,
            help="Seconds between looks for items, pairs and replies stored while the server "
            "runs, to add their seats (0: look only when someone finds no work left or the "
            "admin page opens).",
        ),
    ] = 10.0,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Server processes sharing the port (more than 1 needs the store on "
            "PostgreSQL); up to 8 requests run at once over all of them.",
        ),
    ] = 1,
) -> None:
    """Run the web app where people write, judge and label (needs the web extra and a system
    of kind human in the study file, which people's replies belong to).

    Seats of work are added for every item, pair and reply at start, and for those stored
    later (a new system's replies and pairs, new items) while the server runs: no restart.
    The admin page says when seats were last added.

    Before any task people accept the consent page (its text: people.consent, else heart's
    own); before judging they read the instructions and answer a practice pair, never counted.

    The admin token comes from HEART_ADMIN_TOKEN, else the study's own: made and printed the
    first time, then kept hashed in the study's .heart-admin, so the link keeps working across
    restarts (delete the file for a new token). The session secret comes from HEART_SECRET,
    else from the study's .heart-secret (made on first use). With
    --workers N every process takes the same token and secret, so a session, form or admin
    cookie made by one holds in all; on several machines, give each the same HEART_SECRET and
    HEART_ADMIN_TOKEN. Each log line names the process that wrote it."""
    try:
        import uvicorn  # noqa: F401

        from heart.web._serve import prepare, run, serve_secrets
    except ImportError as exc:
        raise HeartError(
            f"the web app needs the web extra ({exc.name} is missing): "
            "pip install 'heart-bench[web]'"
        ) from None
    keys = serve_secrets(study)
    web_app = prepare(study, seat_refresh=seat_refresh, workers=workers, keys=keys)
    if keys.token_given:
        token = "<the token in HEART_ADMIN_TOKEN>"
    elif keys.token is None:
        token = (
            "<the token printed when this study was first served; it is kept only hashed, in "
            ".heart-admin: delete that file for a new one>"
        )
    else:
        token = keys.token
    say(f"admin: http://{host}:{port}/admin?token={token}", soft_wrap=True)
    run(study, web_app, host=host, port=port, seat_refresh=seat_refresh, workers=workers,
        keys=keys)  # fmt: skip


@raters_app.command("invite")
def raters_invite(
    n: Annotated[int, typer.Argument(help="How many invite links to make.")],
    study: StudyOption = Path("."),
    base_url: Annotated[
        str, typer.Option(help="Where people reach `heart serve`.")
    ] = "http://127.0.0.1:8000",
    note: Annotated[str, typer.Option(help="A note kept with these raters.")] = "",
    flow: Annotated[
        str | None,
        typer.Option(
            help="The work these raters are led through, in order, as write,judge (unset: "
            "the study's people.flow)."
        ),
    ] = None,
) -> None:
    """Make N raters and print one invite link each (shown once: only a hash is stored)."""
    from heart.people import flow_meta, invite

    if n < 1:
        raise HeartError(f"the number of invites must be at least 1, got {n}")
    try:
        flow_meta(flow)
    except ValueError as exc:
        raise HeartError(f"--flow: {exc}") from None
    with _study(study) as s:
        made = invite(s.store, n, note, flow)
    for _, token in made:
        say(f"{base_url.rstrip('/')}/invite/{token}", soft_wrap=True)


@raters_app.command("list")
def raters_list(study: StudyOption = Path(".")) -> None:
    """List raters: how they came in, tasks done, checks failed, verdicts counted; each one's
    quality measures (first shown won, seconds against the reading floor, longest run of one
    answer, agreement with the other raters' majority, gold and attention checks); their flags
    with reasons, and whether to approve, ask to return or keep them out, and why."""
    from heart.people import (
        KINDS,
        MIN_VERDICTS,
        QUALITY_COLUMNS,
        RATER_LEVEL,
        quality_cells,
        review_quality,
    )

    with _study(study) as s:
        people = review_quality(s.store, s.config.people)
    table = Table()
    for col in ("rater", "entry", *KINDS, "checks failed", "verdicts counted", "decision"):
        table.add_column(col, min_width=len("keep out") if col == "decision" else None)
    for q in people:
        table.add_row(
            q.rater, q.entry, *(str(q.tasks.get(k, 0)) for k in KINDS),
            f"{q.failed} of {q.checks}", str(q.counted), q.decision,
        )  # fmt: skip
    show(table)
    say(
        f"Quality per rater (no flag on fewer than {MIN_VERDICTS} verdicts; shares with "
        f"{100 * RATER_LEVEL:g}% intervals):"
    )
    for q in people:
        say(f"{q.rater}: {q.decision}: {q.decision_reason}")
        cells = zip(QUALITY_COLUMNS, quality_cells(q.measures), strict=True)
        say("  " + "; ".join(f"{name} {cell}" for name, cell in cells))
        for flag in q.flags:
            effect = "excludes" if flag.excludes else "shown only"
            say(f"  {flag.name} ({effect}): {flag.reason}")


@raters_app.command("reinstate")
def raters_reinstate(
    rater: Annotated[str, typer.Argument(help="The rater id, as `heart raters list` shows it.")],
    by: Annotated[str, typer.Option(help="Who reinstates the rater (kept with the record).")],
    study: StudyOption = Path("."),
) -> None:
    """Bring an excluded rater's verdicts back into the analyses: the flags that excluded them
    never exclude them again, and who did it and when is kept. Their pairs may then hold more
    verdicts than people.raters_per_pair."""
    from heart.people import reinstate

    with _study(study) as s:
        try:
            reason = reinstate(s.store, rater, by=by)
        except ValueError as exc:
            raise HeartError(str(exc)) from None
    say(f"Reinstated {rater} (was excluded: {reason}).", soft_wrap=True)


def _print_batches(lines: list[BatchLine], *, asked: bool) -> None:
    if not lines:
        say("No batch is open.")
        return
    table = Table()
    for col in ("batch", "stage", "provider", "model", "state", "answered", "failed",
                "submitted", "last seen"):  # fmt: skip
        table.add_column(col)
    for line in lines:
        b, now = line.batch, line.now
        state = b.state if now is None else f"{b.state} (provider: {now.state})"
        answered, failed = (b.succeeded, b.errored) if now is None else (now.succeeded,
                                                                         now.errored)  # fmt: skip
        table.add_row(b.id, b.stage, b.provider, b.model, state, f"{answered} of {b.total}",
                      str(failed), b.submitted_at[:19], b.updated_at[:19])  # fmt: skip
    show(table)
    for line in lines:
        if line.problem:
            say(f"{line.batch.id}: {line.problem}", soft_wrap=True)
    if not asked:
        say("Counts are as the last run saw them; --check asks the providers now.")


@batches_app.callback(invoke_without_command=True)
def batches(
    context: typer.Context,
    study: StudyOption = Path("."),
    check: Annotated[
        bool, typer.Option("--check", help="Ask each batch's provider for its counts now.")
    ] = False,
    everything: Annotated[bool, typer.Option("--all", help="List finished batches too.")] = False,
) -> None:
    """List the open provider batches: stage, model, state, requests answered and failed.

    A run waits on its batches and takes their results when they finish; a run stopped
    meanwhile picks them up when run again, never sending their calls twice."""
    if context.invoked_subcommand is not None:
        return
    from heart.batches import list_batches

    with _study(study) as s:
        lines = list_batches(s, check=check, everything=everything)
    _print_batches(lines, asked=check)


@batches_app.command("cancel")
def batches_cancel(
    ids: Annotated[
        list[str] | None, typer.Argument(help="The batches to cancel (default: every open one).")
    ] = None,
    study: StudyOption = Path("."),
) -> None:
    """Ask the providers to cancel open batches. The next run keeps what they answered
    before stopping and sends the rest again."""
    from heart.batches import cancel_batches

    with _study(study) as s:
        lines = cancel_batches(s, ids or [])
    _print_batches(lines, asked=True)
    asked = sum(1 for line in lines if line.now is not None)
    if asked:
        say(
            f"Asked to cancel {asked} {'batch' if asked == 1 else 'batches'}: the next run "
            "keeps what they answered before stopping and sends the rest again.",
            soft_wrap=True,
        )


def main() -> None:
    """Entry point: run the app, turning the project's own errors into a message and exit code 2."""
    try:
        app()
    except HeartError as exc:
        say(("error:", "bold red"), f" {exc}", soft_wrap=True)
        sys.exit(2)


__all__ = ["app", "main"]
