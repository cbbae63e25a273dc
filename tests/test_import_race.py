"""Imports side by side: real `heart import` processes that add the same new judges or raters at
once each finish with their one-line summary (never a traceback), every row is stored once, and
between them the summaries account for every row exactly once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from heart.errors import ImportRefused
from heart.ids import completion_id
from heart.release import RACE_ATTEMPTS, ImportSummary, import_table
from heart.release._rows import store_rows
from heart.store import JudgeRow, JudgmentRow, LabelRow, RaterRow, Store, SystemRow

from .rows import seed_study

ITEMS = 6
ROUNDS = 3
PEOPLE = 40
"""New judges (or raters) each round; every process of the round adds all of them."""

SYSTEMS = ["m1", "m2", "m3"]


def _study_file(store: Store, root: Path, controls: int) -> None:
    """A study file on ``store`` naming the human system and ``controls`` control systems, which
    the store holds only once a command has opened the study."""
    systems = [{"name": "human", "kind": "human", "family": "human"}]
    systems += [{"name": f"warm-{n}", "kind": "control", "family": "control",
                 "reply": "That sounds hard."} for n in range(controls)]  # fmt: skip
    config = {"name": "race", "store": store.url, "systems": systems}
    (root / "study.yaml").write_text(json.dumps(config))  # JSON is YAML


def _study(store: Store, root: Path) -> None:
    """A study on ``store`` (SQLite or PostgreSQL) with every system's reply to every item."""
    root.mkdir()
    _study_file(store, root, 0)
    seed_study(store, SYSTEMS, items=ITEMS)
    path = root / "completions.csv"
    path.write_text(
        "item_id,system,text\n"
        + "".join(f"i{i},{s},reply {i} of {s}\n" for i in range(ITEMS) for s in SYSTEMS)
    )
    import_table(store, path, "completions", seed=0)


def _side_by_side(root: Path, files: list[Path], kind: str) -> list[str]:
    """Run one `heart import` per file, all at once; each one's output, after checking that it
    succeeded with one line and no traceback."""
    env = {**os.environ, "COLUMNS": "300"}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "heart",
                "import",
                str(f),
                "--table",
                kind,
                "--study",
                str(root),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for f in files
    ]
    outputs = [p.communicate(timeout=300) for p in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert (process.returncode, err) == (0, ""), out + err
        assert out.count("\n") == 1 and out.startswith("Imported: "), out
    return [out for out, _ in outputs]


def _count(line: str, table: str) -> tuple[int, int]:
    """The rows of ``table`` a summary line gives as new, and all rows it gives as stored."""
    new = re.search(rf"{re.escape(table)} (\d+)", line)
    stored = re.search(r"(\d+) rows? already stored", line)
    return int(new.group(1)) if new else 0, int(stored.group(1)) if stored else 0


def _rows(store: Store, *models: type) -> tuple[int, ...]:
    with store.session() as s:
        return tuple(s.scalar(select(func.count()).select_from(m)) or 0 for m in models)


def test_one_judgments_file_imported_three_times_at_once(store: Store, tmp_path: Path) -> None:
    """Each round the three also open a study whose file names a system the store lacks: each
    adds it, as every command does on opening a study, and none fails for the others'."""
    root = tmp_path / "study"
    _study(store, root)
    for round_ in range(ROUNDS):
        _study_file(store, root, round_ + 1)
        path = tmp_path / f"judgments-{round_}.csv"
        path.write_text(
            "item_id,judge,a_system,b_system,winner,strength\n"
            + "".join(f"i{n % ITEMS},r{round_}-{n},m1,m2,a,2\n" for n in range(PEOPLE))
        )
        lines = _side_by_side(root, [path] * 3, "judgments")
        counts = [_count(line, "judgments.jsonl") for line in lines]
        assert sum(new for new, _ in counts) == PEOPLE  # each verdict added by one of them
        assert all(new + stored == PEOPLE for new, stored in counts)  # and seen by every one
        assert _rows(store, JudgeRow, JudgmentRow) == (PEOPLE * (round_ + 1),) * 2
        assert _rows(store, SystemRow) == (len(SYSTEMS) + 1 + round_ + 1,)


def test_two_labels_files_sharing_their_raters_imported_at_once(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "study"
    _study(store, root)
    for round_ in range(ROUNDS):
        files = []
        for system in SYSTEMS:
            path = tmp_path / f"labels-{round_}-{system}.csv"
            path.write_text(
                "completion_id,rater,strategies\n"
                + "".join(
                    f"{completion_id(f'i{n % ITEMS}', system)},p{round_}-{n},Affirmation\n"
                    for n in range(PEOPLE)
                )
            )
            files.append(path)
        lines = _side_by_side(root, files, "labels")
        assert [_count(line, "strategy_labels.jsonl") for line in lines] == [(PEOPLE, 0)] * 3, lines
        raters = sum(_count(line, "raters.jsonl")[0] for line in lines)
        assert raters == PEOPLE  # each rater added by one of them, used by all
        assert _rows(store, RaterRow, LabelRow) == (
            PEOPLE * (round_ + 1),
            PEOPLE * len(SYSTEMS) * (round_ + 1),
        )


def test_a_refusal_that_no_rerun_ends_is_one_line_after_the_last_attempt(
    store: Store, tmp_path: Path
) -> None:
    """A duplicate the checks did not catch is no race: every run meets it, and after the last
    the import stops with one line and stores nothing."""
    seed_study(store, ["m1"])
    runs = []

    def write(session: Session) -> ImportSummary:
        runs.append(1)
        session.add(SystemRow(name="m2", kind="model", family="m2", spec={}))
        session.add(SystemRow(name="m1", kind="model", family="m1", spec={}))
        session.flush()
        return ImportSummary({}, {})

    source = tmp_path / "f.csv"
    with pytest.raises(ImportRefused) as refused:
        store_rows(store, source, write)
    message = str(refused.value)
    assert len(runs) == RACE_ATTEMPTS and "\n" not in message
    assert message.startswith(f"{source}: the store refused the rows {RACE_ATTEMPTS} times (")
    assert "; nothing was imported; import again" in message
    assert _rows(store, SystemRow) == (1,)
