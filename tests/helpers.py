"""Running the real `heart` command in a subprocess, as a user would."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markupsafe import escape

from heart.people import CHOICES, GOLD_REPLY, attention_instruction

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""Debian's Chromium, which the browser tests drive through Playwright."""


def require_chromium() -> None:
    """Skip the test when Chromium is not installed; in CI, fail it instead."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium (scripts/chromium-up.sh)")
        pytest.skip("chromium is not installed (scripts/chromium-up.sh installs it)")


_BASE_ENV = {"PATH": "/usr/bin:/bin"} | {
    name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ
}
"""What a `heart` subprocess inherits: a plain PATH, and PYTHONPATH so that a checkout run with
its own sources on the path tests those sources, not the installed ones."""


def heart(
    *args: str | Path,
    check: bool = True,
    timeout: float = 900,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m heart ARGS``; fail the test with its output when it fails and ``check``."""
    result = subprocess.run(
        [sys.executable, "-m", "heart", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**_BASE_ENV, "COLUMNS": "200", "HOME": str(Path.home()), **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"heart {' '.join(map(str, args))} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


def set_items(study: Path, n: int) -> None:
    """Change the number of regular items of a demo study."""
    path = study / "study.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("regular: 12", f"regular: {n}"), encoding="utf-8")


def attentive_choice(page: str) -> str | None:
    """What a careful rater answers on a judge page that holds a gold or attention check (the
    page cannot tell them apart, a reader can): the option an attention check's instruction
    names, or the original reply over the dismissive one; None on a real pair."""
    for choice in CHOICES:
        if str(escape(attention_instruction(choice))) in page:
            return choice
    where = page.find(str(escape(GOLD_REPLY)))
    if where >= 0:
        return "B+" if where < page.index('id="reply-b"') else "A+"  # the dismissive reply loses
    return None


def rewrite_study(
    root: Path,
    systems: list[str],
    judges: list[str] | None = None,
    rest: str = "",
    items: int = 12,
) -> None:
    """Keep a demo study's name, seed and corpus, with ``items`` regular items and no
    adversarial ones, and give it these systems and judges (one YAML flow mapping each) and
    ``rest`` (more top-level settings)."""
    path = root / "study.yaml"
    head = re.split(r"^items:", path.read_text(encoding="utf-8"), maxsplit=1, flags=re.M)[0]
    text = f"{head}items: {{esconv: esconv_demo.jsonl, regular: {items}}}\nsystems:\n"
    text += "".join(f"  - {s}\n" for s in systems)
    if judges:
        text += "judges:\n" + "".join(f"  - {j}\n" for j in judges)
    path.write_text(text + rest, encoding="utf-8")
