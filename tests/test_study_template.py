"""`heart init DIR` without --demo: a study file that loads, names no path that does not exist,
explains every line, and shows every provider commented out; `heart check` on it names only
what is left to fill in."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

from heart.config import parse_study
from heart.study import DEMO_CORPUS

from .helpers import heart

TEMPLATE = files("heart.demo").joinpath("template.yaml").read_text(encoding="utf-8")
EXAMPLE = re.compile(r'^(\s*)# (\s*(?:- )?(?:"[^"]*"|[a-z_0-9]+):(?:\s.*)?)$')
"""A commented-out setting: "# " before a key (or a list entry's first key) at its indentation."""
NO_KEYS = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}


def switched_on(text: str, keep: tuple[str, ...] = ()) -> str:
    """``text`` with every commented-out setting switched on (its "# " deleted), except those
    whose key is in ``keep``."""
    lines = []
    for line in text.splitlines():
        found = EXAMPLE.match(line)
        key = found.group(2).strip().removeprefix("- ").split(":")[0] if found else ""
        lines.append(found.group(1) + found.group(2) if found and key not in keep else line)
    return "\n".join(lines) + "\n"


def _init(root: Path) -> Path:
    out = heart("init", root).stdout
    assert "set items.esconv and switch on your models and judges" in out
    assert f"heart check --study {root}" in out
    return root / "study.yaml"


def _line(text: str, setting: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(setting))


def test_init_writes_a_study_that_loads_and_names_no_missing_path(tmp_path: Path) -> None:
    written = _init(tmp_path / "study").read_text(encoding="utf-8")
    assert written == TEMPLATE
    config = parse_study(written)
    assert config.items.esconv is None
    assert config.ratings.capability_index is None
    assert config.store is None
    assert [(s.name, s.kind.value) for s in config.systems] == [
        ("esconv-original", "dataset"),
        ("human", "human"),
        ("generic-warmth", "control"),
    ]
    assert config.human_system().name == "human"
    assert sorted(p.name for p in (tmp_path / "study").iterdir()) == ["heart.db", "study.yaml"]


def test_every_line_is_explained() -> None:
    for number, line in enumerate(TEMPLATE.splitlines(), 1):
        bare = line.strip()
        assert not bare or bare.startswith("#") or re.search(r"\s#\s", line), (
            f"template line {number} has no comment: {line!r}"
        )


def test_every_example_switched_on_is_valid_and_covers_every_provider() -> None:
    text = switched_on(TEMPLATE)
    assert "# - name:" not in text and "# judges:" not in text
    config = parse_study(text)
    models = {s.name: s.model for s in config.systems if s.model is not None}
    assert {m.provider for m in models.values()} == {"openai", "anthropic", "embedded"}
    assert models["qwen2.5-7b"].base_url == "http://127.0.0.1:8000/v1"  # a local server
    assert models["gpt-4o-mini"].base_url is None  # a hosted API
    assert models["gpt-4o-mini"].api_key_env == "OPENAI_API_KEY"
    assert models["claude-sonnet"].api_key_env == "ANTHROPIC_API_KEY"
    judges = {j.name: j.model for j in config.judges}
    assert {m.provider for m in judges.values()} == {"openai", "anthropic"}
    assert judges["llama-judge"].structured_output == "json_object_schema"
    assert config.items.esconv == "ESConv.json"
    assert config.items.adversarial == 20
    assert config.engine.budget_usd == 20
    assert config.strategies.classifier is not None and config.rationales.coder is not None
    assert config.people.completion_code == "C1A2B3C4"


def test_check_on_a_new_study_names_only_the_corpus(tmp_path: Path) -> None:
    root = tmp_path / "study"
    path = _init(root)
    found = heart("check", "--study", root, check=False)
    assert found.returncode == 1
    assert found.stdout.splitlines() == [
        f"1 problem in {root}:",
        f"  {path} line {_line(TEMPLATE, 'items:')}: 'items': 'esconv' is not set and no items "
        "are stored to run on; set it to an ESConv file or folder (relative to the study folder)",
    ]


def test_check_passes_once_the_corpus_is_given(tmp_path: Path) -> None:
    root = tmp_path / "study"
    path = _init(root)
    corpus = files("heart.demo").joinpath(DEMO_CORPUS).read_text(encoding="utf-8")
    (root / DEMO_CORPUS).write_text(corpus, encoding="utf-8")
    path.write_text(TEMPLATE.replace("# esconv: ESConv.json", f"esconv: {DEMO_CORPUS}"))
    found = heart("check", "--study", root)
    assert found.stdout.startswith(f"All good: {path} valid (3 systems, 0 judges)")


def test_check_with_every_example_on_asks_only_for_the_keys(tmp_path: Path) -> None:
    """With every model switched on, the corpus given and no key in the environment, what is
    left is one line per key variable, naming where it is first needed and who needs it."""
    root = tmp_path / "study"
    path = _init(root)
    corpus = files("heart.demo").joinpath(DEMO_CORPUS).read_text(encoding="utf-8")
    (root / "ESConv.json").write_text(corpus, encoding="utf-8")
    text = switched_on(TEMPLATE, keep=("store",))
    path.write_text(text, encoding="utf-8")
    found = heart("check", "--study", root, check=False, env=NO_KEYS)
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    assert lines == [
        f"2 problems in {root}:",
        f"  {path} line {_line(text, '      api_key_env: OPENAI_API_KEY')}: "
        "'systems.4.model.api_key_env': the environment variable "
        "OPENAI_API_KEY is not set (needed by system gpt-4o-mini, judge gpt-4o-judge, rewriter, "
        "classifier and 1 more); export OPENAI_API_KEY=<your key> before running heart; keys "
        "never go in study.yaml",
        f"  {path} line {_line(text, '      api_key_env: ANTHROPIC_API_KEY')}: "
        "'systems.5.model.api_key_env': the environment variable ANTHROPIC_API_KEY is not set "
        "(needed by system claude-sonnet, judge claude-judge); export ANTHROPIC_API_KEY=<your "
        "key> before running heart; keys never go in study.yaml",
    ]
