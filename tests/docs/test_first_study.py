"""The README's *Your first study*, run as written: its study file and its commands are read out
of the README and run in order against local OpenAI- and Anthropic-protocol servers, with
headless Chromium as the people who write and judge in `heart serve`.

What stands in for the reader's world, and nothing else: the hosted APIs are a local server
reached through the SDKs' own OPENAI_BASE_URL and ANTHROPIC_BASE_URL, the reader's own model
server (the study file's localhost:8000) is a second one, the reader's ESConv copy is the demo
corpus, and the public address and port of the web app are a free local port."""

from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import heart
from heart.demo import __file__ as demo_init

from ..fakes.fault_server import FaultServer, last_user_text, strip_markers
from ..helpers import CHROMIUM, attentive_choice, require_chromium
from ..servers import free_port, stop
from .markdown import ROOT, Block, blocks, section

README = (ROOT / "README.md").read_text(encoding="utf-8")
WALKTHROUGH = blocks(section(README, "Your first study"))
(PROLIFIC,) = [b.text.strip() for b in WALKTHROUGH if b.info == "text" and "/prolific?" in b.text]
"""The study URL the walkthrough gives Prolific."""
OWN_SERVER = "http://localhost:8000/v1"  # the reader's own OpenAI-compatible server
DEMO_CORPUS = Path(demo_init).parent / "esconv_demo.jsonl"
SRC = str(Path(heart.__file__).resolve().parents[1])
OUTPUT = ROOT / "test-output"
RATER_TASKS = 12  # comparisons the invited rater makes once the people's replies are paired
CHOICES = ["A+", "B++", "A++", "B+", "="]  # a rater's answers in turn: no lean to either side


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


def _reply(body: dict[str, Any]) -> str:
    """A judge's verdict, which picks the reply that sorts first whichever way round it is
    shown, or a model's reply that differs by model and context."""
    text = last_user_text(body)
    shown = re.search(r"Reply A: (.*)", text), re.search(r"Reply B: (.*)", text)
    if shown[0] and shown[1]:
        winner = "A" if shown[0][1] <= shown[1][1] else "B"
        return json.dumps({"winner": winner, "strength": 2,
                           "axes": {k: f"{winner}2" for k in "HEART"},
                           "rationale": f"Reply {winner} names the feeling."})  # fmt: skip
    opening = {"claude-haiku-4-5": "That sounds so hard."}.get(body["model"], "I hear you.")
    return f"{opening} {' '.join(strip_markers(text).split()[:8])}"


def test_the_first_study_runs_as_the_readme_says(tmp_path: Path) -> None:
    with (
        FaultServer(reply_fn=_reply) as hosted,
        FaultServer(reply_fn=_reply) as own,
        _Walkthrough(tmp_path, hosted, own) as walk,
    ):
        for block in WALKTHROUGH:
            walk.follow(block)
    walk.assert_the_study_ran()


