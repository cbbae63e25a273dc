"""The settings reference: written from the study model, complete, and in step with
docs/study-file.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from heart.cli import app
from heart.config import parse_study
from heart.settings_reference import DOC_PATH, settings_reference, study_sections

ROOT = Path(__file__).resolve().parents[1]

EVERYTHING = """
name: every-setting
seed: 7
store: sqlite:///elsewhere.db
items:
  esconv: corpus.jsonl
  screener: {provider: openai, model: m, base_url: "http://127.0.0.1:9/v1"}
  hostility_rater: {provider: anthropic, model: c, api_key_env: K}
systems:
  - {name: gpt, kind: model, family: openai, model: {provider: openai, model: g,
     price: {input_per_mtok: 1, output_per_mtok: 2}}}
  - {name: warm, kind: control, family: control, reply: "That sounds hard."}
  - {name: human, kind: human, family: human}
judges:
  - {name: j, family: anthropic, model: {provider: anthropic, model: c}}
pairs: {design: sampled, per_item: 2, baseline: gpt}
ratings: {preliminary: {conversations: 3}, capability_index: index.csv}
engine:
  budget_usd: 5
  endpoints:
    "http://127.0.0.1:9/v1": {concurrency: 2}
people:
  {completion_code: C0DE, prolific_study: s1, tasks_per_person: 9, flow: [{write: 0.25}, judge]}
strategies: {classifier: {provider: embedded}, completions: 4}
rationales: {coder: {provider: embedded}}
"""


def _keys(value: Any, prefix: str = "") -> Iterator[str]:
    """Every key under ``value`` (a study's settings as plain data), written the way the
    reference writes it: list entries as ``[]``, a model section's keys on their own, the
    providers and endpoints by a stand-in name."""
    if isinstance(value, dict):
        if "provider" in value and "n_ctx" in value:
            prefix = "model:"
        for key, inner in value.items():
            if prefix.endswith(("engine.providers.", "engine.endpoints.")):
                name = "<provider>" if "providers" in prefix else "<base URL>"
                yield from _keys(inner, f"{prefix}{name}.")
                continue
            yield prefix + key
            yield from _keys(inner, f"{prefix}{key}.")
    elif isinstance(value, list):
        for inner in value:
            yield from _keys(inner, prefix.removesuffix(".") + "[].")


def test_the_written_reference_is_up_to_date() -> None:
    written = (ROOT / DOC_PATH).read_text(encoding="utf-8")
    assert written == settings_reference(), (
        f"{DOC_PATH} is out of date: write it again with `heart settings -o {DOC_PATH}`"
    )


def test_every_key_a_study_can_set_is_described_once() -> None:
    settings = parse_study(EVERYTHING).model_dump(mode="json")
    expected = {k.replace("model:", "") for k in _keys(settings)}
    described = [s.key for section in study_sections() for s in section.settings]
    assert len(described) == len(set(described))
    assert set(described) == expected
    assert all(s.meaning for section in study_sections() for s in section.settings)


def _row(key: str) -> tuple[str, str, str]:
    for section in study_sections():
        for setting in section.settings:
            if setting.key == key:
                return setting.type, setting.default, setting.meaning
    raise KeyError(key)


def test_types_and_defaults_are_those_the_model_enforces() -> None:
    assert _row("judging.reasks")[:2] == ("integer, from 0 to 5", "`1`")
    assert _row("name")[:2] == ("text, not empty", "required")
    assert _row("ratings.level")[:2] == ("number, > 0, < 1", "`0.95`")
    assert _row("engine.providers.<provider>.timeout_s")[1] == "`120`; embedded: `600`"
    assert _row("engine.providers.<provider>.concurrency")[1] == "`4`; embedded: `1`"
    assert _row("items.rewriter")[1] == "a model section with `max_tokens: 600`"
    assert _row("systems[].kind")[0] == "one of `model`, `human`, `dataset` or `control`"
    assert _row("pairs.per_item")[:2] == ("integer, ≥ 1, or unset", "unset")
    assert _row("max_tokens")[:2] == ("integer, from 1 to 8192", "`128`")
    # what the reference says is what the model does
    defaults = parse_study("name: x\nsystems: [{name: d, kind: dataset, family: d}]")
    assert defaults.engine.providers["embedded"].timeout_s == 600
    assert defaults.items.rewriter.max_tokens == 600
    assert defaults.judging.reasks == 1


def test_a_setting_without_a_description_is_refused() -> None:
    from heart.settings_reference import _settings

    class Bare(BaseModel):
        told: int = Field(1, description="a setting with its meaning")
        untold: int = 2

    with pytest.raises(ValueError, match=r"Bare\.untold needs a one-line description"):
        list(_settings(Bare, "", None))


def test_heart_settings_prints_and_writes_the_reference(tmp_path: Path) -> None:
    printed = CliRunner().invoke(app, ["settings"])
    assert printed.exit_code == 0
    assert printed.stdout == settings_reference()
    target = tmp_path / "study-file.md"
    written = CliRunner().invoke(app, ["settings", "--output", str(target)])
    assert written.exit_code == 0, written.output
    assert target.read_text(encoding="utf-8") == settings_reference()
