"""Web load: 200 simulated people against a real `heart serve` (uvicorn, in a subprocess), once
over SQLite and once over PostgreSQL, then the assignment invariants checked in the store.

Each person opens an invite link (a lean HTTP client of their own, bench/_browser.py, keeps
the cookies and one connection, like a browser) and goes where their session leads (the
study's flow: writing, then judging), following its redirects until the finish page: GET the
page, read the form's task handle and CSRF token, pause as if reading, POST the answer, follow
the 303; first each one accepts the consent page and answers the practice pair.
Attentive people pass the gold and attention checks; a careless few (5%, --careless) answer at
random, and any of them whose answers earn an excluding flag (two failed attention checks, by
default) is excluded and gets no more work, and the pairs they judged go back to the pool.
People arrive spread over 10 s and pause 5 s on a page on average: many times faster than
real people, who take half a minute or more per pair.
--think 0 --arrive 0 sends each request as soon as the last is answered, which measures
saturation rather than latency. The study has 40 items with three model replies each (120
pairs): 120 writing seats (3 per item) and 675 judging seats (5 per pair and per gold or
attention check), so every seat gets filled. The run is bounded by an overall timeout and a cap
on requests per person.

    .venv/bin/python bench/web_load.py [--people 200] [--items 40] [--think 5] [--arrive 10]
        [--workers 2] [--postgres-url postgresql+psycopg://heart:heart@127.0.0.1:5432/heart_test]

PostgreSQL comes from --postgres-url or HEART_TEST_POSTGRES_URL; a fresh database is made for
the run and dropped after it (skipped, with a message, when neither is set or no database can
be made). --workers N serves PostgreSQL with `heart serve --workers N` (SQLite takes one
process); one process is pinned to a core of its own and the simulated people to the others,
several are left to the system. Prints p50 and p95 request latency per route and backend, the
CPU each side spent per request (the server's over all its processes), the invariants, and last
the p95 over PostgreSQL (over SQLite when PostgreSQL is skipped); the target is under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.exc import OperationalError, ProgrammingError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(ROOT))

from _browser import Answer, Browser, Closed  # noqa: E402
from tests.helpers import attentive_choice  # noqa: E402
from tests.servers import free_port, stop  # noqa: E402

from heart.config import PairsSpec  # noqa: E402
from heart.judging import build_pairs  # noqa: E402
from heart.people import invite  # noqa: E402
from heart.store import (  # noqa: E402
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgmentRow,
    RaterRow,
    Store,
    TaskRow,
    open_store,
)
from heart.study import open_study  # noqa: E402

TARGET_MS = 100.0
THINK = 5.0
"""Mean seconds a simulated person spends on a page before sending it (each pause is drawn
between half and one and a half times this). Real people take 30 seconds or more to judge a
pair and longer to write a reply, so this is many times faster than a real crowd; --think 0
sends every request as soon as the last one is answered, which measures saturation."""
ARRIVE = 10.0
"""People open their links spread evenly over this many seconds."""
CARELESS = 0.05
"""The share of people who answer at random, checks included."""
MODELS = ("model-a", "model-b", "model-c")
CHOICES = ("A++", "A+", "=", "B+", "B++")
WORK_ROUTES = ("/write", "/judge")
"""The routes whose answers are work the store keeps (consent and practice are not)."""
FIELD = re.compile(r'name="(task|csrf)" value="([^"]*)"')


@dataclass
class Person:
    """One simulated person: their rater id, invite token, and what happened to them."""

    rater: str
    token: str
    submitted: Counter[str] = field(default_factory=Counter)  # kind -> 303s after a POST
    requests: int = 0
    finished: bool = False
    arrives: float = 0.0  # seconds after the start
    careless: bool = False


@dataclass
class Run:
    """Everything one backend's run measured."""

    backend: str
    workers: int = 1
    latencies: dict[str, list[float]] = field(default_factory=dict)  # "GET /write" -> ms
    statuses: Counter[str] = field(default_factory=Counter)  # "POST /judge 303" -> n
    errors: list[str] = field(default_factory=list)
    resent: int = 0  # requests sent again after the server closed an idle connection
    seconds: float = 0.0
    server_cpu: float = float("nan")  # seconds of CPU the server used during the crowd
    client_cpu: float = float("nan")  # and the simulated people (this process)
    people: list[Person] = field(default_factory=list)
    checks: list[tuple[str, bool, str]] = field(default_factory=list)  # name, ok, detail

    @property
    def name(self) -> str:
        return self.backend + (f" ({self.workers} processes)" if self.workers > 1 else "")

    def all_ms(self) -> list[float]:
        return [ms for values in self.latencies.values() for ms in values]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def build_study(root: Path, url: str, items: int, people: int) -> list[Person]:
    """The study folder and its store: items, three model replies each, all pairs, and one
    invite per person (made directly in the store, as `heart raters invite` does)."""
    config = {
        "name": "web-load",
        "seed": 11,
        "store": url,
        "systems": [
            {"name": "human", "kind": "human", "family": "human"},
            *(
                {"name": m, "kind": "model", "family": m,
                 "model": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": m}}
                for m in MODELS
            ),
        ],
    }  # fmt: skip
    root.mkdir(parents=True)
    (root / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    study = open_study(root)  # migrates the store and writes the systems
    try:
        with study.store.session() as s:
            s.add(
                ConversationRow(id="c1", problem_type="job crisis", emotion_type="anxiety",
                                turns=[])
            )  # fmt: skip
            s.flush()
            for i in range(items):
                s.add(
                    ItemRow(
                        id=f"i{i:03d}", content_hash=f"h{i}", subset="regular",
                        conversation_id="c1", turn_index=5, problem_type="job crisis",
                        emotion_type="anxiety", reference=f"That sounds exhausting ({i}).",
                        context=[
                            {"role": "seeker", "text": f"I lost my job last week ({i})."},
                            {"role": "supporter", "text": "I'm sorry. How are you holding up?"},
                            {"role": "seeker", "text": "Not well. I can't sleep and I keep "
                             "going over what I could have done differently."},
                        ],
                    )
                )  # fmt: skip
            s.flush()
            for i in range(items):
                for m in MODELS:
                    s.add(
                        CompletionRow(
                            id=f"cp-{i:03d}-{m}", item_id=f"i{i:03d}", system=m, status="ok",
                            text=f"{m} says: losing a job is a shock; it makes sense ({i}).",
                            created_at="2026-01-01T00:00:00.000+00:00",
                        )
                    )  # fmt: skip
        build_pairs(study.store, PairsSpec(), seed=11)
        made = invite(study.store, people, note="web load")
    finally:
        study.close()
    return [Person(rater, token) for rater, token in made]


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (state first); none when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it (a server's workers), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, queue = [], [pid]
    while queue:
        tree.append(queue.pop())
        queue.extend(parents.get(tree[-1], []))
    return tree


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` and its children that run now (NaN where
    /proc is not there)."""
    if not Path(f"/proc/{pid}/stat").exists():
        return float("nan")
    ticks = sum(int(f[11]) + int(f[12]) for p in process_tree(pid) if (f := _stat(p)))
    return ticks / os.sysconf("SC_CLK_TCK")


def pin_cores(server_pid: int) -> None:
    """Server on one core, this process on the others, so they do not preempt each other."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cores) >= 2:
        os.sched_setaffinity(server_pid, {cores[0]})
        os.sched_setaffinity(0, set(cores[1:]))


@contextmanager
def heart_serve(root: Path, log: Path, workers: int) -> Iterator[tuple[str, int]]:
    """`heart serve` over the study, in ``workers`` processes, until it answers; yields its
    base URL and process id, and stops it after."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEART_")}
    env |= {"PYTHONPATH": str(SRC), "HEART_ADMIN_TOKEN": secrets.token_urlsafe(24)}
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "heart", "serve", "--study", str(root), "--port", str(port),
             "--workers", str(workers)],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        if workers == 1:
            pin_cores(server.pid)
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"heart serve did not start:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"{base}/", timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        yield base, server.pid
    finally:
        stop(server)


class Capped(Exception):
    """A person reached the cap on requests."""


async def act(
    person: Person, base: str, run: Run, max_requests: int, think: float, rng: random.Random
) -> None:
    """One person's visit: the invite link, then writing, then judging, until nothing is left."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    async with Browser(host, int(port)) as client:

        async def call(method: str, path: str, route: str, **form: str | list[str]) -> Answer:
            if person.requests >= max_requests:
                raise Capped
            person.requests += 1
            start = time.perf_counter()
            for attempt in (1, 2):
                try:
                    if method == "GET":
                        response = await client.get(path)
                    else:
                        response = await client.post(path, form)
                    break
                except Closed:
                    if attempt == 2:
                        raise
                    run.resent += 1  # as a browser does: once more, on a new connection
            run.latencies.setdefault(f"{method} {route}", []).append(
                (time.perf_counter() - start) * 1000
            )
            run.statuses[f"{method} {route} {response.status}"] += 1
            if method == "POST" and response.status == 303 and route in WORK_ROUTES:
                person.submitted[route.strip("/")] += 1
            return response

        await asyncio.sleep(person.arrives)
        await call("GET", f"/invite/{person.token}", "/invite/{token}")
        await call("GET", "/", "/")
        first_steps = (
            ("consent", {"agree": "yes"}),
            ("practice", {"choice": "B+", "rationale": "B listens."}),
        )
        for step, said in first_steps:
            page = (await call("GET", f"/{step}", f"/{step}")).text
            await call("POST", f"/{step}", f"/{step}", **dict(FIELD.findall(page)), **said)
        # where the session leads, redirects followed as a browser does: writing, then judging,
        # then the finish page
        where = (await call("GET", "/next", "/next")).location
        while where in WORK_ROUTES:
            kind = where.strip("/")
            shown = await call("GET", where, where)
            if shown.status == 303:  # no more of this kind for them: on to the next step
                where = shown.location
                continue
            page = shown.text
            fields = dict(FIELD.findall(page))
            if "task" not in fields or "csrf" not in fields:
                run.errors.append(f"{person.rater}: GET /{kind} had no form")
                return
            if think:
                await asyncio.sleep(rng.uniform(0.5, 1.5) * think)
            if kind == "write":
                answer: dict[str, str | list[str]] = {
                    "text": f"That sounds so hard. I'm glad you told me ({rng.random():.4f})."
                }
            else:
                answer = {
                    "choice": (None if person.careless else attentive_choice(page))
                    or rng.choice(CHOICES),
                    "rationale": "The first one listens.",
                    "checklist": ["length", "format", "position"],
                }  # fmt: skip
            sent = await call("POST", f"/{kind}", f"/{kind}", **fields, **answer)
            where = sent.location if sent.status == 303 else where
        person.finished = where == "/done"


async def crowd(people: list[Person], base: str, run: Run, args: argparse.Namespace) -> None:
    rng = random.Random(7)
    seeds = [rng.randrange(2**32) for _ in people]
    for person in people:
        person.arrives = rng.uniform(0, args.arrive)
        person.careless = rng.random() < args.careless

    async def one(person: Person, seed: int) -> None:
        try:
            await act(person, base, run, args.max_requests, args.think, random.Random(seed))
        except Capped:
            run.errors.append(f"{person.rater}: reached {args.max_requests} requests")
        except (Closed, OSError) as exc:
            run.errors.append(f"{person.rater}: {type(exc).__name__}: {exc}")

    tasks = [asyncio.create_task(one(p, s)) for p, s in zip(people, seeds, strict=True)]
    _, pending = await asyncio.wait(tasks, timeout=args.timeout)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
        run.errors.append(f"{len(pending)} people were still busy after {args.timeout:.0f} s")


def _spread(per_target: dict[str, list[str]]) -> str:
    """How many distinct people per target, as 'n people: k targets'."""
    counts = Counter(len(set(people)) for people in per_target.values())
    return ", ".join(f"{n} people: {k}" for n, k in sorted(counts.items())) or "none"


def verify(store: Store, run: Run) -> None:
    """The assignment invariants, read from the store after the run."""
    with store.session() as s:
        seats = s.execute(
            select(TaskRow.kind, TaskRow.target, TaskRow.check, TaskRow.rater_id, TaskRow.done)
        ).all()
        completions = s.execute(
            select(CompletionRow.item_id, CompletionRow.contributor).where(
                CompletionRow.system == "human"
            )
        ).all()
        judgments = s.execute(select(JudgmentRow.pair_id, JudgmentRow.judge)).all()
        items = s.scalar(select(func.count()).select_from(ItemRow)) or 0
        excluded = set(s.scalars(select(RaterRow.id).where(RaterRow.excluded_reason.is_not(None))))
    done = [row for row in seats if row.done]
    writers: dict[str, list[str]] = {}
    raters: dict[str, list[str]] = {}
    for row in done:
        (writers if row.kind == "write" else raters).setdefault(row.target, []).append(
            str(row.rater_id)
        )
    held = Counter((row.kind, row.target, row.rater_id) for row in seats if row.rater_id)
    repeats = (
        sum(n > 1 for n in held.values())
        + sum(n > 1 for n in Counter(completions).values())
        + sum(n > 1 for n in Counter(judgments).values())
    )
    posted = Counter({(p.rater, kind): n for p in run.people for kind, n in p.submitted.items()})
    # what is stored for each person: replies, verdicts, and checks (which store no verdict)
    stored = Counter(
        [(c.contributor, "write") for c in completions]
        + [(j.judge, "judge") for j in judgments]
        + [(str(row.rater_id), "judge") for row in done if row.check]
    )
    write_303 = sum(n for (_, kind), n in posted.items() if kind == "write")
    judge_303 = sum(n for (_, kind), n in posted.items() if kind == "judge")
    checks = sum(1 for row in done if row.check)
    careless = {p.rater for p in run.people if p.careless}
    counted = {row.rater_id for row in done if row.kind == "judge" and not row.check}
    left_out = sum(1 for j in judgments if j.judge in excluded)
    unexpected = {k: n for k, n in run.statuses.items() if not k.endswith((" 200", " 303"))}
    run.checks = [
        ("every seat filled", len(done) == len(seats), f"{len(done)} of {len(seats)} done"),
        ("every context has exactly 3 writers",
         len(writers) == items and all(len(set(w)) == 3 for w in writers.values()),
         f"{len(writers)} contexts; {_spread(writers)}"),
        ("every pair and check has exactly 5 raters",
         all(len(set(r)) == 5 for r in raters.values()),
         f"{len(raters)} targets; {_spread(raters)}"),
        ("nobody twice on one target", repeats == 0, f"{repeats} repeats"),
        ("no submission lost",
         posted == stored and write_303 == len(completions)
         and judge_303 == len(judgments) + checks,
         f"303s after a POST: write {write_303} (completions stored {len(completions)}), judge "
         f"{judge_303} (judgments stored {len(judgments)} + checks {checks}); per person "
         f"{'equal' if posted == stored else 'DIFFERENT'}"),
        ("only careless people excluded, none of them on a pair's count",
         excluded <= careless and not excluded & counted,
         f"{len(excluded)} of {len(careless)} careless people excluded; their {left_out} "
         "verdicts kept in the store, their pairs judged again by others"),
        ("every answer 200 or 303, no client error", not unexpected and not run.errors,
         f"{unexpected or 'no other status'}; {len(run.errors)} errors, "
         f"{run.resent} requests sent again after an idle connection was closed"),
    ]  # fmt: skip


def run_backend(
    backend: str, url: str, folder: Path, args: argparse.Namespace, workers: int = 1
) -> Run:
    root = folder / backend
    people = build_study(root, url, args.items, args.people)
    run = Run(backend=backend, workers=workers, people=people)
    with heart_serve(root, folder / f"{backend}-serve.log", workers) as (base, pid):
        start, cpu, own = time.perf_counter(), cpu_seconds(pid), time.process_time()
        asyncio.run(crowd(people, base, run, args))
        run.seconds = time.perf_counter() - start
        run.server_cpu = cpu_seconds(pid) - cpu
        run.client_cpu = time.process_time() - own
    store = open_store(url)
    try:
        verify(store, run)
    finally:
        store.close()
    return run


class Unavailable(Exception):
    """The PostgreSQL server cannot be reached or will not make a database."""


@contextmanager
def fresh_postgres(base_url: str) -> Iterator[str]:
    """A new database on the server of ``base_url``, dropped afterwards."""
    name = f"heart_load_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base_url, isolation_level="AUTOCOMMIT")
    try:
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        except (OperationalError, ProgrammingError) as exc:
            raise Unavailable(str(exc.orig).strip()) from None
        try:
            yield base_url.rsplit("/", 1)[0] + f"/{name}"
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def report(run: Run) -> None:
    ms = run.all_ms()
    n = len(ms)
    print(f"{run.name}: {n} requests in {run.seconds:.1f} s ({n / run.seconds:.0f} req/s), "
          f"{sum(p.finished for p in run.people)} of {len(run.people)} people finished; "
          f"CPU per request: server {run.server_cpu / n * 1000:.1f} ms, "
          f"clients {run.client_cpu / n * 1000:.1f} ms")  # fmt: skip
    for route in sorted(run.latencies):
        values = run.latencies[route]
        print(f"  {route:<22} {len(values):>5}  p50 {percentile(values, 50):7.1f} ms  "
              f"p95 {percentile(values, 95):7.1f} ms  max {max(values):7.1f} ms")  # fmt: skip
    print(f"  {'all requests':<22} {n:>5}  p50 {percentile(ms, 50):7.1f} ms  "
          f"p95 {percentile(ms, 95):7.1f} ms  mean {statistics.fmean(ms):.1f} ms")  # fmt: skip
    for name, ok, detail in run.checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: {detail}")
    for error in run.errors[:5]:
        print(f"  error: {error}")
    if len(run.errors) > 5:
        print(f"  ... and {len(run.errors) - 5} more errors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=200)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--think", type=float, default=THINK, help="mean seconds on a page")
    parser.add_argument("--arrive", type=float, default=ARRIVE, help="arrivals over seconds")
    parser.add_argument("--careless", type=float, default=CARELESS, help="share at random")
    parser.add_argument("--max-requests", type=int, default=200, help="cap per person")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per backend")
    parser.add_argument("--postgres-url", default=os.environ.get("HEART_TEST_POSTGRES_URL"))
    parser.add_argument(
        "--workers", type=int, default=1, help="server processes on PostgreSQL (SQLite: 1)"
    )
    args = parser.parse_args()
    print(f"{args.people} people, {args.items} items; they arrive over {args.arrive:.0f} s and "
          f"spend {args.think:.1f} s on a page on average")  # fmt: skip
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs.append(run_backend("SQLite", f"sqlite:///{folder / 'heart.db'}", folder, args))
        report(runs[-1])
        if not args.postgres_url:
            print("PostgreSQL: skipped (give --postgres-url or set HEART_TEST_POSTGRES_URL)")
        else:
            try:
                with fresh_postgres(args.postgres_url) as url:
                    runs.append(run_backend("PostgreSQL", url, folder, args, args.workers))
                report(runs[-1])
            except Unavailable as exc:
                print(f"PostgreSQL: skipped (no database could be made: {exc})")
    for run in runs:
        ms = run.all_ms()
        print(f"{run.name}: p50 {percentile(ms, 50):.1f} ms, p95 {percentile(ms, 95):.1f} ms "
              f"over {len(ms)} requests")  # fmt: skip
    ok = all(ok for run in runs for _, ok, _ in run.checks)
    print(f"invariants: {'all hold' if ok else 'FAILED'} on {', '.join(r.name for r in runs)}")
    last = runs[-1]
    p95 = percentile(last.all_ms(), 95)
    print(f"{p95:.1f} ms p95 on {last.name} (target < {TARGET_MS:.0f} ms)")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
