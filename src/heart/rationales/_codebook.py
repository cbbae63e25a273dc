"""The rationale codebook: a versioned data file shipped with the package, read by both coders and
the analysis; its hash goes beside every code.

Every pattern is checked when the file loads so that it runs in time linear in the rationale: no
backreferences, every repeat bounded (at most ``MAX_REPEAT`` times), and a repeat of more than
once repeats a single character or class. Optional parts (``?``) may hold anything else.
"""

from __future__ import annotations

import re
import re._constants as sre  # type: ignore[import-not-found]  # a parsed pattern's node kinds
import re._parser as sre_parse  # type: ignore[import-not-found]  # the one way to see its shape
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any, Literal

import yaml

from heart.errors import ConfigError
from heart.types import Axis, sha256_hex

Polarity = Literal["strength", "weakness", "neutral"]
POLARITIES: tuple[Polarity, ...] = ("strength", "weakness", "neutral")
MAX_REPEAT = 40
_SINGLE = {sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.CATEGORY}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}


@dataclass(frozen=True)
class Theme:
    """One theme: its id, a short name, the HEART axis it belongs to, whether it is a micro-skill,
    whether rationales name it as a strength or a weakness, what it means, and its patterns."""

    id: str
    name: str
    axis: Axis
    skill: bool
    polarity: Polarity
    description: str
    patterns: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class Codebook:
    """The themes of one version of the codebook file, and the file's sha256."""

    version: str
    hash: str
    themes: tuple[Theme, ...]

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.themes]

    def theme(self, theme_id: str) -> Theme:
        for theme in self.themes:
            if theme.id == theme_id:
                return theme
        raise KeyError(theme_id)


class UnsafePattern(ValueError):
    """A pattern whose running time could grow faster than the text; the message says why."""


def _check_nodes(nodes: Any, pattern: str) -> None:
    for op, arg in nodes:
        if op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            raise UnsafePattern(f"{pattern!r}: backreferences are not allowed")
        if op in _REPEATS:
            _, high, body = arg
            if high == sre.MAXREPEAT or high > MAX_REPEAT:
                raise UnsafePattern(
                    f"{pattern!r}: every repeat needs a bound of at most {MAX_REPEAT} "
                    "(write {1,30}, not + or *)"
                )
            if high > 1 and not (len(body) == 1 and body[0][0] in _SINGLE):
                raise UnsafePattern(
                    f"{pattern!r}: only a single character or class may repeat more than once"
                )
            _check_nodes(body, pattern)
        elif op is sre.SUBPATTERN:
            _check_nodes(arg[-1], pattern)
        elif op is sre.BRANCH:
            for branch in arg[1]:
                _check_nodes(branch, pattern)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            _check_nodes(arg[1], pattern)
        elif op is sre.ATOMIC_GROUP:
            _check_nodes(arg, pattern)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A codebook pattern, compiled case-insensitively; UnsafePattern when it could run in more
    than linear time, ValueError when it is not a regular expression."""
    try:
        parsed = sre_parse.parse(pattern)
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    _check_nodes(parsed, pattern)
    return compiled


def parse_codebook(text: str, version: str, source: str) -> Codebook:
    """A codebook from its YAML text; ConfigError naming the theme and field when it is wrong."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("themes"), list):
        raise ConfigError(f"{source}: expected a mapping with a list of themes")
    themes: list[Theme] = []
    for n, entry in enumerate(data["themes"], 1):
        where = f"{source}: theme {n} ({entry.get('id', '?') if isinstance(entry, dict) else '?'})"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping")
        try:
            axis = Axis(entry["axis"])
            polarity = entry["polarity"]
            if polarity not in POLARITIES:
                raise ValueError(f"polarity must be one of {', '.join(POLARITIES)}")
            patterns = tuple(compile_pattern(p) for p in entry["patterns"])
            if not patterns:
                raise ValueError("needs at least one pattern")
            themes.append(
                Theme(str(entry["id"]), str(entry["name"]), axis, bool(entry["skill"]), polarity,
                      str(entry["description"]), patterns)
            )  # fmt: skip
        except KeyError as exc:
            raise ConfigError(f"{where}: missing {exc.args[0]!r}") from None
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    ids = [t.id for t in themes]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{source}: theme ids must be unique")
    return Codebook(version, sha256_hex(text), tuple(themes))


@cache
def load_codebook(version: str = "v1") -> Codebook:
    """The shipped codebook ``codebook.<version>.yaml``."""
    path = files("heart.rationales").joinpath(f"codebook.{version}.yaml")
    if not path.is_file():
        raise ConfigError(f"no rationale codebook {version!r}; this release ships v1")
    return parse_codebook(path.read_text(encoding="utf-8"), version, f"codebook.{version}.yaml")
