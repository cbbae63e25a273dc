"""A study: its folder, its validated config and its store, with the roster kept in sync."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from heart.config import STUDY_FILE, StudyConfig, load_study, parse_study, store_url
from heart.errors import HeartError
from heart.prompts import Prompt, load_prompt
from heart.store import JudgeRow, PromptRow, Store, SystemRow, add_if_missing, open_store
from heart.types import JudgeSource


@dataclass
class Study:
    root: Path
    config: StudyConfig
    store: Store

    @property
    def report_dir(self) -> Path:
        return self.root / "report"

    def use_prompt(self, name: str, version: str = "v1") -> Prompt:
        """Load a shipped prompt template and record it in the store by its hash."""
        prompt = load_prompt(name, version)
        with self.store.session() as session:
            session.merge(
                PromptRow(
                    hash=prompt.hash, name=prompt.name, version=prompt.version, text=prompt.text
                )
            )
        return prompt

    def esconv_path(self, override: Path | None = None) -> Path:
        """The ESConv file or folder to build items from: ``override``, else ``items.esconv``
        (relative to the study folder)."""
        if override is not None:
            return override
        if self.config.items.esconv is None:
            raise HeartError(
                f"{self.root / STUDY_FILE}: 'items.esconv' is not set; set it to an ESConv file "
                "or folder, or pass --esconv PATH"
            )
        path = Path(self.config.items.esconv)
        return path if path.is_absolute() else self.root / path

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Study:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def sync_roster(study: Study) -> None:
    """Write the config's systems and LLM judges to the store (upserts; never deletes). Safe
    when several commands open the study at once: a row another one adds meanwhile is there
    to update, not a duplicate."""
    rows: list[tuple[type[SystemRow] | type[JudgeRow], dict[str, Any]]] = [
        (SystemRow, {"name": spec.name, "kind": spec.kind.value, "family": spec.family,
                     "spec": spec.model_dump(mode="json", exclude={"name", "kind", "family"})})
        for spec in study.config.systems
    ]  # fmt: skip
    rows += [
        (JudgeRow, {"name": judge.name, "source": JudgeSource.LLM.value, "family": judge.family,
                    "spec": judge.model_dump(mode="json", exclude={"name", "family"})})
        for judge in study.config.judges
    ]  # fmt: skip
    with study.store.session() as session:
        for model, values in rows:
            add_if_missing(session, model, **values)
            session.merge(model(**values))


def open_study(root: str | Path) -> Study:
    """Load ``root/study.yaml``, open (and migrate) its store, and sync the roster."""
    root = Path(root)
    config = load_study(root)
    study = Study(root=root, config=config, store=open_store(store_url(config, root)))
    sync_roster(study)
    return study


DEMO_CORPUS = "esconv_demo.jsonl"


def create_study(
    directory: str | Path, *, demo: bool = False, config_text: str | None = None
) -> Path:
    """Write a new study folder's study.yaml (the template, the demo study and its corpus, or
    ``config_text``) and create its store; returns the study file. Refuses to overwrite one."""
    directory = Path(directory)
    target = directory / STUDY_FILE
    if target.exists():
        raise HeartError(f"{target} already exists; choose another folder or edit that file")
    data = files("heart.demo")
    if config_text is None:
        name = "study.yaml" if demo else "template.yaml"
        config_text = data.joinpath(name).read_text(encoding="utf-8")
    parse_study(config_text, str(target))  # a bad file is refused before anything is written
    directory.mkdir(parents=True, exist_ok=True)
    if demo:
        corpus = data.joinpath(DEMO_CORPUS).read_text(encoding="utf-8")
        (directory / DEMO_CORPUS).write_text(corpus, encoding="utf-8")
    target.write_text(config_text, encoding="utf-8")
    open_study(directory).close()
    return target
