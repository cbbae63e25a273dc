"""The capability index file: what it accepts, and one line per problem naming the file, the
line and the field (unknown systems, missing values, duplicates, non-numbers, values out of
range, bad headers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heart.capability import index_path, parse_capability_index, read_capability_index
from heart.config import parse_study
from heart.errors import ConfigError, HeartError, IndexFileError

SYSTEMS = {"gpt-4o", "claude", "llama", "human"}


def _problems(text: str | bytes) -> list[str]:
    with pytest.raises(IndexFileError) as caught:
        parse_capability_index(text, "index.csv", SYSTEMS)
    assert isinstance(caught.value, HeartError)
    return str(caught.value).splitlines()


def test_a_spreadsheet_export_is_read_with_its_lines() -> None:
    text = "\ufeff System , Value ,source\r\ngpt-4o,36,AA v3\r\n\r\nclaude, 63.5 ,\r\n"
    text += " llama ,2e1,\r\n"
    index = parse_capability_index(text.encode("utf-8"), "index.csv", SYSTEMS)
    assert index.values == {"gpt-4o": 36.0, "claude": 63.5, "llama": 20.0}
    assert index.lines == {"gpt-4o": 2, "claude": 4, "llama": 5}
    assert index.path == "index.csv"


def test_an_unknown_system_names_its_line_and_field() -> None:
    (problem,) = _problems("system,value\ngpt-4o,36\ngpt-9,70\n")
    assert problem.startswith("index.csv line 3, field 'system': 'gpt-9' is not a system")
    assert "claude, gpt-4o, human, llama" in problem


def test_a_missing_value_names_its_line_and_field() -> None:
    problems = _problems("system,value\ngpt-4o,\nclaude\n")
    assert problems == [
        "index.csv line 2, field 'value': empty; give a number, or leave the system out of the "
        "file",
        "index.csv line 3, field 'value': empty; give a number, or leave the system out of the "
        "file",
    ]


def test_a_duplicate_names_both_lines() -> None:
    (problem,) = _problems("system,value\nclaude,63\ngpt-4o,36\nclaude,64\n")
    assert problem == (
        "index.csv line 4, field 'system': 'claude' is listed again (first on line 2); keep one "
        "line per system"
    )


@pytest.mark.parametrize(
    ("cell", "message"),
    [("high", "'high' is not a number"), ("65%", "'65%' is not a number"),
     ("inf", "'inf' is not a finite number"), ("nan", "'nan' is not a finite number")],
)  # fmt: skip
def test_a_value_that_is_not_a_finite_number_is_named(cell: str, message: str) -> None:
    (problem,) = _problems(f"system,value\nllama,{cell}\n")
    assert problem == f"index.csv line 2, field 'value': {message}"


@pytest.mark.parametrize("cell", ["1e308", "-1e308", "1.5e15", "-2e16", "9e-16", "-5e-324"])
def test_a_value_out_of_range_is_named(cell: str) -> None:
    (problem,) = _problems(f"system,value\nllama,{cell}\n")
    assert problem == (
        f"index.csv line 2, field 'value': '{cell}' is out of range: a value is 0 or of a size "
        "from 1e-15 to 1e15; give the index on such a scale (a count of parameters or FLOPs as "
        "its log10)"
    )


def test_values_at_the_ends_of_the_range_are_read() -> None:
    text = "system,value\nllama,1e15\nclaude,-1e15\ngpt-4o,1e-15\nhuman,-0\n"
    index = parse_capability_index(text, "index.csv", SYSTEMS)
    assert index.values == {"llama": 1e15, "claude": -1e15, "gpt-4o": 1e-15, "human": 0.0}


def test_a_decimal_comma_is_caught_as_an_extra_cell() -> None:
    (problem,) = _problems("system,value\nclaude,63,5\n")
    assert problem.startswith("index.csv line 2: 3 cells, but the header names 2 columns")


def test_every_problem_gets_its_own_line() -> None:
    problems = _problems("system,value\ngpt-9,1\ngpt-4o,x\n,3\ngpt-4o,4\n")
    assert [p.split(":")[0] for p in problems] == [
        "index.csv line 2, field 'system'",
        "index.csv line 3, field 'value'",
        "index.csv line 4, field 'system'",
        "index.csv line 5, field 'system'",
    ]
    assert "empty; name a system of the study" in problems[2]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,score\ngpt-4o,3\n", "index.csv line 1: no column 'system' or 'value'"),
        ("system,value,Value\ngpt-4o,3,4\n", "index.csv line 1: column 'value' appears twice"),
        ("", "index.csv: the file is empty"),
        ("system,value\n\n", "index.csv: no system is listed"),
    ],
)
def test_a_file_without_the_columns_or_rows_is_refused(text: str, message: str) -> None:
    (problem,) = _problems(text)
    assert problem.startswith(message)


def test_a_byte_that_is_not_utf8_names_its_line() -> None:
    (problem,) = _problems(b"system,value\nclaude,63\nll\xe9ma,3\n")
    assert problem.startswith("index.csv line 3: byte 25")
    assert problem.endswith("save the file as UTF-8")


def test_a_missing_file_names_the_setting_to_check(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError) as caught:
        read_capability_index(tmp_path / "nope.csv", SYSTEMS, "--index")
    assert str(caught.value) == (
        f"{tmp_path / 'nope.csv'}: the capability index cannot be read (No such file or "
        "directory); check --index"
    )


def test_the_option_overrides_the_study_file_whose_path_is_relative_to_the_study() -> None:
    root = Path("/studies/s")
    assert index_path(root, None) is None
    assert index_path(root, "aa.csv") == root / "aa.csv"
    assert index_path(root, "/data/aa.csv") == Path("/data/aa.csv")
    assert index_path(root, "aa.csv", Path("other.csv")) == Path("other.csv")


def test_the_study_file_names_the_index_and_refuses_an_empty_name() -> None:
    base = "name: s\nsystems: [{name: m, kind: dataset, family: d}]\nratings:\n"
    config = parse_study(base + "  capability_index: aa.csv\n")
    assert config.ratings.capability_index == "aa.csv"
    assert parse_study(base + "  level: 0.9\n").ratings.capability_index is None
    with pytest.raises(ConfigError, match=r"study.yaml line 4: 'ratings.capability_index'"):
        parse_study(base + "  capability_index: ''\n")


def test_a_name_no_system_can_open_names_the_setting_to_check(tmp_path: Path) -> None:
    path = tmp_path / "a\x00b.csv"
    with pytest.raises(IndexFileError) as caught:
        read_capability_index(path, SYSTEMS, "ratings.capability_index in study.yaml")
    assert str(caught.value) == (
        f"{path}: the capability index cannot be read (embedded null byte); check "
        "ratings.capability_index in study.yaml"
    )
