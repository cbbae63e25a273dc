"""Which heart is running: its version, and its git commit when it runs from a checkout.

Kept apart from the study's provenance so that ``heart --version`` reads no store."""

from __future__ import annotations

import re
from pathlib import Path

import heart

PACKAGE = "heart-bench"
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # sha-1, or sha-256 repositories


def source_root() -> Path:
    """The folder heart's sources sit in when they run from a checkout (``src/heart`` under it)."""
    return Path(heart.__file__).resolve().parents[2]


def _git_dir(root: Path) -> Path | None:
    """``root/.git``, or the folder a worktree's ``.git`` file points to."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            path = Path(text.removeprefix("gitdir:").strip())
            return path if path.is_absolute() else (root / path).resolve()
    return None


def _commit(text: str) -> str | None:
    text = text.strip()
    return text if _COMMIT.fullmatch(text) else None


def _resolve(git_dir: Path, ref: str) -> str | None:
    """The commit a ref names: its loose file (in the worktree's folder or the shared one),
    else its line in packed-refs."""
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in (git_dir, common):
        loose = base / ref
        if loose.is_file():
            return _commit(loose.read_text(encoding="utf-8"))
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return _commit(sha)
    return None


def git_commit(root: Path | None = None) -> str | None:
    """The commit checked out at ``root`` (default: heart's own source folder) when it holds
    heart's sources in a git checkout; None otherwise, and whenever git's files cannot be read.
    Reads the files git keeps, so it needs no git program."""
    root = source_root() if root is None else root
    try:
        if not (root / "src" / "heart" / "__init__.py").is_file():
            return None  # an installed package: the folder above it is no checkout of heart
        git_dir = _git_dir(root)
        if git_dir is None:
            return None
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref:"):
            return _resolve(git_dir, head.removeprefix("ref:").strip())
        return _commit(head)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def version_line() -> str:
    """``heart-bench 0.1.0``, with ``(commit …)`` when heart runs from a git checkout."""
    commit = git_commit()
    return f"{PACKAGE} {heart.__version__}" + (f" (commit {commit})" if commit else "")
