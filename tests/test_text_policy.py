"""One text policy for every way text comes in: the web app's forms, completions, judgments and
labels files (CSV and JSON Lines) and bundle rows refuse the same characters, each with one line
naming the file, line and field (or the form's field) and the fix; nothing is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from heart.errors import ImportRefused, TaskRefused
from heart.import_checks import _first_text_problem, text_problem
from heart.people import plain_text
from heart.release import export_bundle, import_table
from heart.store import Store
from heart.types import sha256_hex

from .hostile import json_values
from .rows import refused_bundle, seed_study, snapshot

REFUSED = {
    "\x07": "an invisible control character (U+0007)",  # BEL
    "\x1b": "an invisible control character (U+001B)",  # ESC
    "\x85": "an invisible control character (U+0085)",  # NEL
    "\x9b": "an invisible control character (U+009B)",  # CSI
    "\u200e": "an invisible control character (U+200E LEFT-TO-RIGHT MARK)",
    "\u200f": "an invisible control character (U+200F RIGHT-TO-LEFT MARK)",
    "\u061c": "an invisible control character (U+061C ARABIC LETTER MARK)",
    "\u202e": "an invisible control character (U+202E RIGHT-TO-LEFT OVERRIDE)",
    "\u2067": "an invisible control character (U+2067 RIGHT-TO-LEFT ISOLATE)",
}
"""Characters every entry refuses, and how each names them."""

TEXT = "I hear{} you"
"""A value holding the character at its 7th place."""


def _study(store: Store, root: Path) -> None:
    """Systems m1, m2 and human, item i0, and a reply of each stored by import (ann wrote the
    human one)."""
    root.mkdir(exist_ok=True)
    (root / "study.yaml").write_text("name: t\nsystems: []\n")
    seed_study(store, ["m1", "m2", "human"], items=1)
    path = root / "stored.csv"
    path.write_text("item_id,system,text,contributor\ni0,m1,one,\ni0,m2,two,\ni0,human,three,ann\n")
    import_table(store, path, "completions", seed=0)


def _row(kind: str, field: str, value: str) -> dict[str, object]:
    """A row of a file of ``kind`` that the study would take, with ``field`` set to ``value``."""
    row: dict[str, object] = {
        "completions": {"item_id": "i0", "system": "m1", "text": "hello", "contributor": "bo"},
        "judgments": {"item_id": "i0", "judge": "bo", "a_system": "m1", "b_system": "m2",
                      "winner": "a", "rationale": "warmer"},
        "labels": {"completion_id": "cp-x", "rater": "bo", "strategies": ["Affirmation"]},
    }[kind]  # fmt: skip
    row[field] = [value] if field == "strategies" else value
    return row


def _as_csv(row: dict[str, object]) -> str:
    values = [";".join(v) if isinstance(v, list) else str(v) for v in row.values()]
    return ",".join(row) + "\n" + ",".join(values) + "\n"


ENTRIES = [
    ("completions", "csv", "text"),
    ("completions", "jsonl", "text"),
    ("completions", "csv", "contributor"),
    ("completions", "jsonl", "item_id"),
    ("judgments", "csv", "judge"),
    ("judgments", "jsonl", "rationale"),
    ("labels", "csv", "rater"),
    ("labels", "jsonl", "strategies"),
]


CASES = [(char, *ENTRIES[n % len(ENTRIES)]) for n, char in enumerate(REFUSED)]
"""Each refused character through one entry, every entry at least once (the sweep below checks
that the web and the imports refuse one set)."""


@pytest.mark.parametrize(("char", "kind", "suffix", "field"), CASES)
def test_a_file_field_holding_a_refused_character_is_refused_by_file_line_and_field(
    store: Store, tmp_path: Path, char: str, kind: str, suffix: str, field: str
) -> None:
    _study(store, tmp_path)
    row = _row(kind, field, TEXT.format(char))
    path = tmp_path / f"in.{suffix}"
    path.write_text(_as_csv(row) if suffix == "csv" else json.dumps(row) + "\n")
    before = snapshot(store)
    with pytest.raises(ImportRefused) as refused:
        import_table(store, path, kind, seed=0)
    assert snapshot(store) == before
    line = 2 if suffix == "csv" else 1
    assert str(refused.value) == (
        f"{path} line {line}: '{field}' holds {REFUSED[char]} at character 7; correct the row"
    )


@pytest.mark.parametrize("char", REFUSED)
def test_a_web_answer_holding_a_refused_character_is_refused_the_same_way(char: str) -> None:
    with pytest.raises(TaskRefused) as refused:
        plain_text(TEXT.format(char), "reply")
    assert str(refused.value) == (
        f"the reply holds {REFUSED[char]} at character 7; delete it (pasted text can bring one "
        "in) and send it again"
    )


def _resigned(bundle: Path, name: str, edit: dict[str, object]) -> None:
    """Change every row of one bundle file and sign it again in the manifest."""
    path = bundle / name
    rows = [json.loads(line) | edit for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = sha256_hex(path.read_text())
    (bundle / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("name", "column", "char", "value", "where"),
    [
        ("completions.jsonl", "text", "\u202e", TEXT.format("\u202e"), ""),
        ("completions.jsonl", "contributor", "\x1b", TEXT.format("\x1b"), ""),
        ("judges.jsonl", "name", "\u200f", TEXT.format("\u200f"), ""),
        ("items.jsonl", "context", "\x07", [{"role": "seeker", "text": TEXT.format("\x07")}],
         ' of [0]["text"]'),
        ("systems.jsonl", "spec", "\u061c", {TEXT.format("\u061c"): 1}, " of a key"),
    ],
)  # fmt: skip
def test_a_bundle_row_holding_a_refused_character_is_refused_by_file_line_and_field(
    store: Store, tmp_path: Path, name: str, column: str, char: str, value: object, where: str
) -> None:
    _study(store, tmp_path / "s")
    seed_study(store, [], judges=["g1"])
    bundle = tmp_path / "bundle"
    export_bundle(store, tmp_path / "s", bundle)
    _resigned(bundle, name, {column: value})
    assert refused_bundle(bundle, tmp_path / "fresh.db") == (
        f"{bundle / name} line 1: '{column}' holds {REFUSED[char]} at character 7{where}; "
        "correct the row, or export the bundle again"
    )


def test_web_forms_and_imports_refuse_exactly_the_same_characters() -> None:
    """Every character of the Basic Multilingual Plane: the web app refuses it exactly when an
    import does, and the policy's refused set is the controls, the bidirectional marks,
    embeddings, overrides and isolates, and the surrogates."""
    web, imports = set(), set()
    for code in range(0x10000):
        char = chr(code)
        try:
            plain_text(char, "reply")
        except TaskRefused:
            web.add(code)
        if text_problem(char) is not None:
            imports.add(code)
    expected = {*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)}
    expected |= {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
    expected |= set(range(0xD800, 0xE000))
    assert web == imports == expected


@pytest.mark.parametrize("text", ["Tabs\tand\nline feeds\r\n.", "é ✓ مرحبا 😊", "one\u2028two"])
def test_text_of_any_script_tabs_and_line_breaks_pass_every_entry(text: str) -> None:
    assert plain_text(text, "reply") == text
    assert text_problem(text) is None


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_quick_look_at_a_json_value_finds_what_the_walk_that_names_it_finds(
    value: object,
) -> None:
    """An import looks at a value's strings quickly and walks it for the message only when
    something is refused: both say the same of every value, hostile, nested or clean."""
    assert text_problem(value) == _first_text_problem(value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"a": ["ok", {"b\u202e": 1}]}, 'holds {} of a key in ["a"][1]'),
        (["ok", "I hear\x07 you"], "holds {} of [1]"),
        ({"k": "v"}, None),
    ],
)
def test_a_refused_json_value_is_named_where_its_first_problem_is(
    value: object, problem: str | None
) -> None:
    found = text_problem(value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem.split("{}")[0])
        assert found.endswith(problem.split("{}")[1])
