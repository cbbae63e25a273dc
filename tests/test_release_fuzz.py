"""Any completions file, judgments file or bundle either imports or is refused with the project's
own error, and a refused import leaves the store exactly as it was."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from heart.errors import ImportRefused
from heart.release import export_bundle, import_bundle, import_table
from heart.store import CompletionRow, JudgeRow, JudgmentRow, Store, open_store
from heart.types import JudgeSource, sha256_hex

from .damage import damage_bytes
from .rows import Verdict, seed_verdicts, snapshot

FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
cells = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from([",", '"', "\n", "\r", " ", "\ufeff"]),
    max_size=8,
)


def field(known: list[str]) -> st.SearchStrategy[Any]:
    """Mostly a value the study knows, sometimes text or any JSON value."""
    return st.sampled_from(known) | cells | json_values


COMPLETION = {
    "item_id": field(["i0", "i1", "i9"]),
    "system": field(["m1", "m2", "human"]),
    "contributor": field(["", "p1", "p2"]),
    "text": field(["a warm reply", "  ", ""]),
}
JUDGMENT = {
    "item_id": field(["i0", "i1"]),
    "judge": field(["r1", "r2", "g1"]),
    "a_system": field(["m1", "m2"]),
    "b_system": field(["m1", "m2"]),
    "winner": field(["a", "b", "tie", "B", "c"]),
    "strength": field(["1", "5", "0", "3.5"]) | st.integers(-2, 7),
    "source": field([*JudgeSource, "robot", ""]),
    "rationale": field(["warmer"]),
}


@st.composite
def records(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]]) -> list[dict[str, Any]]:
    """Rows of a file: each field present or not, plus now and then an unknown one."""
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = {k: draw(v) for k, v in fields.items() if draw(st.integers(0, 9))}
        if draw(st.integers(0, 9)) == 0:
            row[draw(st.text(max_size=5))] = draw(json_values)
        rows.append(row)
    return rows


def as_file(rows: list[dict[str, Any]], suffix: str) -> bytes:
    """The rows as JSON Lines, or as CSV with every value written as text."""
    if suffix == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8", "surrogatepass")
    header = sorted({k for r in rows for k in r})
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if row.get(k) is None else row[k] for k in header])
    return out.getvalue().encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def study_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """Items i0 and i1, systems m1, m2 and human with replies, and a few verdicts."""
    root = tmp_path_factory.mktemp("fuzz-store")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    verdicts = [Verdict(i, "m1", "m2", "g1", "a", 2) for i in range(2)]
    verdicts += [Verdict(0, "m2", "human/p1", "r1", "tie", 1)]
    seed_verdicts(store, verdicts, kinds={"human": "human"}, sources={"r1": "human"})
    yield store
    store.close()


def import_or_refuse(store: Store, run: Callable[[], object]) -> None:
    """Run an import: it succeeds and stores only what the store's vocabulary allows, or it is
    refused in one line and changes nothing."""
    before = snapshot(store)
    try:
        run()
    except ImportRefused as err:
        assert len(str(err).splitlines()) == 1
        assert snapshot(store) == before
        return
    with store.session() as s:
        assert set(s.scalars(select(JudgeRow.source))) <= set(JudgeSource)
        assert {type(t) for t in s.scalars(select(CompletionRow.text))} <= {str}
        winners = set(s.scalars(select(JudgmentRow.winner).where(JudgmentRow.status == "ok")))
        assert winners <= {"a", "b", "tie"}


@FUZZ
@given(
    kind=st.sampled_from(["completions", "judgments"]),
    suffix=st.sampled_from(["csv", "jsonl"]),
    data=st.data(),
)
def test_any_table_file_imports_or_is_refused_unchanged(
    study_store: Store, tmp_path: Path, kind: str, suffix: str, data: st.DataObject
) -> None:
    rows = data.draw(records(COMPLETION if kind == "completions" else JUDGMENT))
    raw = as_file(rows, suffix)
    for _ in range(data.draw(st.integers(0, 2))):
        raw = damage_bytes(data, raw)
    path = tmp_path / f"fuzz.{suffix}"
    path.write_bytes(raw)
    import_or_refuse(study_store, lambda: import_table(study_store, path, kind, seed=0))


@pytest.fixture(scope="module")
def bundle(study_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-study")
    (root / "study.yaml").write_text("name: fuzz\nsystems:\n  - {name: m1, kind: dataset}\n")
    out = root / "bundle"
    export_bundle(study_store, root, out)
    return out


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('fuzz-empty') / 'heart.db'}")
    yield store
    store.close()


def damage_rows(data: st.DataObject, path: Path) -> None:
    """Drop, retype or add a value in one row of a JSON Lines file (one still readable)."""
    try:
        rows = [json.loads(line) for line in path.read_text().split("\n") if line]
    except ValueError:
        return
    rows = [r for r in rows if isinstance(r, dict)]
    if not rows:
        return
    row = data.draw(st.sampled_from(rows))
    action = data.draw(st.sampled_from(["drop", "retype", "add"]))
    column = data.draw(st.sampled_from(sorted(row))) if action != "add" else "extra"
    if action == "drop":
        del row[column]
    else:
        row[column] = data.draw(json_values | st.text(max_size=50))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@FUZZ
@given(data=st.data(), resign=st.booleans(), into_empty=st.booleans())
def test_any_damaged_bundle_imports_or_is_refused_unchanged(
    bundle: Path,
    study_store: Store,
    empty_store: Store,
    tmp_path: Path,
    data: st.DataObject,
    resign: bool,
    into_empty: bool,
) -> None:
    copy = tmp_path / "bundle"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(bundle, copy)
    names = sorted(p.name for p in copy.iterdir())
    for _ in range(data.draw(st.integers(1, 2))):
        path = copy / data.draw(st.sampled_from(names))
        if path.suffix == ".jsonl" and data.draw(st.booleans()):
            damage_rows(data, path)
        else:
            path.write_bytes(damage_bytes(data, path.read_bytes()))
    if resign:  # so the damage reaches the rows, not only the hash check
        try:
            manifest = json.loads((copy / "manifest.json").read_text())
            for name, entry in manifest["files"].items():
                entry["sha256"] = sha256_hex((copy / name).read_text())
            (copy / "manifest.json").write_text(json.dumps(manifest))
        except (ValueError, KeyError, TypeError, AttributeError, OSError):
            pass  # a manifest damaged past re-signing is itself the input
    store = empty_store if into_empty else study_store
    import_or_refuse(store, lambda: import_bundle(store, copy))
