"""The fuzz layer's harness: a small study every case starts from, the two kinds of case (a
`heart` command on files, a request to the web app), and the properties every run keeps.

The `heart` command runs in-process (its own ``main``, as the console script calls it) in a
fresh copy of the template; the web app runs through its ASGI app with a test client. A run
either succeeds or ends in the project's own error: exit status 2 and ``error: ...`` (one line,
or one line per problem each naming the file), never a traceback or an exception's class name.
A refused run leaves every file and every row of the store as it was and nothing new behind; a
successful one changes nothing outside the study it was run on. The web app answers every
request with a page, never a server error, and a refused request stores nothing.

tests/fuzz_cases.py draws the cases (and holds known hostile ones); tests/test_fuzz_layer.py
runs a seeded handful per reader and bench/fuzz_readers.py the long run.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from fastapi.testclient import TestClient
from hypothesis import currently_in_test_context, note
from typer.testing import CliRunner

from heart.cli import main
from heart.config import STUDY_FILE
from heart.ids import completion_id
from heart.people import invite
from heart.store import ConversationRow, ItemRow
from heart.study import open_study
from heart.web import create_app
from heart.web._forms import URLENCODED
from heart.web._session import RATER_COOKIE

SYSTEMS = ("m1", "m2", "m3")
HUMAN = "human"
ADMIN_TOKEN = "an admin token for the fuzz layer"
SECRET = b"a secret of thirty-two bytes !!!"
WORK = "{work}"
"""Stands for the case's folder in a command's arguments."""

WIDE = "1000000"
"""Console columns for the in-process runs: a message's line breaks are then its own."""

EXCEPTION_NAME = re.compile(r"Traceback|\b[A-Z][A-Za-z]*(?:Error|Exception)\b")
"""What in a command's output shows an exception escaped (the project's errors say ``error:``)."""

SQLITE_MAGIC = b"SQLite format 3\x00"
JOURNALS = ("-wal", "-shm", "-journal")


class Broken(AssertionError):
    """A property a run did not keep; ``rule`` names it."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"{rule}: {detail}")
        self.rule = rule


class Crashed(AssertionError):
    """An exception that escaped an entry point (its ``__cause__``)."""


NOTES: list[str] = []
"""The running case's input, as recorded by :func:`shown` (the long run clears it per case)."""


def shown(label: str, value: object) -> None:
    """Record a part of the case's input, for the report of a failing case."""
    text = repr(value)
    line = f"{label}: {text if len(text) <= 2000 else text[:2000] + '...'}"
    NOTES.append(line)
    if currently_in_test_context():
        note(line)


