"""Starting `heart` imports what the command needs and no more: the heavy libraries (the store
and its migrations, the statistics, the figures, the web app, the model SDKs and the embedded
model) come in with the commands that use them. Read from Python's own import report
(PYTHONPROFILEIMPORTTIME), so no timing is involved."""

from __future__ import annotations

import re
from pathlib import Path

from .helpers import heart

HEAVY = {
    "alembic", "anthropic", "fastapi", "httpx", "jinja2", "llama_cpp", "matplotlib", "numpy",
    "openai", "pandas", "scipy", "sklearn", "sqlalchemy", "statsmodels", "uvicorn",
}  # fmt: skip
"""Libraries that take a good part of a second, or more, to import."""
_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", re.MULTILINE)


def _imported(*args: str | Path) -> set[str]:
    """The top-level packages that ``heart ARGS`` imports."""
    report = heart(*args, env={"PYTHONPROFILEIMPORTTIME": "1"}).stderr
    found = {name.split(".")[0] for name in _IMPORTED.findall(report)}
    assert "heart" in found  # the report was read
    return found


def test_version_and_help_import_no_heavy_library() -> None:
    for args in (["--version"], ["--help"], ["items", "--help"], ["report", "--help"]):
        assert _imported(*args) & HEAVY == set(), args


def test_commands_on_a_study_import_alembic_only_to_migrate(tmp_path: Path) -> None:
    root = tmp_path / "study"
    assert "alembic" in _imported("init", root, "--demo")  # writes the store's schema
    assert _imported("items", "list", "--study", root) & HEAVY == {"sqlalchemy"}
    assert _imported("check", "--study", root) & HEAVY == {"sqlalchemy"}
    board = _imported("leaderboard", "--study", root) & HEAVY
    assert board == {"sqlalchemy", "numpy", "scipy"}  # the board's fit, without its figures
