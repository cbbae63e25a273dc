"""Versioned prompt templates shipped with the package; each is identified by its content hash."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from heart.errors import ConfigError
from heart.types import sha256_hex

_HERE = Path(__file__).parent


@dataclass(frozen=True)
class Prompt:
    """A shipped template: ``name``, ``version``, ``text`` and the sha256 ``hash`` of the text."""

    name: str
    version: str
    text: str
    hash: str


@cache
def load_prompt(name: str, version: str = "v1") -> Prompt:
    """The template file ``<name>.<version>.txt`` of this package."""
    path = _HERE / f"{name}.{version}.txt"
    if not path.is_file():
        shipped = sorted(p.name.removesuffix(".txt") for p in _HERE.glob(f"{name}.v*.txt"))
        raise ConfigError(f"no prompt template {path.name}; shipped versions: {shipped}")
    text = path.read_text(encoding="utf-8")
    return Prompt(name=name, version=version, text=text, hash=sha256_hex(text))