# -- the study every case starts from ------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A folder holding ``study/`` (a study with items, completions, judgments, labels and the
    web app's seats), ``bundle/`` (its export) and ``index.csv`` (a valid capability index);
    ``settings_text`` is the study's own study file, ``study_text`` a fuller one (the demo's
    settings) for the study reader."""

    root: Path
    settings_text: str
    study_text: str
    bundle: dict[str, bytes]
    completions: tuple[str, ...]
    raters: tuple[str, ...]


STUDY_SETTINGS: dict[str, Any] = {
    "name": "fuzz",
    "seed": 0,
    "systems": [
        {"name": HUMAN, "kind": "human", "family": "human"},
        *({"name": s, "kind": "dataset", "family": s} for s in SYSTEMS),
    ],
    "ratings": {"bootstrap_rounds": 20},
    "people": {
        "check_every": 2,
        "label_completions": 4,
        "writers_per_item": 2,
        "raters_per_pair": 2,
    },
}


def _csv(rows: list[list[str]]) -> str:
    return "".join(",".join(row) + "\n" for row in rows)


def _seed_items(study: Path) -> None:
    """One conversation and two items with a real context."""
    with open_study(study) as s, s.store.session() as session:
        session.add(
            ConversationRow(
                id="c1",
                problem_type="job crisis",
                emotion_type="anxiety",
                experience_type="Current Experience",
                situation="I may lose my job.",
                survey={},
                turns=[],
                origin={},
            )
        )
        session.flush()
        for i in range(2):
            turns = (
                ("seeker", f"My manager warned me again, week {i}."),
                ("supporter", "That sounds stressful. What happened?"),
                ("seeker", "I keep making the same mistake."),
            )
            session.add(
                ItemRow(
                    id=f"i{i}",
                    content_hash=f"h{i}",
                    subset="regular",
                    conversation_id="c1",
                    turn_index=3,
                    reference="That sounds frightening.",
                    problem_type="job crisis",
                    emotion_type="anxiety",
                    situation="I may lose my job.",
                    meta={},
                    context=[{"role": r, "text": t, "parts": [t]} for r, t in turns],
                )
            )


def build_template(root: Path) -> Template:
    """Make the template with the real commands (its imports and export must succeed)."""
    study = root / "study"
    study.mkdir(parents=True)
    (study / STUDY_FILE).write_text(yaml.safe_dump(STUDY_SETTINGS), encoding="utf-8")
    _seed_items(study)
    replies = [
        [f"i{i}", s, "", f"A warm reply from {s} on i{i}."] for i in range(2) for s in SYSTEMS
    ]
    replies.append(["i0", HUMAN, "p1", "I hear how worried you are."])
    verdicts = [
        ["i0", "g1", "m1", "m2", "", "a", "2", "llm"],
        ["i0", "g1", "m2", "m3", "", "b", "1", "llm"],
        ["i1", "g1", "m1", "m3", "", "tie", "1", "llm"],
        ["i0", "r1", "m3", HUMAN, "p1", "b", "3", "human"],
    ]
    first = completion_id("i0", "m1", "")
    for kind, rows in (
        ("completions", [["item_id", "system", "contributor", "text"], *replies]),
        (
            "judgments",
            [
                [
                    "item_id",
                    "judge",
                    "a_system",
                    "b_system",
                    "b_contributor",
                    "winner",
                    "strength",
                    "source",
                ],
                *verdicts,
            ],
        ),
        ("labels", [["completion_id", "rater", "strategies"], [first, "q1", "Affirmation"]]),
    ):
        path = root / f"{kind}.csv"
        path.write_text(_csv(rows), encoding="utf-8")
        ran = run_heart("import", str(path), "--table", kind, "--study", str(study), cwd=root)
        assert ran.code == 0, ran
        path.unlink()
    ran = run_heart("export", str(root / "bundle"), "--study", str(study), cwd=root)
    assert ran.code == 0, ran
    (root / "index.csv").write_text(
        _csv([["system", "value"], ["m1", "1"], ["m2", "2.5"], ["m3", "-3"]])
    )
    create_app(study, admin_token=ADMIN_TOKEN, secret=SECRET).state.web.study.close()  # seats
    demo = files("heart.demo")
    settings = yaml.safe_load(demo.joinpath("study.yaml").read_text(encoding="utf-8"))
    settings["people"] = STUDY_SETTINGS["people"]
    settings["ratings"]["capability_index"] = "../index.csv"
    (study / "esconv_demo.jsonl").write_text(
        demo.joinpath("esconv_demo.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return Template(
        root=root,
        settings_text=(study / STUDY_FILE).read_text(encoding="utf-8"),
        study_text=yaml.safe_dump(settings, allow_unicode=True, sort_keys=False),
        bundle={p.name: p.read_bytes() for p in sorted((root / "bundle").iterdir())},
        completions=tuple(completion_id(i, s, c) for i, s, c, _ in replies),
        raters=("q1",),
    )


@contextmanager
def workspace(template: Template, parent: Path) -> Iterator[Path]:
    """A fresh copy of the template for one case, removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix="case-", dir=parent))
    try:
        shutil.copytree(template.root, work, dirs_exist_ok=True)
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- what a case is -------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """A `heart` command on files: ``files`` (path relative to the case's folder -> bytes) are
    written, ``removed`` deleted and (empty) ``folders`` made first; ``{work}`` in the arguments
    stands for the case's folder, where the command runs. A success may change only the folder
    ``target`` (anything when None: a study file may put its store anywhere); a ``read_only``
    command changes nothing ever."""

    args: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...] = ()
    removed: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    target: str | None = "study"
    read_only: bool = False


