"""Any study file either loads or is refused with a ConfigError whose every line names the file:
arbitrary text, the demo study with a value changed anywhere, and damaged bytes."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heart.config import StudyConfig, load_study, parse_study
from heart.errors import ConfigError

from .damage import damage_bytes

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
DEMO = files("heart.demo").joinpath("study.yaml").read_text(encoding="utf-8")
SOURCE = "fuzz/study.yaml"

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["human", "model", "all", "sampled", "openai", "-1", "", "http://x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=5,
)


def loads_or_refuses(text: str | bytes) -> StudyConfig | None:
    try:
        return parse_study(text, SOURCE)
    except ConfigError as err:
        lines = str(err).splitlines()
        assert lines and all(line.startswith(SOURCE) for line in lines), str(err)
        return None


@FUZZ
@given(text=st.text())
def test_any_text_loads_or_is_refused(text: str) -> None:
    loads_or_refuses(text)


def places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a parsed study file."""
    out = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += places(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            out += places(inner, (*path, index))
    return out


@FUZZ
@given(data=st.data())
def test_the_demo_with_any_value_changed_loads_or_is_refused(data: st.DataObject) -> None:
    study = yaml.safe_load(DEMO)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(places(study)[1:]))
        parent = study
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(values)
    loads_or_refuses(yaml.safe_dump(study, allow_unicode=True))


@FUZZ
@given(data=st.data())
def test_a_damaged_study_file_loads_or_is_refused(tmp_path: Path, data: st.DataObject) -> None:
    raw = DEMO.encode("utf-8")
    for _ in range(data.draw(st.integers(1, 3))):
        raw = damage_bytes(data, raw)
    loads_or_refuses(raw)
    (tmp_path / "study.yaml").write_bytes(raw)
    try:
        load_study(tmp_path)
    except ConfigError as err:
        assert all(line.startswith(str(tmp_path)) for line in str(err).splitlines())


def test_the_demo_itself_loads() -> None:
    assert loads_or_refuses(DEMO) is not None


@pytest.mark.parametrize("nesting", [200, 5000])
def test_deeply_nested_settings_are_refused(nesting: int) -> None:
    assert loads_or_refuses("name: x\nsystems: " + "[" * nesting + "]" * nesting) is None
