"""The study file: valid files load, bad ones name the line and field."""

from __future__ import annotations

from importlib.resources import files

import pytest

from heart.config import PairDesign, parse_study
from heart.errors import ConfigError
from heart.types import SystemKind

DEMO = files("heart.demo").joinpath("study.yaml").read_text(encoding="utf-8")


def test_demo_study_validates() -> None:
    config = parse_study(DEMO)
    assert config.name == "heart-demo"
    assert [s.kind for s in config.systems] == [
        SystemKind.MODEL,
        SystemKind.DATASET,
        SystemKind.CONTROL,
    ]
    assert config.pairs.design is PairDesign.ALL
    assert config.judges[0].model.provider == "embedded"


def test_template_validates() -> None:
    text = files("heart.demo").joinpath("template.yaml").read_text(encoding="utf-8")
    assert parse_study(text).items.regular == 280


def test_bad_value_names_line_and_field() -> None:
    text = DEMO.replace("regular: 12", "regular: -3")
    line = DEMO.splitlines().index("  regular: 12") + 1
    with pytest.raises(ConfigError) as err:
        parse_study(text, "study.yaml")
    message = str(err.value)
    assert f"study.yaml line {line}" in message
    assert "'items.regular'" in message
    assert "greater than 0" in message and "-3" in message


def test_unknown_field_is_refused_with_its_line() -> None:
    text = DEMO.replace("seed: 2026", "seed: 2026\nsede: 1")
    line = text.splitlines().index("sede: 1") + 1
    with pytest.raises(ConfigError) as err:
        parse_study(text, "study.yaml")
    assert f"study.yaml line {line}: 'sede': unknown setting" in str(err.value)


def test_model_system_without_model_section() -> None:
    text = """
name: x
systems:
  - name: m
    kind: model
    family: openai
"""
    with pytest.raises(ConfigError) as err:
        parse_study(text, "s.yaml")
    assert "s.yaml line 4: 'systems.0'" in str(err.value)
    assert "no 'model' section" in str(err.value)


def test_duplicate_system_names() -> None:
    text = """
name: x
systems:
  - {name: a, kind: dataset, family: dataset}
  - {name: a, kind: dataset, family: dataset}
"""
    with pytest.raises(ConfigError, match="system name 'a' appears twice"):
        parse_study(text)


def test_invalid_yaml_names_line() -> None:
    with pytest.raises(ConfigError) as err:
        parse_study("name: x\nsystems:\n  - [unclosed\n", "study.yaml")
    assert "study.yaml line 4: not valid YAML" in str(err.value)
    assert "flow sequence started on line 3" in str(err.value)


def test_a_key_set_twice_is_refused_with_both_lines() -> None:
    with pytest.raises(ConfigError) as err:
        parse_study("name: x\nseed: 1\nseed: 2\nsystems: []\n", "study.yaml")
    assert "study.yaml line 3: 'seed' is set twice (first on line 2)" in str(err.value)