@dataclass
class _Walkthrough:
    """The reader, doing what each block of the walkthrough says."""

    cwd: Path
    hosted: FaultServer
    own: FaultServer
    port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)
    study: Path | None = None
    config: dict[str, Any] = field(default_factory=dict)
    links: list[str] = field(default_factory=list)
    serves: int = 0
    last: str = ""  # the output of the last command, for a text block showing it
    done: list[str] = field(default_factory=list)
    code_seen: str | None = None
    written: int = 0  # replies the invited writer wrote
    compared: int = 0  # comparisons the Prolific participant made

    def __post_init__(self) -> None:
        self.env = {
            "PATH": "/usr/bin:/bin", "HOME": str(self.cwd), "COLUMNS": "400",
            "PYTHONPATH": SRC, "OPENAI_BASE_URL": self.hosted.openai_base_url,
            "ANTHROPIC_BASE_URL": self.hosted.anthropic_base_url,
        }  # fmt: skip

    def __enter__(self) -> _Walkthrough:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self.browser = self._playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"]
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.browser.close()
        self._playwright.stop()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- the blocks ---------------------------------------------------------------------

    def follow(self, block: Block) -> None:
        if block.info == "sh":
            for line in block.text.splitlines():
                if line.strip():
                    self.run(line)
        elif block.info == "yaml":
            self.write_study_file(block.text)
        elif block.info == "text" and block.text.strip() == PROLIFIC:
            pass  # read once, above: Prolific opens it when people come in
        elif block.info == "text":
            _assert_shows(block.text, self.last)
        else:
            raise AssertionError(f"the walkthrough has a {block.info!r} block the test cannot run")

    def write_study_file(self, text: str) -> None:
        first = text.splitlines()[0]
        assert first.startswith("# "), "the study file's first line names where it goes"
        path = self.cwd / first[2:].strip()
        assert OWN_SERVER in text, f"the study file's own server is not at {OWN_SERVER}"
        path.write_text(text.replace(OWN_SERVER, self.own.openai_base_url), encoding="utf-8")
        self.study, self.config = path.parent, yaml.safe_load(text)
        corpus = self.study / self.config["items"]["esconv"]
        assert corpus.is_dir(), "the walkthrough made the corpus folder before the study file"
        shutil.copy(DEMO_CORPUS, corpus / "train.json")  # the reader's copy of ESConv

    def run(self, line: str) -> None:
        words = shlex.split(line, comments=True)
        match words:
            case ["pip", "install", spec]:
                _assert_extras_exist(spec)
            case ["mkdir", "-p", folder]:
                (self.cwd / folder).mkdir(parents=True)
            case ["export", assignment]:
                name, _, value = assignment.partition("=")
                assert name.endswith("_API_KEY") and value, assignment
                self.env[name] = value
            case ["heart", "raters", "invite", *_]:
                made = self.heart(_swap(words[1:], "--base-url", self.base)).split()
                self.links += [link for link in made if link.startswith(f"{self.base}/invite/")]
            case ["heart", "serve", *_]:
                self.serve(_swap(_swap(words[1:], "--port", str(self.port)), "--host", "127.0.0.1"))
            case ["heart", *args]:
                self.heart(args)
            case _:
                raise AssertionError(f"the walkthrough runs {line!r}, which the test cannot run")
        self.done.append(line)

    def heart(self, args: list[str]) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "heart", *args], cwd=self.cwd, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
        )  # fmt: skip
        self.last = result.stdout
        assert result.returncode == 0, (
            f"heart {shlex.join(args)} exited {result.returncode}:\n{result.stdout}"
        )
        return result.stdout

    # --- the people phase -------------------------------------------------------------------

    def serve(self, args: list[str]) -> None:
        self.serves += 1
        with _serving(args, self.cwd, self.env, self.cwd / f"serve-{self.serves}.log"):
            if self.serves == 1:  # the first people write, and a Prolific participant compares
                self._as(self.links[0], self.write_every_context)
                self._as(self._prolific_link(), self.compare_until_done)
            else:  # the replies people wrote are now paired: an invited rater compares
                self._as(self.links[1], lambda page: self.compare(page, RATER_TASKS))

    def _prolific_link(self) -> str:
        ids = {"PROLIFIC_PID": "5f0a1b2c3d4e5f6a7b8c9d0e", "SESSION_ID": "s-first-study",
               "STUDY_ID": self.config["people"]["prolific_study"]}  # fmt: skip
        link = PROLIFIC.replace("https://heart.example.org", self.base)
        for name, value in ids.items():
            link = link.replace(f"{{{{%{name}%}}}}", value)
        assert "{{" not in link, link
        return link

    def _as(self, link: str, work: Callable[[Any], None]) -> None:
        context = self.browser.new_context(viewport={"width": 1000, "height": 800})
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(link)
        assert page.url == f"{self.base}/", page.url
        work(page)
        context.close()
        assert not problems, problems

    @staticmethod
    def _get_ready(page: Any) -> None:
        """The steps before the first task: the consent page, and before comparing the
        instructions and the practice pair."""
        if "/consent" in page.url:
            with page.expect_navigation():
                page.click("#consent-form button[type=submit]")
        if page.url.endswith("/instructions"):
            page.click("#next-step")
            page.check("input[name=choice][value='B++']")
            page.fill("#rationale", "B stays with the guilt.")
            with page.expect_navigation():
                page.click("#task-form button[type=submit]")
            with page.expect_navigation():
                page.click("#start")

    def write_every_context(self, page: Any) -> None:
        page.click("#start-here")
        self._get_ready(page)
        written = 0
        while page.locator("#task-form").count():
            words = page.inner_text("#context").split()[-4:]
            page.fill("#text", f"I'm so sorry, that sounds heavy: {' '.join(words)}")
            with page.expect_navigation():
                page.click("#task-form button[type=submit]")
            written += 1
        OUTPUT.mkdir(exist_ok=True)
        page.screenshot(path=str(OUTPUT / "first-study-writer-done.png"))
        self.written = written

    def compare(self, page: Any, most: int | None = None) -> int:
        page.click("#start-here")
        self._get_ready(page)
        answered = 0
        while page.locator("#task-form").count() and answered != most:
            choice = attentive_choice(page.content()) or CHOICES[answered % len(CHOICES)]
            page.check(f"input[name=choice][value='{choice}']")
            page.fill("#rationale", "The better one stays with what the seeker said.")
            for key in ("length", "format", "position"):
                page.check(f"input[name=checklist][value={key}]")
            with page.expect_navigation():
                page.click("#task-form button[type=submit]")
            answered += 1
        return answered

    def compare_until_done(self, page: Any) -> None:
        self.compared = self.compare(page)
        OUTPUT.mkdir(exist_ok=True)
        page.screenshot(path=str(OUTPUT / "first-study-prolific-done.png"))
        self.code_seen = page.inner_text("#completion-code")

    # --- what the reader ends with ----------------------------------------------------------

    def assert_the_study_ran(self) -> None:
        assert self.study is not None and self.serves == 2
        assert self.done[-1].startswith("heart ")
        people = self.config["people"]
        assert self.code_seen == people["completion_code"]
        assert self.compared == people["tasks_per_person"]
        items = self.config["items"]
        (self.study / "report" / "index.html").read_text(encoding="utf-8")
        with (self.study / "report" / "leaderboard.csv").open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        boards = {(row["board"], row["system"]) for row in rows}
        systems = {s["name"] for s in self.config["systems"]}
        # the replies people wrote were judged too, and the best of them per context is shown
        assert {s for b, s in boards if b == "llm-all"} == systems | {"Best human"}
        assert {b for b, _ in boards} >= {"llm-all", "human-all", "all-all"}
        assert 0 < self.written <= items["regular"]
        sections = [m["model"] for m in (*self.config["systems"], *self.config["judges"])
                    if "model" in m]  # fmt: skip
        models = {"own": {m["model"] for m in sections if m.get("base_url")},
                  "hosted": {m["model"] for m in sections if not m.get("base_url")}}  # fmt: skip
        called = {name: {r.body["model"] for r in server.requests if r.status == 200}
                  for name, server in (("own", self.own), ("hosted", self.hosted))}  # fmt: skip
        assert called == models
        for r in self.hosted.requests:  # each key, from the environment, went to its API only
            wanted = self.env["ANTHROPIC_API_KEY" if "/messages" in r.path else "OPENAI_API_KEY"]
            sent = r.headers.get("x-api-key") or r.headers.get("authorization", "")
            assert sent.removeprefix("Bearer ") == wanted


