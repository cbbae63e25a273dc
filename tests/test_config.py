"""The study file: valid files load, bad ones name the line and field."""

from __future__ import annotations

import time
from importlib.resources import files
from pathlib import Path

import pytest

from heart.config import STUDY_FILE, PairDesign, load_study, parse_study, setting_lines, store_url
from heart.errors import ConfigError
from heart.study import open_study
from heart.types import SystemKind
from heart.yaml_reader import MAX_YAML_BYTES, MAX_YAML_VALUES

DEMO = files("heart.demo").joinpath("study.yaml").read_text(encoding="utf-8")


def test_demo_study_validates() -> None:
    config = parse_study(DEMO)
    assert config.name == "heart-demo"
    assert [s.kind for s in config.systems] == [
        SystemKind.MODEL,
        SystemKind.DATASET,
        SystemKind.CONTROL,
        SystemKind.HUMAN,
    ]
    assert config.human_system().name == "human"  # so that `heart serve` starts on it
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


@pytest.mark.parametrize(
    ("value", "tag"),
    [("0x1F*a", "int"), ("abc", "float"), ("maybe", "bool"), ("2020-02-30", "timestamp")],
)
def test_a_value_its_explicit_tag_cannot_read_names_line_and_tag(value: str, tag: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_study(f"name: x\nsystems: []\nratings:\n  level: !!{tag} {value}\n", "study.yaml")
    assert str(err.value) == (
        f"study.yaml line 4: '{value}' is not a valid !!{tag}; "
        "remove the tag or write a valid value"
    )


def test_a_key_set_twice_is_refused_with_both_lines() -> None:
    with pytest.raises(ConfigError) as err:
        parse_study("name: x\nseed: 1\nseed: 2\nsystems: []\n", "study.yaml")
    assert "study.yaml line 3: 'seed' is set twice (first on line 2)" in str(err.value)


SYSTEMS = """name: x
systems:
  - {name: original, kind: dataset, family: dataset}
"""


def test_an_unknown_human_system_is_refused_with_its_line() -> None:
    text = SYSTEMS + "people:\n  writers_per_item: 2\n  human_system: crowd\n"
    with pytest.raises(ConfigError) as err:
        parse_study(text, "study.yaml")
    message = str(err.value)
    assert message.startswith("study.yaml line 6: 'people.human_system': names no system of kind")
    assert "'crowd'" in message and message.endswith("or set people.human_system to one of them")
    assert "\n" not in message


def test_a_human_system_of_another_kind_is_refused() -> None:
    text = SYSTEMS + "people: {human_system: original}\n"
    with pytest.raises(ConfigError) as err:
        parse_study(text, "study.yaml")
    assert str(err.value).startswith(
        "study.yaml line 4: 'people.human_system': names system 'original', of kind 'dataset'"
    )


def test_a_system_holding_the_default_human_name_must_be_of_kind_human() -> None:
    text = SYSTEMS + "  - name: human\n    kind: control\n    family: control\n    reply: hi\n"
    with pytest.raises(ConfigError) as err:
        parse_study(text, "study.yaml")
    assert str(err.value).startswith(
        "study.yaml line 5: 'systems.1.kind': system 'human' has the name people's replies go to"
    )


def test_a_study_without_a_human_system_loads_until_people_are_asked() -> None:
    config = parse_study(SYSTEMS)
    assert config.people.human_system == "human"
    with pytest.raises(ConfigError) as err:
        config.human_system("s/study.yaml")
    assert str(err.value) == (
        "s/study.yaml: people's replies need a system of kind 'human', and the study has none; "
        "add this line under systems: - {name: human, kind: human, family: human}"
    )
    named = SYSTEMS + "  - {name: crowd, kind: human, family: human}\npeople: {human_system: crowd}"
    crowd = parse_study(named).human_system()
    assert (crowd.name, crowd.kind) == ("crowd", SystemKind.HUMAN)


def test_a_baseline_outside_the_systems_names_its_line() -> None:
    with pytest.raises(ConfigError) as err:
        parse_study(SYSTEMS + "pairs:\n  design: baseline\n  baseline: nobody\n", "study.yaml")
    assert str(err.value).startswith("study.yaml line 6: 'pairs.baseline': pairs.baseline must")


def test_a_byte_that_is_not_utf8_names_the_file_and_its_line(tmp_path: Path) -> None:
    (tmp_path / "study.yaml").write_bytes(SYSTEMS.encode() + b"# caf\xe9 notes\nseed: 1\n")
    with pytest.raises(ConfigError) as err:
        load_study(tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'study.yaml'} line 4: byte {len(SYSTEMS) + 5} (b'\\xe9') is not valid "
        "UTF-8; save the file as UTF-8"
    )


