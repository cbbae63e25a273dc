"""The corpus: every conversation of an ESConv file or folder, once each, in id order."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heart.corpus._layouts import Origin, read_file
from heart.errors import CorpusError
from heart.types import Conversation

SUFFIXES = (".json", ".jsonl")
"""The files of a folder that ``load_corpus`` reads."""


@dataclass
class Corpus:
    """Conversations sorted by id with duplicates (same id) dropped, and where each came from."""

    conversations: list[Conversation] = field(default_factory=list)
    origins: dict[str, Origin] = field(default_factory=dict)  # by conversation id, first seen
    duplicates: int = 0


def load_corpus(path: str | Path) -> Corpus:
    """Read a file, or every ``*.json``/``*.jsonl`` file of a folder in name order.

    Each file's layout is detected on its own, so a folder may mix layouts. A conversation seen
    again (same content, hence same id) is counted in ``duplicates`` and keeps its first origin.
    """
    by_id: dict[str, Conversation] = {}
    origins: dict[str, Origin] = {}
    duplicates = 0
    for file in corpus_files(Path(path)):
        for origin, conversation in read_file(file):
            if conversation.id in by_id:
                duplicates += 1
                continue
            by_id[conversation.id] = conversation
            origins[conversation.id] = origin
    return Corpus([by_id[key] for key in sorted(by_id)], origins, duplicates)


def corpus_files(path: Path) -> list[Path]:
    """``path`` itself if it is a file, else the ESConv files directly inside the folder."""
    if not path.is_dir():
        return [path]  # read_file reports a missing or unreadable file
    try:
        files = sorted(
            (p for p in path.iterdir() if p.suffix.lower() in SUFFIXES and p.is_file()),
            key=lambda p: p.name,
        )
    except OSError as err:
        raise CorpusError(str(path), f"the folder cannot be listed: {err}") from None
    if not files:
        raise CorpusError(
            str(path),
            "the folder has no .json or .jsonl files",
            fix="point to an ESConv file, or a folder holding the ESConv split files",
        )
    return files
