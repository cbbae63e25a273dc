"""A study: its folder, its validated config and its store, with the roster kept in sync."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from heart.config import StudyConfig, load_study, store_url
from heart.prompts import Prompt, load_prompt
from heart.store import JudgeRow, PromptRow, Store, SystemRow, open_store


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

    def close(self) -> None:
        self.store.close()


def sync_roster(study: Study) -> None:
    """Write the config's systems and LLM judges to the store (upserts; never deletes)."""
    with study.store.session() as session:
        for spec in study.config.systems:
            session.merge(
                SystemRow(
                    name=spec.name,
                    kind=spec.kind.value,
                    family=spec.family,
                    spec=spec.model_dump(mode="json", exclude={"name", "kind", "family"}),
                )
            )
        for judge in study.config.judges:
            session.merge(
                JudgeRow(
                    name=judge.name,
                    source="llm",
                    family=judge.family,
                    spec=judge.model_dump(mode="json", exclude={"name", "family"}),
                )
            )


def open_study(root: Path) -> Study:
    """Load ``root/study.yaml``, open (and migrate) its store, and sync the roster."""
    config = load_study(root)
    study = Study(root=root, config=config, store=open_store(store_url(config, root)))
    sync_roster(study)
    return study
