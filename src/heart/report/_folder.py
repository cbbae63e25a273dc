"""Putting a report in place whole. It is written into a new hidden folder beside its own and
takes that folder's place only when every file is written: a report that fails or is
interrupted leaves the previous one as it was, and no file of an older report (the CSV of a
section the new one no longer has) stays beside the new one. Files of the user's own in the
folder (anything a report does not write) are copied into the new one."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from heart.errors import ReportError

REPORT_SUFFIXES = (".csv", ".md", ".html")
"""The kinds of file a report writes (with provenance.json): those of an older report are not
kept."""


def _beside(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}-{secrets.token_hex(4)}")


def _keep_own_files(old: Path, new: Path, report_files: tuple[str, ...]) -> None:
    """Copy into ``new`` what ``old`` holds that no report writes."""
    for entry in old.iterdir():
        if entry.suffix in REPORT_SUFFIXES or entry.name in report_files:
            continue
        if (new / entry.name).exists():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, new / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, new / entry.name, follow_symlinks=False)


def _swap(new: Path, target: Path) -> None:
    """Put ``new`` at ``target``; the old folder is moved aside first and removed last."""
    if not target.exists():
        new.rename(target)
        return
    old = _beside(target, "old")
    target.rename(old)
    try:
        new.rename(target)
    except BaseException:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def report_folder(directory: Path, report_files: tuple[str, ...] = ()) -> Iterator[Path]:
    """An empty folder beside ``directory`` to write a report into. When the block ends
    without error, the folder takes ``directory``'s place (with the user's own files of the old
    one, ``report_files`` aside); when it raises, or is interrupted, the folder is removed and
    ``directory`` is left as it was."""
    target = directory.resolve()  # a link to the report folder stays a link to it
    if target.exists() and not target.is_dir():
        raise ReportError(f"{directory} is a file, not a folder; move it away and report again")
    target.parent.mkdir(parents=True, exist_ok=True)
    new = _beside(target, "new")
    new.mkdir()
    try:
        yield new
        if target.is_dir():
            _keep_own_files(target, new, report_files)
        _swap(new, target)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
