"""The taxonomy of support strategies: a versioned data file shipped with the package, read by
the classifier, the web app's labelling page and the analyses; its hash goes beside every label."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.resources import files

import yaml

from heart.errors import ConfigError
from heart.types import sha256_hex


@dataclass(frozen=True)
class Strategy:
    name: str
    definition: str
    examples: tuple[str, ...]


@dataclass(frozen=True)
class Taxonomy:
    """The strategies of one version of the taxonomy file, and the file's sha256."""

    version: str
    hash: str
    strategies: tuple[Strategy, ...]

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.strategies]

    def glosses(self) -> dict[str, str]:
        """Each strategy's one-line definition, by name."""
        return {s.name: s.definition for s in self.strategies}


@cache
def load_taxonomy(version: str = "v1") -> Taxonomy:
    """The shipped taxonomy ``taxonomy.<version>.yaml``."""
    path = files("heart.strategies").joinpath(f"taxonomy.{version}.yaml")
    if not path.is_file():
        raise ConfigError(f"no strategy taxonomy {version!r}; this release ships v1")
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    strategies = tuple(
        Strategy(s["name"], s["definition"], tuple(s["examples"])) for s in data["strategies"]
    )
    return Taxonomy(version, sha256_hex(text), strategies)
