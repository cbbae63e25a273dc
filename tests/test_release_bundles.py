"""A bundle is data, never settings: its study file chooses no store, its YAML is read within
bounds, its manifest lists every file of its version and the folder holds no other, every row
carries every column, and a refused import leaves nothing behind."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from heart import pipeline
from heart.config import STUDY_FILE, parse_study, without_store
from heart.errors import HeartError, ImportRefused
from heart.release import BUNDLE_VERSION, _bundles, read_bundle, store_bundle
from heart.store import CompletionRow, JudgmentRow, open_store
from heart.study import create_study, open_study, staged_study
from heart.types import sha256_hex

from .helpers import heart
from .rows import Verdict, seed_verdicts, snapshot
from .test_config import nested_aliases

VERDICTS = 3


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """The bundle of a demo study holding three verdicts of judge j1 on m1 against m2."""
    origin = tmp_path / "origin"
    create_study(origin, demo=True)
    with open_study(origin) as study:
        seed_verdicts(study.store, [Verdict(i, "m1", "m2", "j1", "a", 2) for i in range(VERDICTS)])
        pipeline.export(study, tmp_path / "bundle")
    return tmp_path / "bundle"


def _sign(bundle: Path) -> None:
    """Write every listed file's sha256 into the manifest, as a forger would."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        if (bundle / name).is_file():
            entry["sha256"] = sha256_hex((bundle / name).read_text(encoding="utf-8"))
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _edit_rows(bundle: Path, name: str, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    path = bundle / name
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _sign(bundle)


def _named(rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(row for row in rows if row["name"] == name)


def _edit_manifest(bundle: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    edit(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _tree(folder: Path) -> list[str]:
    """Every file and folder under ``folder`` (and whether it exists at all)."""
    if not folder.exists():
        return ["(none)"]
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _count(root: Path, model: type[JudgmentRow] | type[CompletionRow]) -> int:
    with open_study(root) as study, study.store.session() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def _refused_into_new_folder(bundle: Path, fresh: Path) -> str:
    """Import ``bundle`` into the folder ``fresh`` (with no study); return the one-line refusal
    after checking that the folder is left as it was."""
    before = _tree(fresh)
    with pytest.raises(HeartError) as err:
        pipeline.import_into(fresh, bundle)
    assert _tree(fresh) == before
    assert "\n" not in str(err.value)
    return str(err.value).replace(f"{bundle}/", "")


# --- the bundle's study file is a record, never settings -------------------------------------


def test_a_bundle_never_chooses_where_its_rows_are_stored(bundle: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    record = (bundle / STUDY_FILE).read_text(encoding="utf-8")
    (bundle / STUDY_FILE).write_text(record + f"store: sqlite:///{elsewhere}\n", encoding="utf-8")
    _sign(bundle)
    fresh = tmp_path / "fresh"
    out = heart("import", bundle, "--study", fresh).stdout
    assert f"judgments.jsonl {VERDICTS}" in out
    assert not elsewhere.exists()
    assert (fresh / STUDY_FILE).read_text(encoding="utf-8") == record  # kept, less the store
    assert _count(fresh, JudgmentRow) == VERDICTS  # in the study's own heart.db
    assert sorted(p.name for p in fresh.iterdir()) == ["heart.db", STUDY_FILE]


def test_a_bundle_never_chooses_where_keys_go(bundle: Path, tmp_path: Path) -> None:
    record = (bundle / STUDY_FILE).read_text(encoding="utf-8")
    hostile = (
        "  - name: m9\n    kind: model\n    family: x\n    model: {provider: openai, model: m9, "
        "base_url: 'https://collector.example/v1', api_key_env: OPENAI_API_KEY}\n"
    )
    (bundle / STUDY_FILE).write_text(record.replace("systems:\n", "systems:\n" + hostile, 1))
    _sign(bundle)
    pipeline.import_into(tmp_path / "fresh", bundle)
    made = (tmp_path / "fresh" / STUDY_FILE).read_text(encoding="utf-8")
    config = parse_study(made)
    m9 = next(s for s in config.systems if s.name == "m9")
    assert m9.model is not None and m9.model.provider == "openai" and m9.model.model == "m9"
    assert (m9.model.base_url, m9.model.api_key_env) == (None, None)
    assert made.startswith(
        f"# {bundle}/study.yaml without its store, endpoints and key variables "
        "(systems.0.model.base_url, systems.0.model.api_key_env):\n"
    )
    assert "collector.example" not in made
    # every other setting comes across as it was
    assert config.model_dump(exclude={"systems"}) == parse_study(record).model_dump(
        exclude={"systems"}
    )


def test_a_bundle_imported_into_a_study_uses_the_study_store(bundle: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    (bundle / STUDY_FILE).write_text(f"name: other\nstore: sqlite:///{elsewhere}\n")
    _sign(bundle)
    importer = tmp_path / "importer"
    create_study(importer, demo=True)
    assert pipeline.import_into(importer, bundle).added["judgments.jsonl"] == VERDICTS
    assert not elsewhere.exists() and _count(importer, JudgmentRow) == VERDICTS


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # set on a line of its own: that line goes, every other line and comment stays
        (
            "name: x  # ours\nstore: sqlite:////elsewhere.db  # theirs\nsystems:\n"
            "  - {name: o, kind: dataset, family: dataset}\n",
            "name: x  # ours\nsystems:\n  - {name: o, kind: dataset, family: dataset}\n",
        ),
        # set in a flow mapping or over several lines: the settings are written anew without it
        (
            "{name: x, store: 'sqlite:///a', systems: [{name: o, kind: dataset, family: dataset}]}",
            "# s.yaml without its 'store' setting\nname: x\nsystems:\n- name: o\n  kind: dataset\n"
            "  family: dataset\n",
        ),
        (
            "name: x\nstore: >\n  sqlite:///a\nsystems: [{name: o, kind: dataset, family: d}]",
            "# s.yaml without its 'store' setting\nname: x\nsystems:\n- name: o\n  kind: dataset\n"
            "  family: d\n",
        ),
    ],
)
def test_a_study_file_loses_only_its_store(text: str, kept: str) -> None:
    assert without_store(text, "s.yaml") == kept
    before, after = parse_study(text), parse_study(kept)
    assert after.store is None and after == before.model_copy(update={"store": None})


def test_a_bundle_study_file_of_nested_aliases_is_refused_at_once(
    bundle: Path, tmp_path: Path
) -> None:
    (bundle / STUDY_FILE).write_text(nested_aliases())
    _sign(bundle)
    started = time.perf_counter()
    message = _refused_into_new_folder(bundle, tmp_path / "fresh")
    assert time.perf_counter() - started < 1
    assert message.startswith("study.yaml: its aliases (*name) repeat values to more than")
    # into a study of its own the bundle's study file is a record, never read as settings
    importer = tmp_path / "importer"
    create_study(importer, demo=True)
    assert pipeline.import_into(importer, bundle).added["judgments.jsonl"] == VERDICTS


# --- the manifest lists every file of its version, and the folder holds no other -------------


@pytest.mark.parametrize("keep_file", [True, False])
@pytest.mark.parametrize("name", ["judgments.jsonl", "rationale_codes.jsonl", "provenance.json"])
def test_a_file_left_out_of_the_manifest_is_refused(
    bundle: Path, tmp_path: Path, name: str, keep_file: bool
) -> None:
    _edit_manifest(bundle, lambda m: m["files"].pop(name))
    if not keep_file:
        (bundle / name).unlink()
    assert _refused_into_new_folder(bundle, tmp_path / "fresh") == (
        f"manifest.json: 'files' does not list {name}, which every bundle of version 5 has; "
        "export the bundle again"
    )


def test_a_file_the_manifest_does_not_list_is_refused(bundle: Path, tmp_path: Path) -> None:
    (bundle / "notes.txt").write_text("read me")
    assert _refused_into_new_folder(bundle, tmp_path / "fresh") == (
        "notes.txt: in the bundle but not listed in manifest.json; a bundle holds only the files "
        "its manifest lists: remove it, or export the bundle again"
    )


def test_a_version_2_bundle_may_lack_only_what_came_later(bundle: Path, tmp_path: Path) -> None:
    later = ["rewrites.jsonl", "strategy_classifications.jsonl", "rationale_codings.jsonl",
             "rationale_codes.jsonl", "provenance.json"]  # fmt: skip

    def as_version_2(manifest: dict[str, Any]) -> None:
        manifest["version"] = 2
        for name in later:
            del manifest["files"][name]

    _edit_manifest(bundle, as_version_2)
    for name in later:
        (bundle / name).unlink()
    summary = pipeline.import_into(tmp_path / "fresh", bundle)
    assert summary.added["judgments.jsonl"] == VERDICTS
    _edit_manifest(bundle, lambda m: m["files"].pop("raters.jsonl"))  # a version 2 has raters
    (bundle / "raters.jsonl").unlink()
    assert _refused_into_new_folder(bundle, tmp_path / "other").startswith(
        "manifest.json: 'files' does not list raters.jsonl, which every bundle of version 2 has"
    )


# --- every row carries every column, and says what it must --------------------------------


def test_a_reply_whose_text_was_deleted_is_refused_not_stored_empty(
    bundle: Path, tmp_path: Path
) -> None:
    _edit_rows(bundle, "completions.jsonl", lambda rows: rows[0].pop("text"))
    fresh = tmp_path / "fresh"
    refused = heart("import", bundle, "--study", fresh, check=False)
    assert refused.returncode == 2
    assert " ".join(refused.stdout.split()) == (
        f"error: {bundle}/completions.jsonl line 1: columns do not match the store (unknown [], "
        "missing ['text']); correct the row, or export the bundle again"
    )
    assert not fresh.exists()


@pytest.mark.parametrize("text", ["", "  \n"])
def test_an_ok_reply_without_text_is_refused(bundle: Path, tmp_path: Path, text: str) -> None:
    _edit_rows(bundle, "completions.jsonl", lambda rows: rows[0].update(text=text))
    assert _refused_into_new_folder(bundle, tmp_path / "fresh") == (
        "completions.jsonl line 1: 'text' must hold the reply when 'status' is ok; correct the "
        "row, or export the bundle again"
    )


def test_a_column_the_store_gained_later_is_required_from_the_version_after(
    bundle: Path, tmp_path: Path
) -> None:
    _edit_rows(bundle, "judgments.jsonl", lambda rows: [r.pop("refused") for r in rows])
    assert _refused_into_new_folder(bundle, tmp_path / "fresh").startswith(
        "judgments.jsonl line 1: columns do not match the store (unknown [], missing ['refused'])"
    )
    _edit_manifest(bundle, lambda m: m.update(version=1))  # written before refused answers
    assert pipeline.import_into(tmp_path / "fresh", bundle).added["judgments.jsonl"] == VERDICTS
    with open_study(tmp_path / "fresh") as study, study.store.session() as s:
        assert set(map(repr, s.scalars(select(JudgmentRow.refused)))) == {"[]"}


def test_a_key_given_twice_in_a_row_is_refused(bundle: Path, tmp_path: Path) -> None:
    path = bundle / "completions.jsonl"
    first, *rest = path.read_text().splitlines(keepends=True)
    path.write_text(first.replace('"text":', '"text":"sneaked in","text":', 1) + "".join(rest))
    _sign(bundle)
    assert _refused_into_new_folder(bundle, tmp_path / "fresh") == (
        "completions.jsonl line 1: 'text' is given twice; keep one"
    )


# --- a refused import leaves nothing behind --------------------------------------------------


@pytest.mark.parametrize("folder", ["missing", "nested/missing", "empty", "holding a file"])
def test_a_refused_bundle_leaves_the_folder_as_it_was(
    bundle: Path, tmp_path: Path, folder: str
) -> None:
    fresh = tmp_path / folder
    if folder == "empty":
        fresh.mkdir()
    if folder == "holding a file":
        fresh.mkdir()
        (fresh / "notes.txt").write_text("mine")
    _edit_rows(bundle, "judgments.jsonl", lambda rows: rows[-1].update(strength=9))
    assert _refused_into_new_folder(bundle, fresh).startswith(
        f"judgments.jsonl line {VERDICTS}: 'strength' must be 1 to 5, got 9"
    )
    assert not (tmp_path / "nested").exists()


@pytest.mark.parametrize("folder", ["missing", "nested/missing"])
def test_a_bundle_refused_while_its_rows_are_stored_leaves_no_folder(
    bundle: Path, tmp_path: Path, folder: str
) -> None:
    # the rows read well; a verdict's judge is missing from judges.jsonl, which only storing
    # the rows finds, once the new store is open in the new folder
    _edit_rows(bundle, "judges.jsonl", lambda rows: rows.remove(_named(rows, "j1")))
    assert "refers to unknown judge 'j1'" in _refused_into_new_folder(bundle, tmp_path / folder)
    assert not (tmp_path / folder.split("/")[0]).exists()


def test_a_refused_table_import_leaves_no_store_behind(tmp_path: Path) -> None:
    root = tmp_path / "study"
    root.mkdir()
    (root / STUDY_FILE).write_text("name: t\nsystems:\n  - {name: m1, kind: dataset, family: d}\n")
    completions = tmp_path / "c.csv"
    completions.write_text("item_id,system,text\ni0,m1,hello\n")
    refused = heart("import", completions, "--table", "completions", "--study", root, check=False)
    assert refused.returncode == 2 and "'item_id' refers to unknown item 'i0'" in refused.stdout
    assert _tree(root) == [STUDY_FILE]


def test_a_bundle_into_a_study_without_its_store_yet_leaves_none_if_refused(
    bundle: Path, tmp_path: Path
) -> None:
    root = tmp_path / "study"
    root.mkdir()
    (root / STUDY_FILE).write_text((bundle / STUDY_FILE).read_text())
    _edit_rows(bundle, "judgments.jsonl", lambda rows: rows[-1].update(strength=9))
    with pytest.raises(ImportRefused):
        pipeline.import_into(root, bundle)
    assert _tree(root) == [STUDY_FILE]


def test_a_folder_with_a_store_but_no_study_file_is_not_made_a_study(
    bundle: Path, tmp_path: Path
) -> None:
    root = tmp_path / "study"
    root.mkdir()
    open_store(f"sqlite:///{root / 'heart.db'}").close()
    before = (root / "heart.db").read_bytes()
    with pytest.raises(HeartError, match=r"holds heart\.db but no study\.yaml; put its study file"):
        pipeline.import_into(root, bundle)
    assert _tree(root) == ["heart.db"] and (root / "heart.db").read_bytes() == before


# --- what a bundle was, it stays ---------------------------------------------------------------


def test_a_bundle_exported_again_from_its_copy_is_the_same(bundle: Path, tmp_path: Path) -> None:
    fresh, again = tmp_path / "fresh", tmp_path / "again"
    summary = pipeline.import_into(fresh, bundle)
    assert summary.added["judgments.jsonl"] == VERDICTS and "provenance.json" in summary.added
    with open_study(fresh) as study:
        pipeline.export(study, again)
        copied = snapshot(study.store)
    names = sorted(p.name for p in bundle.iterdir())
    assert sorted(p.name for p in again.iterdir()) == names
    for name in names:
        if name not in ("manifest.json", "provenance.json"):
            assert (again / name).read_bytes() == (bundle / name).read_bytes(), name
    manifest = json.loads((again / "manifest.json").read_text())
    assert manifest["version"] == BUNDLE_VERSION == 5
    assert sorted(manifest["files"]) == [n for n in names if n != "manifest.json"]
    assert len(copied["bundle_provenance"]) == 1
    assert pipeline.import_into(fresh, again).added == {}  # nothing new


def test_a_store_another_process_made_meanwhile_is_kept(bundle: Path, tmp_path: Path) -> None:
    root = tmp_path / "study"
    root.mkdir()
    (root / STUDY_FILE).write_text((bundle / STUDY_FILE).read_text())
    with pytest.raises(HeartError) as err, staged_study(root) as study:
        store_bundle(study.store, read_bundle(bundle))
        open_study(root).close()  # another heart opens the study, making its store
    assert str(err.value) == (
        f"{root / 'heart.db'}: made by another process meanwhile; run the command again"
    )
    assert _tree(root) == ["heart.db", STUDY_FILE] and _count(root, JudgmentRow) == 0
    assert pipeline.import_into(root, bundle).added["judgments.jsonl"] == VERDICTS


def test_a_new_study_is_placed_where_files_cannot_be_hard_linked(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(*_: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    fresh = tmp_path / "fresh"
    assert pipeline.import_into(fresh, bundle).added["judgments.jsonl"] == VERDICTS
    assert _tree(fresh) == ["heart.db", STUDY_FILE] and _count(fresh, JudgmentRow) == VERDICTS


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b'{"a":"caf\xc3\xa9"}\n' * 3, None),  # a character split across blocks
        (b'{"a":"\xef\xbb\xbf"}\n' * 3, None),  # U+FEFF inside a line
        (b'{"a":"\xc3abcdefg\xa9"}\n', "line 1: byte"),  # a block of ASCII inside a character
        (b'{"a":"plain"}\n{"a":"\xe9"}\n', "line 2: byte"),  # after ASCII blocks
        (b'{"a":"plain"}\n{"a":"x"}\n\xc3', "line 3: byte"),  # cut short at the end
    ],
)
def test_a_files_bytes_are_checked_as_utf8_across_its_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: bytes, problem: str | None
) -> None:
    """The check skips decoding a block of ASCII only while no character is left unfinished."""
    monkeypatch.setattr(_bundles, "READ_BLOCK", 7)
    path = tmp_path / "t.jsonl"
    path.write_bytes(text)
    digest = hashlib.sha256(text).hexdigest()
    if problem is None:
        _bundles._check_file(path, digest)
        return
    with pytest.raises(ImportRefused, match=problem):
        _bundles._check_file(path, digest)