@dataclass(frozen=True)
class Request:
    """A request to the web app from a rater signed in by invite. ``kind`` write, judge, label
    or words sends ``body`` (``{task}`` and ``{csrf}`` stand for the page's own) as
    ``content_type``; any other kind opens ``url`` (``{token}`` stands for the rater's invite
    token; kind export signs in as the admin first). ``cookie`` replaces the rater's session."""

    kind: str
    body: bytes = b""
    content_type: str = URLENCODED
    url: str = ""
    cookie: str | None = None


# -- running the command and what a run must keep -------------------------------------------


@dataclass(frozen=True)
class Ran:
    args: tuple[str, ...]
    code: int
    output: str

    def __str__(self) -> str:
        return f"`heart {' '.join(self.args)}` exited {self.code}:\n{self.output}"


def run_heart(*args: str, cwd: Path) -> Ran:
    """``heart ARGS`` in this process, from ``cwd``, as the console script runs it."""
    runner = CliRunner()
    with runner.isolation(env={"COLUMNS": WIDE}) as (_, _, output):
        argv, here = sys.argv, Path.cwd()
        sys.argv = ["heart", *args]
        os.chdir(cwd)
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except Exception as exc:
            said = output.getvalue().decode("utf-8", "replace")
            raise Crashed(
                f"`heart {' '.join(args)}` raised {type(exc).__name__}: {exc}\n{said}"
            ) from exc
        finally:
            sys.argv = argv
            os.chdir(here)
        return Ran(args, code, output.getvalue().decode("utf-8", "replace"))


def check_ran(ran: Ran, codes: set[int], work: Path) -> None:
    """The run ended with one of ``codes``, printed no traceback, and an error (status 2)
    is ``error: ...`` on one line, or one line per problem each naming the file."""
    if ran.code not in codes:
        raise Broken("exit status", str(ran))
    found = EXCEPTION_NAME.search(ran.output)
    if found:
        raise Broken("exception in output", f"{found.group()!r} in {ran}")
    if ran.code == 2:
        lines = ran.output.rstrip("\n").split("\n")
        if not lines[0].startswith("error: "):
            raise Broken("error line", f"the output does not start with 'error: ': {ran}")
        if not all(line.startswith(str(work)) for line in lines[1:]):
            raise Broken("error line", f"an error of several lines not each naming a file: {ran}")


def _rows(path: Path, skip: dict[str, set[str]] | None = None) -> dict[str, list[str]]:
    """Every row of every table of the SQLite file at ``path`` (read from a copy, so the file
    and its journal stay as they are); ``skip`` leaves out columns by table."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy.db"
        shutil.copyfile(path, copy)
        wal = Path(f"{path}-wal")
        if wal.exists():
            shutil.copyfile(wal, f"{copy}-wal")
        db = sqlite3.connect(copy)
        try:
            out: dict[str, list[str]] = {}
            tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
            for (table,) in sorted(tables):
                cursor = db.execute(f'SELECT * FROM "{table}"')
                names = [d[0] for d in cursor.description]
                keep = [i for i, n in enumerate(names) if n not in (skip or {}).get(table, set())]
                out[table] = sorted(repr([row[i] for i in keep]) for row in cursor.fetchall())
            return out
        finally:
            db.close()


_DUMPS: dict[str, str] = {}
"""A store file's sha256 (with its journal's) -> the sha256 of its rows: a store whose bytes
are unchanged is not read again."""


def state(work: Path) -> dict[str, str]:
    """Every folder and file under ``work``: a file's sha256, a store's rows (SQLite journals,
    which come and go with connections, left out)."""
    out: dict[str, str] = {}
    for path in sorted(work.rglob("*")):
        name = str(path.relative_to(work))
        if path.is_dir():
            out[name + "/"] = "folder"
        elif not path.name.endswith(JOURNALS):
            raw = path.read_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            if raw.startswith(SQLITE_MAGIC):
                wal = Path(f"{path}-wal")
                key = digest + (
                    hashlib.sha256(wal.read_bytes()).hexdigest() if wal.exists() else ""
                )
                if key not in _DUMPS:
                    _DUMPS[key] = hashlib.sha256(repr(_rows(path)).encode()).hexdigest()
                digest = "store " + _DUMPS[key]
            out[name] = digest
    return out


def _changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def run_command(command: Command, work: Path) -> Ran:
    """Write the case's files, run its command, and check the run."""
    for name in command.removed:
        (work / name).unlink()
    for name in command.folders:
        (work / name).mkdir(parents=True)
    for name, raw in command.files:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(raw)
    args = [a.replace(WORK, str(work)) for a in command.args]
    before = state(work)
    ran = run_heart(*args, cwd=work)
    check_ran(ran, {0, 1, 2} if args[0] == "check" else {0, 2}, work)
    changed = _changes(before, state(work))
    if (ran.code != 0 or command.read_only) and changed:
        raise Broken("changed on refusal", f"{changed} changed after {ran}")
    target = command.target
    outside = [k for k in changed if target is not None and not (k + "/").startswith(target + "/")]
    if outside:
        raise Broken("wrote outside the study", f"{outside} changed after {ran}")
    return ran


