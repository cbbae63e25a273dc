"""The checkout's environment holds what uv.lock names, at the versions it names, and nothing
else (``make install-dev`` installs it so); other environments (``make test-latest``, an install
by hand) are not held to the lock."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked() -> dict[str, set[str]]:
    """Every package of uv.lock, with the versions it names (one per Python or platform)."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    named: dict[str, set[str]] = {}
    for package in lock["package"]:
        named.setdefault(_canonical(package["name"]), set()).add(package.get("version", ""))
    return named


def test_the_lock_names_every_direct_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = list(project["project"]["dependencies"])
    for extra in project["project"]["optional-dependencies"].values():
        wanted += extra
    for group in project["dependency-groups"].values():
        wanted += group
    names = {_canonical(re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0]) for spec in wanted}
    assert names - set(_locked()) == set()


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="only the checkout's .venv is installed from the lock",
)
def test_the_environment_is_the_locked_one() -> None:
    locked = _locked()
    found = {
        _canonical(d.metadata["Name"]): d.version
        for d in metadata.distributions(path=[p for p in sys.path if "site-packages" in p])
    }
    strays = {n: v for n, v in found.items() if v not in locked.get(n, set())}
    assert strays == {}, "installed but not as uv.lock names them"
    assert "heart-bench" in found