def test_a_utf8_study_file_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    (tmp_path / "study.yaml").write_bytes(b"\xef\xbb\xbf" + SYSTEMS.encode())
    assert load_study(tmp_path).systems[0].name == "original"


def test_a_control_character_names_its_line() -> None:
    with pytest.raises(ConfigError) as err:
        parse_study(SYSTEMS + "seed: 1\x07\n", "study.yaml")
    assert str(err.value) == (
        "study.yaml line 4: character U+0007 is not allowed in a YAML file; remove it"
    )


def test_a_setting_named_with_an_unprintable_character_is_shown_escaped() -> None:
    with pytest.raises(ConfigError) as err:
        parse_study(SYSTEMS + 'people:\n  "writers\\x1e": 2\n', "study.yaml")
    assert str(err.value).splitlines() == [
        "study.yaml line 5: 'people.'writers\\x1e'': unknown setting; check its spelling and "
        "indentation, got 2"
    ]


# --- YAML from outside: bounded in size and in what its aliases expand to --------------------


def nested_aliases(levels: int = 9, fan: int = 9) -> str:
    """A few hundred bytes whose aliases expand to ``fan ** levels`` values ("billion laughs")."""
    lines = [SYSTEMS.rstrip(), "a0: &a0 [" + ", ".join(['"lol"'] * fan) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_nested_aliases_are_refused_at_once(tmp_path: Path) -> None:
    text = nested_aliases()
    assert len(text.encode()) < 700
    (tmp_path / "study.yaml").write_text(text)
    for read in (lambda: parse_study(text, "study.yaml"), lambda: load_study(tmp_path)):
        started = time.perf_counter()
        with pytest.raises(ConfigError) as err:
            read()
        assert time.perf_counter() - started < 1
        message = str(err.value)
        assert "\n" not in message and message.endswith(
            f"study.yaml: its aliases (*name) repeat values to more than {MAX_YAML_VALUES:,} "
            "in all; write the repeated settings out, or repeat fewer of them"
        )
    started = time.perf_counter()
    assert setting_lines(text) == {}  # `heart check` places problems with it
    assert time.perf_counter() - started < 1


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        parse_study(SYSTEMS + "judges: &loop [*loop]\n", "study.yaml")
    assert str(err.value) == (
        "study.yaml line 4: the value here holds an alias of itself, which never ends; write it out"
    )


def test_a_study_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(SYSTEMS + "# " + "x" * MAX_YAML_BYTES + "\n")
    size = path.stat().st_size
    problem = (
        f"study.yaml: {size:,} bytes, over the {MAX_YAML_BYTES:,} a settings file may hold; "
        "keep settings only in it"
    )
    with pytest.raises(ConfigError) as err:
        load_study(tmp_path)
    assert str(err.value) == f"{tmp_path}/{problem}"
    with pytest.raises(ConfigError) as err:
        parse_study(path.read_text(), "study.yaml")
    assert str(err.value) == problem


def test_aliases_and_merge_keys_within_bounds_still_load() -> None:
    text = (
        "name: x\n"
        "systems:\n"
        "  - {name: a, kind: model, family: f, model: &small {provider: openai, model: m}}\n"
        "  - {name: b, kind: model, family: g, model: *small}\n"
        "  - {name: c, kind: model, family: h, model: {<<: *small, model: n}}\n"
    )
    config = parse_study(text, "study.yaml")
    assert [(s.model.provider, s.model.model) for s in config.systems if s.model] == [
        ("openai", "m"),
        ("openai", "m"),
        ("openai", "n"),
    ]


@pytest.mark.parametrize(
    ("key", "kind"), [("? [items]\n: 1\n", "list"), ("? {a: 1}\n: 1\n", "mapping")]
)
def test_a_setting_named_by_a_list_or_mapping_is_refused_with_its_line(key: str, kind: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_study("name: x\n" + key, "s.yaml")
    assert str(err.value) == (
        f"s.yaml line 2: a {kind} is used as a setting's name; a name is plain text"
    )


def test_a_bad_url_in_a_list_of_replicas_names_the_field_its_index_and_line() -> None:
    text = """name: x
systems:
  - name: local
    kind: model
    family: f
    model:
      provider: openai
      model: m
      base_url:
        - http://127.0.0.1:8001/v1
        - 127.0.0.1:8002
"""
    with pytest.raises(ConfigError) as err:
        parse_study(text, "study.yaml")
    assert str(err.value) == (
        "study.yaml line 11: 'systems.0.model.base_url.1': '127.0.0.1:8002' is not an http(s) "
        "URL like http://127.0.0.1:8000/v1"
    )
    twice = text.replace("127.0.0.1:8002", "HTTP://127.0.0.1:8001/v1/")
    with pytest.raises(ConfigError, match=r"line 11: 'systems.0.model.base_url.1': names the "):
        parse_study(twice, "study.yaml")
    config = parse_study(text.replace("- 127.0.0.1:8002", "- http://127.0.0.1:8002/v1/"))
    model = config.systems[0].model
    assert model is not None and model.endpoint == "http://127.0.0.1:8001/v1"
    assert model.replicas == ("http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1")


def test_a_relative_sqlite_store_is_read_from_the_study_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`store: sqlite:///data/heart.db` is a path of the study file like any other: a command
    run from elsewhere opens the study's store, not one in the folder it was run from."""
    study = tmp_path / "study"
    (study / "data").mkdir(parents=True)
    (study / STUDY_FILE).write_text(
        "name: s\nstore: sqlite:///data/heart.db\nsystems: [{name: a, kind: dataset, family: d}]\n",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_study(study)
    assert store_url(config, study) == f"sqlite:///{study.resolve() / 'data' / 'heart.db'}"
    open_study(study).close()
    assert (study / "data" / "heart.db").is_file()
    assert list(elsewhere.iterdir()) == []
    for url in ("sqlite://", "sqlite:///:memory:", f"sqlite:///{tmp_path}/abs.db"):
        assert store_url(config.model_copy(update={"store": url}), study) == url
    pg = "postgresql+psycopg://heart@db.example.org/heart"
    assert store_url(config.model_copy(update={"store": pg}), study) == pg


def test_a_batch_api_asked_for_a_model_with_replicas_is_refused_at_its_list() -> None:
    """Replicas answer live (a batch API reaches one server): an endpoint setting that asks
    for the batch API of a model with several replicas is refused, not silently ignored."""
    text = """name: x
systems:
  - name: local
    kind: model
    family: f
    model:
      provider: openai
      model: m
      base_url:
        - http://127.0.0.1:8001/v1
        - http://127.0.0.1:8002/v1
engine:
  endpoints:
    http://127.0.0.1:8001/v1: {batch: BATCH}
"""
    with pytest.raises(ConfigError) as err:
        parse_study(text.replace("BATCH", "true"), "study.yaml")
    assert str(err.value) == (
        "study.yaml line 9: 'systems.0.model.base_url': lists 2 replicas, but engine.endpoints "
        "sets batch: true for http://127.0.0.1:8001/v1; a batch API reaches one server and "
        "replicas answer live: set batch: false there, or give one base_url"
    )
    config = parse_study(text.replace("BATCH", "false"))  # live, as it says
    assert config.engine.batches("openai", "http://127.0.0.1:8001/v1") is False


WEIGHTED = "name: x\nsystems:\n  - {name: a, kind: dataset, family: d}\nratings:\n  weights: %s\n"


def test_axis_weights_are_scaled_to_sum_to_one() -> None:
    ratings = parse_study(WEIGHTED % "{E: 2, T: 2, H: 1}").ratings
    assert ratings.weights == {"H": 0.2, "E": 0.4, "T": 0.4}
    assert parse_study(WEIGHTED % "{A: 0, R: 3}").ratings.weights == {"A": 0.0, "R": 1.0}
    assert parse_study(DEMO).ratings.weights is None


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ("{X: 1}", "unknown axis 'X'; the axes are H, E, A, R, T (capital letters)"),
        ("{e: 1}", "unknown axis 'e'; the axes are H, E, A, R, T (capital letters)"),
        ("{E: -1}", "the weight of E must be a non-negative number, got -1"),
        ("{E: .inf}", "the weight of E must be a non-negative number, got inf"),
        ("{E: yes}", "the weight of E must be a number, got True"),
        ("{E: high}", "the weight of E must be a number, got 'high'"),
        ("{E: 0, T: 0}", "give at least one axis a positive weight"),
        ("[E, T]", "expected a mapping of axis letters to weights, e.g. {E: 2, T: 2, H: 1}"),
    ],
)
def test_bad_axis_weights_name_the_line_and_field(weights: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_study(WEIGHTED % weights)
    assert str(error.value) == f"study.yaml line 5: 'ratings.weights': {message}"


def test_the_style_bootstrap_setting_offers_the_methods_the_bootstrap_takes() -> None:
    # The setting spells the methods out (the study file is read without the statistics'
    # imports), so it must stay in step with them and with the threshold it states.
    from typing import get_args

    from heart.config import RatingsSpec
    from heart.stats import STYLE_BOOTSTRAP_METHODS
    from heart.stats._style_bootstrap import ONE_STEP_FROM

    field = RatingsSpec.model_fields["style_bootstrap"]
    assert get_args(field.annotation) == STYLE_BOOTSTRAP_METHODS
    assert field.default == "auto"
    assert f"{ONE_STEP_FROM // 1_000_000} million" in (field.description or "")
