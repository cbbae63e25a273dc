"""A study: its folder, its validated config and its store, with the roster kept in sync."""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heart.config import (
    DEFAULT_STORE,
    STUDY_FILE,
    StudyConfig,
    load_study,
    parse_study,
    store_url,
)
from heart.errors import HeartError
from heart.prompts import Prompt, load_prompt
from heart.store import JudgeRow, PromptRow, Store, SystemRow, add_if_missing, open_store
from heart.types import JudgeSource, SystemKind

if TYPE_CHECKING:
    from heart.analyses import EvidenceRule, StyleInputs


@dataclass
class Study:
    root: Path
    config: StudyConfig
    store: Store

    @property
    def report_dir(self) -> Path:
        return self.root / "report"

    def evidence_rule(self) -> EvidenceRule:
        """The study's thresholds below which a system's standing is preliminary."""
        from heart.analyses import EvidenceRule

        given = self.config.ratings.preliminary
        return EvidenceRule(conversations=given.conversations, comparisons=given.comparisons)

    def style_inputs(self, completions: Iterable[str]) -> StyleInputs | None:
        """What the boards need to control for style (None when ``ratings.style_control`` is
        off): the texts of ``completions``, the generic-warmth phrases and the bootstrap's
        method."""
        from heart.analyses import StyleInputs, load_reply_texts, warmth_phrases

        ratings = self.config.ratings
        if not ratings.style_control:
            return None
        controls = [
            s.reply for s in self.config.systems if s.kind is SystemKind.CONTROL and s.reply
        ]
        return StyleInputs(
            load_reply_texts(self.store, completions),
            warmth_phrases(ratings.warmth_phrases, controls),
            ratings.style_bootstrap,
        )

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


def open_study(root: str | Path, *, read_only: bool = False) -> Study:
    """Load ``root/study.yaml``, open (and migrate) its store, and sync the roster.

    ``read_only`` opens the store for reading only, as it is: nothing is migrated, synced or
    written, so a study on a read-only file (or one another process is running) can be read."""
    root = Path(root)
    config = load_study(root)
    store = open_store(store_url(config, root), read_only=read_only)
    study = Study(root=root, config=config, store=store)
    if not read_only:
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


def _folders_to_make(root: Path) -> list[Path]:
    """``root`` and those of its parents that do not exist yet, the outermost last."""
    missing = []
    for folder in (root, *root.parents):
        if folder.exists():
            break
        missing.append(folder)
    return missing


def _remove_sqlite(path: Path) -> None:
    """Remove a file, and the write-ahead log and shared memory SQLite keeps beside a store."""
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with suppress(FileNotFoundError):
            part.unlink()


def _place_new(source: Path, target: Path) -> None:
    """Give ``source`` the name ``target`` too, never over a file another process made meanwhile
    (where the file system has no hard links, it is moved after a last look)."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise
    except OSError:
        if target.exists():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target)) from None
        os.replace(source, target)


@contextmanager
def staged_study(root: str | Path, config_text: str | None = None) -> Iterator[Study]:
    """The study at ``root`` for a change that is all or nothing even when it makes the study.

    With ``config_text`` (for a folder without a study file), a new study of that file, which
    must keep its data in the folder (no ``store`` setting), and whose roster is not synced: the
    change brings its own. A study without its store yet (the SQLite file in its folder) gets
    one. A new store, and a new study file, are made under a temporary name and put in place only
    when the block ends without an error; otherwise they are removed, with any folder made for
    them, so that a refused change leaves nothing behind. A study that has its store is opened
    as it is (the change's own transaction keeps it all or nothing)."""
    root = Path(root)
    target = root / STUDY_FILE
    if config_text is None:
        config = load_study(root)
    else:
        if target.exists():
            raise HeartError(f"{target} already exists; import into the study it belongs to")
        config = parse_study(config_text, str(target))
        assert config.store is None, "a new study from outside keeps its data in its folder"
    store_file = root / DEFAULT_STORE
    if config.store is not None or store_file.exists():
        if config_text is not None:
            raise HeartError(
                f"{root} holds {DEFAULT_STORE} but no {STUDY_FILE}; put its study file back, or "
                "choose a new folder"
            )
        with open_study(root) as study:
            yield study
        return
    made = _folders_to_make(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HeartError(
            f"{root}: cannot be made a folder ({exc.strerror}); choose another"
        ) from None
    staged = root / f".{DEFAULT_STORE}.{uuid.uuid4().hex}.new"
    placed: list[Path] = []
    store: Store | None = None
    try:
        store = open_store(f"sqlite:///{staged.resolve()}")
        study = Study(root=root, config=config, store=store)
        if config_text is None:
            sync_roster(study)
        yield study
        study.close()
        try:
            _place_new(staged, store_file)
            placed.append(store_file)
            if config_text is not None:
                with target.open("x", encoding="utf-8") as out:
                    placed.append(target)
                    out.write(config_text)
        except FileExistsError:
            taken = target if placed else store_file
            raise HeartError(
                f"{taken}: made by another process meanwhile; run the command again"
            ) from None
    except BaseException:
        if store is not None:
            store.close()
        for path in (*placed, staged):
            _remove_sqlite(path)
        for folder in made:
            with suppress(OSError):
                folder.rmdir()  # only when empty
        raise
    finally:
        _remove_sqlite(staged)
