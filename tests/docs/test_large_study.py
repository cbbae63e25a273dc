"""The README's *A large study*: its study file is a valid study with the replicas, judges and
batches it describes, and its dry run on the real ESConv corpus prints what the README quotes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from heart.cli import app
from heart.config import parse_study

from .markdown import ROOT, blocks, section

SECTION = blocks(section((ROOT / "README.md").read_text(encoding="utf-8"), "A large study"))
(STUDY_FILE,) = [b.text for b in SECTION if b.info == "yaml"]
(QUOTED,) = [b.text for b in SECTION if b.info == "text"]
STORE = "store: postgresql+psycopg://heart@db.example.org/heart"


def test_the_large_study_file_is_valid_with_its_replicas_and_judges() -> None:
    study = parse_study(STUDY_FILE)
    replicas = {s.name: len(s.model.replicas) for s in study.systems if s.model is not None}
    assert replicas == {
        "llama-3.3-70b": 3,
        "llama-3.1-8b": 2,
        "mistral-small": 2,
        "gpt-4.1": 1,
        "gpt-4.1-mini": 1,
        "claude-sonnet": 1,
        "claude-haiku": 1,
    }
    assert [(j.name, len(j.model.replicas)) for j in study.judges] == [
        ("gpt-judge", 1),
        ("claude-judge", 1),
        ("qwen-judge", 4),
    ]
    assert study.engine.batch.enabled
    assert study.items.regular + study.items.adversarial == 300


def test_the_large_study_costs_what_the_readme_says(
    tmp_path: Path, esconv_splits: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert STORE in STUDY_FILE  # the README's store, swapped for a local one below
    text = STUDY_FILE.replace(STORE, "store: sqlite:///heart.db").replace(
        "esconv: esconv", f"esconv: {esconv_splits}"
    )
    (tmp_path / "study.yaml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(app, ["run", "--study", str(tmp_path), "--dry-run"])
    assert result.exit_code == 0, result.output
    printed = re.sub(r"\s+", " ", result.output)
    for line in QUOTED.strip().splitlines():
        assert re.sub(r"\s+", " ", line) in printed