# -- the web app ----------------------------------------------------------------------------

STATUSES = {200, 303, 400, 403, 404, 405, 409, 413, 415, 422}
"""What the app may answer; never a server error."""

STORING = {"write", "judge", "label", "prolific"}
"""Requests that may store something when they succeed (an answer, a rater)."""

LEASES = {"tasks": {"expires_at", "served_at"}}
"""Columns a page view may change (a seat's claim renewed), left out of the comparison."""


PRACTICE = {"choice": "B++", "rationale": "B stays with the guilt."}
"""The practice pair's answer the rater gives before the request is sent."""


def _hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    return found.group(1) if found else ""


def send(request: Request, work: Path) -> int:
    """Send the request to a fresh app over the case's study, and check the answer."""
    root = work / "study"
    db = root / "heart.db"
    app = create_app(root, admin_token=ADMIN_TOKEN, secret=SECRET)
    try:
        client = TestClient(app, follow_redirects=False)
        ((_, token),) = invite(app.state.web.study.store, 1)
        assert client.get(f"/invite/{token}").status_code == 303
        for step, fields in (("consent", {"agree": "yes"}), ("practice", PRACTICE)):
            csrf = _hidden(client.get(f"/{step}").text, "csrf")  # the steps before any task
            assert client.post(f"/{step}", data={"csrf": csrf, **fields}).status_code == 303
        if request.cookie is not None:
            client.cookies.set(RATER_COOKIE, request.cookie)
        if request.kind in ("write", "judge", "label", "words"):
            page = client.get("/write" if request.kind == "words" else f"/{request.kind}").text
            body = request.body.replace(b"{task}", _hidden(page, "task").encode())
            body = body.replace(b"{csrf}", _hidden(page, "csrf").encode())
            before = _rows(db, LEASES)
            answer = client.post(
                f"/{request.kind}", content=body, headers={"content-type": request.content_type}
            )
        else:
            if request.kind == "export":
                client.get(f"/admin?token={ADMIN_TOKEN}")
            before = _rows(db, LEASES)
            answer = client.get(request.url.replace("{token}", token))
    except Exception as exc:
        if isinstance(exc, AssertionError):
            raise
        raise Crashed(f"the web app raised {type(exc).__name__}: {exc}") from exc
    finally:
        app.state.web.study.close()
    if answer.status_code not in STATUSES:
        raise Broken("web status", f"{request.kind}: answered {answer.status_code}")
    stored = request.kind in STORING and answer.status_code == 303
    if not stored and _rows(db, LEASES) != before:
        raise Broken(
            "changed on refusal",
            f"{request.kind}: answered {answer.status_code} and changed the store",
        )
    return answer.status_code


def show(case: Command | Request) -> None:
    """Record the case, part by part (a bundle's manifest last: it is long and seldom the
    point)."""
    if isinstance(case, Request):
        shown("request", (case.kind, case.url, case.content_type, case.cookie))
        if case.body:
            shown("body", case.body)
        return
    shown("command", "heart " + " ".join(case.args))
    for name, raw in sorted(case.files, key=lambda file: file[0].endswith("manifest.json")):
        shown(name, raw)
    for name in case.removed:
        shown(name, "removed")


def run_case(case: Command | Request, work: Path) -> None:
    """Run a case of either kind in ``work`` (a copy of the template) and check it."""
    show(case)
    if isinstance(case, Command):
        run_command(case, work)
    else:
        send(case, work)
