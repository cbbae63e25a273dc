"""`heart check`: every problem of a study found before it runs, one line each with its place
and its fix (exit 1), else a short summary (exit 0); `heart run` starts with it. The store is
read as it is, never created or migrated; `--probe` makes one small call per model."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from heart import pipeline
from heart.check import CheckFailed, Problem, check_study
from heart.store._db import HEAD
from heart.study import create_study, open_study

from .fakes.fault_server import FaultServer
from .helpers import heart, rewrite_study

KEY = {"HEART_TEST_KEY": "sk-test-key-for-the-fault-server"}


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as fault_server:
        yield fault_server


def _model(base_url: str, name: str = "fake", key: str = "HEART_TEST_KEY") -> str:
    return f"{{provider: openai, base_url: '{base_url}', model: {name}, api_key_env: {key}}}"


def _study(root: Path, server: FaultServer, rest: str = "", judge: str | None = None) -> Path:
    create_study(root, demo=True)
    rewrite_study(
        root,
        [
            f"{{name: sys-a, kind: model, family: a, model: {_model(server.openai_base_url)}}}",
            "{name: esconv-original, kind: dataset, family: dataset}",
        ],
        [f"{{name: judge, family: j, model: {judge or _model(server.openai_base_url, 'jm')}}}"],
        rest,
        items=4,
    )
    return root


def _set(root: Path, old: str, new: str) -> None:
    path = root / "study.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_three_mistakes_are_three_lines_with_their_fix_and_run_stops_on_them(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server, rest="ratings: {capability_index: arena.csv}\n")
    _set(root, "esconv: esconv_demo.jsonl", "esconv: corpus/esconv.jsonl")
    _set(root, "model: jm, api_key_env: HEART_TEST_KEY", "model: jm, api_key_env: JUDGE_KEY")
    study = root / "study.yaml"
    expected = [
        f"4 problems in {root}:",
        f"  {study} line 7: 'items.esconv': {root}/corpus/esconv.jsonl does not exist; set it to "
        "an ESConv file or folder (relative to the study folder)",
        f"  {study} line 13: 'ratings.capability_index': {root}/arena.csv is not a file; set it "
        "to a CSV of columns system and value, or remove it",
        f"  {study} line 9: 'systems.0.model.api_key_env': the environment variable "
        "HEART_TEST_KEY is not set (needed by system sys-a); export HEART_TEST_KEY=<your key> "
        "before running heart; keys never go in study.yaml",
        f"  {study} line 12: 'judges.0.model.api_key_env': the environment variable JUDGE_KEY is "
        "not set (needed by judge judge); export JUDGE_KEY=<your key> before running heart; "
        "keys never go in study.yaml",
    ]
    out = heart("check", "--study", root, check=False)
    assert out.returncode == 1
    assert out.stdout.splitlines() == expected

    before = sorted(p.name for p in root.iterdir())
    run = heart("run", "--study", root, check=False)
    assert run.returncode == 1 and run.stdout.splitlines() == expected
    assert sorted(p.name for p in root.iterdir()) == before  # nothing ran, nothing was written
    # a dry run still prices what it can, then names what a real run would stop on
    priced = heart("run", "--dry-run", "--study", root, check=False)
    assert priced.returncode == 1 and priced.stdout.splitlines()[-5:] == expected
    assert "  - the items to come cannot be projected (" in priced.stdout
    assert server.requests == []


def test_a_ready_study_is_all_good_in_one_line(server: FaultServer, tmp_path: Path) -> None:
    root = _study(tmp_path / "s", server)
    out = heart("check", "--study", root, env=KEY)
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        f"All good: {root}/study.yaml valid (2 systems, 1 judge); store "
        f"sqlite:///{root.resolve()}/heart.db at schema {HEAD}, 0 items; corpus "
        f"{root}/esconv_demo.jsonl; 2 models at 1 endpoint, 1 API key variable checked."
    ]
    assert server.requests == []


def test_every_study_file_error_is_its_own_line(server: FaultServer, tmp_path: Path) -> None:
    root = _study(tmp_path / "s", server)
    _set(root, "regular: 4", "regular: -3")
    _set(root, "family: a,", "famly: a,")
    out = heart("check", "--study", root, check=False)
    assert out.returncode == 1
    study = root / "study.yaml"
    assert out.stdout.splitlines() == [
        f"3 problems in {root}:",
        f"  {study} line 7: 'items.regular': Input should be greater than 0, got -3",
        f"  {study} line 9: 'systems.0.family': Field required",
        f"  {study} line 9: 'systems.0.famly': unknown setting; check its spelling and "
        "indentation, got 'a'",
    ]
    problems = check_study(root).problems
    assert problems[0] == Problem(
        f"{study} line 7", "'items.regular': Input should be greater than 0, got -3"
    )


def test_the_corpus_is_needed_only_until_the_items_are_stored(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEART_TEST_KEY", KEY["HEART_TEST_KEY"])
    root = _study(tmp_path / "s", server)
    heart("items", "build", "--study", root)
    (root / "esconv_demo.jsonl").unlink()  # an imported study may not have its corpus
    assert check_study(root).problems == []
    _set(root, "regular: 4}", "regular: 4, adversarial: 1}")  # adversarial items need it again
    (problem,) = [p for p in check_study(root).problems if "esconv" in p.where]
    assert problem.problem == f"{root}/esconv_demo.jsonl does not exist"


def _revision(root: Path, revision: str | None = None) -> str:
    with sqlite3.connect(root / "heart.db") as conn:
        if revision is not None:
            conn.execute("UPDATE alembic_version SET version_num = ?", (revision,))
        return str(conn.execute("SELECT version_num FROM alembic_version").fetchone()[0])


def test_the_store_schema_is_read_never_changed(server: FaultServer, tmp_path: Path) -> None:
    root = _study(tmp_path / "s", server)
    _revision(root, "0007")
    older = heart("check", "--study", root, env=KEY)
    store = f"store sqlite:///{root.resolve()}/heart.db"
    assert older.stdout.splitlines()[0] == (
        f"note: {store} has schema 0007; the next command upgrades it to {HEAD} (back it up first "
        "if an older heart must still read it)"
    )
    assert _revision(root) == "0007"  # the check did not migrate it

    _revision(root, "0042")
    newer = heart("check", "--study", root, env=KEY, check=False)
    assert newer.returncode == 1
    assert newer.stdout.splitlines()[1] == (
        f"  {store}: has schema revision 0042, which this heart does not know (its newest is "
        f"{HEAD}): a newer heart-bench wrote it; upgrade heart-bench, or point store at this "
        "study's own database"
    )

    (root / "heart.db").unlink()
    fresh = heart("check", "--study", root, env=KEY)
    assert fresh.stdout.splitlines()[0] == (
        f"note: {store} does not exist yet; the first command creates it"
    )
    assert not (root / "heart.db").exists()


def test_probe_calls_each_model_once_the_way_its_stage_does(tmp_path: Path) -> None:
    with FaultServer() as good, FaultServer() as denied:
        denied.default_plan = "401"
        root = _study(tmp_path / "s", good, judge=_model(denied.openai_base_url, "jm"))
        out = heart("check", "--probe", "--study", root, env=KEY, check=False)
        assert out.returncode == 1
        lines = out.stdout.splitlines()
        assert lines[0].startswith(
            f"probe: openai fake at {good.openai_base_url} answered in "
        ) and lines[0].endswith(" s (system sys-a)")
        assert lines[1:] == [
            f"1 problem in {root}:",
            f"  judge judge (openai jm at {denied.openai_base_url}): the probe failed (auth): "
            "HTTP 401: AuthenticationError: Error code: 401 - fault_server: scripted 401 "
            "(Unauthorized); check the API key in the variable the model's api_key_env names "
            "(and that the key may use this model)",
        ]
        # one call each, no retry: the system's streamed, the judge's asking for JSON
        ((system,), (judge,)) = good.requests, denied.requests
        assert system.body["stream"] is True and "response_format" not in system.body
        assert judge.body["response_format"]["type"] == "json_schema"
        assert system.body["max_tokens"] == judge.body["max_tokens"] == 16


def test_the_python_run_raises_the_problems_before_any_stage(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server)
    with open_study(root) as study, pytest.raises(CheckFailed) as raised:
        pipeline.run(study)
    assert [p.problem for p in raised.value.problems] == [
        "the environment variable HEART_TEST_KEY is not set (needed by system sys-a, judge judge)"
    ]
    assert server.requests == []
    with open_study(root) as study:
        assert pipeline.dry_run(study).stages  # a dry run needs no key


def test_a_path_too_long_to_look_up_is_a_problem_of_its_setting(tmp_path: Path) -> None:
    root = tmp_path / "s"
    create_study(root, demo=True)
    long = f"{root}/{'x' * 300}"  # a file name may have at most 255 bytes
    _set(root, "esconv: esconv_demo.jsonl", f"esconv: {long}.jsonl")
    _set(root, "ratings:\n", f"ratings:\n  capability_index: {long}.csv\n")
    _set(root, "name: heart-demo\n", f"name: heart-demo\nstore: sqlite:///{long}.db\n")
    problems = sorted(check_study(root).problems, key=lambda p: p.problem)
    assert [(p.where.split(": ")[-1], p.problem) for p in problems] == [
        ("'ratings.capability_index'", f"{long}.csv cannot be looked up (File name too long)"),
        (f"store sqlite:///{long}.db", f"{long}.db cannot be looked up (File name too long)"),
        ("'items.esconv'", f"{long}.jsonl cannot be looked up (File name too long)"),
    ]
    assert sorted(p.name for p in root.iterdir()) == ["esconv_demo.jsonl", "heart.db", "study.yaml"]


def test_a_path_with_a_nul_in_it_is_a_problem_of_its_setting(tmp_path: Path) -> None:
    root = tmp_path / "s"
    create_study(root, demo=True)
    _set(root, "ratings:\n", 'ratings:\n  capability_index: "a\\0b.csv"\n')
    (problem,) = check_study(root).problems
    assert problem.where.endswith("'ratings.capability_index'")
    assert (
        problem.problem
        == f"{str(root / 'a') + chr(0) + 'b.csv'!r} cannot be looked up (embedded null byte)"
    )


def test_a_store_setting_that_is_no_url_is_a_problem_of_its_setting(tmp_path: Path) -> None:
    root = tmp_path / "s"
    create_study(root, demo=True)
    _set(root, "name: heart-demo\n", "name: heart-demo\nstore: not a url\n")
    (problem,) = check_study(root).problems
    assert (problem.where.split(": ")[-1], problem.problem) == (
        "store 'not a url'",
        "is not a database URL",
    )
    assert problem.fix.startswith("give a SQLAlchemy URL such as sqlite:///heart.db")


def test_a_store_that_refuses_the_connection_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "s"
    create_study(root, demo=True)
    url = "postgresql+psycopg://user@127.0.0.1:1/nothing"
    _set(root, "name: heart-demo\n", f"name: heart-demo\nstore: {url}\n")
    done = heart("raters", "list", "--study", root, check=False)
    assert done.returncode == 2
    (line,) = (done.stdout + done.stderr).strip().splitlines()
    assert line.startswith("error: store") and "cannot be opened" in line
