"""A study whose models are served by three local replicas, run as a user runs it: `heart
judge` with one replica killed mid-run, the dry run and the check showing every replica, and a
`heart generate` stopped by a kill and resumed."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from heart import pipeline
from heart.cli import app, progress_label
from heart.engine import Progress
from heart.store import CompletionRow
from heart.study import create_study, open_study
from heart.types import Status

from ..fakes.fault_server import FaultServer, RequestRecord
from ..fakes.judge_verdicts import verdict_reply
from ..helpers import _BASE_ENV, rewrite_study

N_ITEMS = 10


@pytest.fixture
def servers() -> Iterator[list[FaultServer]]:
    with (
        FaultServer(verdict_reply_or_text) as a,
        FaultServer(verdict_reply_or_text) as b,
        FaultServer(verdict_reply_or_text) as c,
    ):
        for server in (a, b, c):
            server.default_plan = "hang:0.02"
        yield [a, b, c]


def verdict_reply_or_text(body: dict[str, object]) -> str:
    """A verdict for a judge's request; for a system's, a short reply that tells the systems
    apart (each has its own max_tokens), so that no two pairs show the same replies."""
    if "response_format" in body:
        try:
            return verdict_reply(body)  # type: ignore[arg-type]
        except ValueError:  # heart check's probe, which shows no pair
            return '{"ok": true}'
    return f"That sounds hard ({body.get('max_tokens')} tokens at most). What happened next?"


def _study(root: Path, servers: list[FaultServer], items: int = N_ITEMS) -> Path:
    urls = ", ".join(f"'{s.openai_base_url}'" for s in servers)
    model = f"provider: openai, model: local, base_url: [{urls}]"
    create_study(root, demo=True)
    rewrite_study(
        root,
        [
            f"{{name: sys-{i}, kind: model, family: fam, model: {{{model}, max_tokens: {n}}}}}"
            for i, n in enumerate((100, 101))
        ]
        + ["{name: esconv-original, kind: dataset, family: dataset}"],
        [f"{{name: judge, family: judges, model: {{{model}}}}}"],
        "pairs: {design: all}\nengine: {providers: {openai: {concurrency: 1}}}\n",
        items=items,
    )
    return root


def _answered(server: FaultServer) -> list[RequestRecord]:
    return [r for r in server.requests if r.call_key is not None and r.status == 200]


def _port(server_url: str) -> str:
    return server_url.split(":")[2].removesuffix("/v1")


def test_heart_judge_with_a_replica_killed_mid_run_answers_every_pair_once(
    servers: list[FaultServer], tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", servers)
    urls = [s.openai_base_url for s in servers]
    with open_study(root) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        (stage,) = pipeline.dry_run(study, ("judge",)).stages
    # the dry run names the model by its first URL and lists every replica
    assert [(m.endpoint, m.replicas) for m in stage.models] == [(urls[0], tuple(urls))]
    before = Counter(r.call_key for s in servers for r in _answered(s))
    doomed = servers[2]
    start = len(_answered(doomed))

    def kill_after_three() -> None:
        while len(_answered(doomed)) < start + 3:
            time.sleep(0.002)
        doomed.default_plan = "hang"  # what it holds when it dies is never answered
        time.sleep(0.1)
        doomed.stop()

    killer = threading.Thread(target=kill_after_three)
    killer.start()
    result = CliRunner().invoke(app, ["judge", "--study", str(root)])
    killer.join()
    assert result.exit_code == 0, result.output
    verdicts = Counter(r.call_key for s in servers for r in _answered(s)) - before
    assert len(verdicts) == 3 * N_ITEMS and set(verdicts.values()) == {1}  # each pair once
    counts = [sum(1 for r in _answered(s) if r.call_key in verdicts) for s in servers]
    ports = [_port(url) for url in urls]
    line = next(x for x in result.output.splitlines() if "answered by replicas" in x)
    assert line.strip().startswith(
        f"answered by replicas: local: {counts[0]} on :{ports[0]}, {counts[1]} on :{ports[1]}, "
        f"{counts[2]} on :{ports[2]} (rested "
    )
    assert counts[2] >= 3 and sum(counts) == 3 * N_ITEMS


def test_the_progress_line_shows_the_calls_each_replica_answered(
    servers: list[FaultServer], tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", servers, items=4)
    reports: list[Progress] = []
    with open_study(root) as study:
        pipeline.build_items(study)
        pipeline.generate(study, reports.append)
    counts = [len(_answered(s)) for s in servers]
    assert sum(counts) == 2 * 4
    ports = [_port(s.openai_base_url) for s in servers]
    assert progress_label(reports[-1]) == (
        f"generate · local: {counts[0]} on :{ports[0]}, {counts[1]} on :{ports[1]}, "
        f"{counts[2]} on :{ports[2]}"
    )


def test_heart_check_probes_every_replica(servers: list[FaultServer], tmp_path: Path) -> None:
    root = _study(tmp_path / "s", servers, items=2)
    result = CliRunner().invoke(app, ["check", "--probe", "--study", str(root)])
    assert result.exit_code == 0, result.output
    assert "1 model at 3 endpoints" in result.output
    for server in servers:  # each replica got the judge's probe and the systems'
        assert len(_answered(server)) >= 2


def _stored(root: Path) -> int:
    """The model replies stored in the study so far."""
    with open_study(root, read_only=True) as study, study.store.session() as s:
        query = select(func.count()).select_from(CompletionRow)
        stored = s.scalar(
            query.where(
                CompletionRow.status == Status.OK, CompletionRow.system != "esconv-original"
            )
        )
    return int(stored or 0)


def test_a_generate_killed_mid_run_resumes_with_only_the_calls_not_stored(
    servers: list[FaultServer], tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", servers, items=12)
    for server in servers:
        server.default_plan = "hang:0.05"
    with open_study(root) as study:
        pipeline.build_items(study)
    command = [sys.executable, "-m", "heart", "generate", "--study", str(root)]
    process = subprocess.Popen(
        command, env={**_BASE_ENV, "HOME": str(Path.home())}, stdout=subprocess.DEVNULL
    )
    try:  # stopped once some replies are stored (an answer is stored a moment after it came)
        while _stored(root) == 0:
            assert process.poll() is None, "heart generate ended before it was stopped"
            time.sleep(0.005)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    stored = _stored(root)
    assert 0 < stored < 2 * 12
    asked = sum(len(_answered(s)) for s in servers)
    with open_study(root) as study:
        again = pipeline.generate(study)
    assert again.model_calls.complete and again.model_calls.calls == 2 * 12 - stored
    # the resumed run asked for exactly the replies the stopped one had not stored
    assert sum(len(_answered(s)) for s in servers) - asked == 2 * 12 - stored