def _swap(args: list[str], option: str, value: str) -> list[str]:
    """``args`` with the value of ``option`` replaced (the option must be there)."""
    at = args.index(option)
    return [*args[: at + 1], value, *args[at + 2 :]]


def _assert_shows(shown: str, output: str) -> None:
    """Every line the README shows is a line of the output, in order; ``...`` stands for any
    text."""
    lines = [line.strip() for line in output.splitlines()]
    at = 0
    for want in shown.strip().splitlines():
        pattern = re.compile(".*?".join(map(re.escape, want.strip().split("..."))))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        assert at < len(lines), f"the README shows {want!r}; the command printed:\n{output}"
        at += 1


def _assert_extras_exist(spec: str) -> None:
    match = re.fullmatch(r"heart-bench\[([a-z,]+)\]", spec)
    assert match, spec
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert set(match[1].split(",")) <= set(extras), spec


@contextmanager
def _serving(args: list[str], cwd: Path, env: dict[str, str], log: Path) -> Iterator[None]:
    """``heart ARGS`` (a `heart serve`) in the background until it answers, then stopped."""
    port = args[args.index("--port") + 1]
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "heart", *args], cwd=cwd, env=env,
                                  stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, f"heart serve exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"heart serve did not start:\n{log.read_text()}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        yield
    finally:
        stop(server)


def test_the_extras_table_lists_every_extra() -> None:
    table = section(README, "Which extra installs what")
    listed = re.findall(r"^\| `([a-z]+)` \|", table, re.M)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert sorted(listed) == sorted(extras)


def test_a_shown_output_must_be_printed_in_order() -> None:
    printed = "note: store x\nAll good: 4 models at 3 endpoints; 4 probes answered.\n"
    _assert_shows("note: ...\nAll good: ... at 3 endpoints...", printed)
    for shown in ("All good: ... at 2 endpoints...", "All good: ...\nnote: ..."):
        with pytest.raises(AssertionError):
            _assert_shows(shown, printed)
