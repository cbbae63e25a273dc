"""The study file's reference: every key of study.yaml with its type, its default and what it
does, written from the study model itself so that it cannot drift from what heart accepts.

    from heart.settings_reference import settings_reference
    print(settings_reference())  # the Markdown of docs/study-file.md
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from heart.config import ModelSpec, StudyConfig

DOC_PATH = "docs/study-file.md"
SHARED: dict[type[BaseModel], str] = {ModelSpec: "model section"}
"""Sections used in several places, described once each under their own heading."""
KEY_NAMES = {"providers": "<provider>", "endpoints": "<base URL>"}
"""How a key of the user's choosing is written in a setting's name."""


@dataclass(frozen=True)
class Setting:
    """One key of the study file: its dotted name, type, default and meaning."""

    key: str
    type: str
    default: str
    meaning: str


@dataclass(frozen=True)
class Section:
    """A heading of the reference and the settings under it."""

    title: str
    intro: str
    settings: tuple[Setting, ...]


def _anchor(title: str) -> str:
    return title.lower().replace(" ", "-")


def _parts(annotation: Any) -> tuple[Any, bool]:
    """The annotation without ``None``, and whether ``None`` is allowed."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = get_args(annotation)
        kept = tuple(a for a in args if a is not type(None))
        return (kept[0] if len(kept) == 1 else Union[kept]), len(kept) < len(args)  # noqa: UP007
    return annotation, False


def _choices(values: list[Any]) -> str:
    """Like ```a`, `b` or `c```."""
    quoted = [f"`{v}`" for v in values]
    return " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)


def _kind(annotation: Any) -> str:
    """A type in words: ``integer``, ``one of `a`, `b```, ``list of sections``..."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return " or ".join(_kind(a) for a in get_args(annotation))
    if origin is Literal:
        return "one of " + _choices(list(get_args(annotation)))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + _choices([member.value for member in annotation])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        shared = SHARED.get(annotation)
        return f"[{shared}](#{_anchor(shared + 's')})" if shared else "section"
    if origin is list and get_origin(get_args(annotation)[0]) is Literal:
        return "list of any of " + _choices(list(get_args(get_args(annotation)[0])))
    if origin is list:
        return "list of " + _kind(get_args(annotation)[0]).removeprefix("a ") + "s"
    if origin is dict:
        key, value = get_args(annotation)
        keys = _choices(list(get_args(key))) if get_origin(key) is Literal else _kind(key)
        return f"mapping from {keys} to a {_kind(value)}"
    names = {str: "text", int: "integer", float: "number", bool: "`true` or `false`"}
    if annotation in names:
        return names[annotation]
    raise TypeError(f"the reference cannot describe the type {annotation!r}")


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _limits(info: FieldInfo, annotation: Any) -> str:
    """A field's constraints in words: ``from 1 to 8192``, ``not empty``, a pattern..."""
    rules: dict[str, Any] = {}
    for rule in info.metadata:
        for name in ("gt", "ge", "lt", "le", "min_length", "max_length", "pattern"):
            if getattr(rule, name, None) is not None:
                rules[name] = getattr(rule, name)
    if annotation is int and "gt" in rules:
        rules["ge"] = rules.pop("gt") + 1
    out = []
    if "ge" in rules and "le" in rules:
        out.append(f"from {_number(rules.pop('ge'))} to {_number(rules.pop('le'))}")
    signs = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    out += [f"{sign} {_number(rules[name])}" for name, sign in signs.items() if name in rules]
    unit = "characters" if annotation is str else "entries"
    if rules.get("min_length") == 1:
        out.append("not empty")
    elif "min_length" in rules:
        out.append(f"at least {rules['min_length']} {unit}")
    if "max_length" in rules:
        out.append(f"at most {rules['max_length']} {unit}")
    if "pattern" in rules:
        out.append(f"matching `{rules['pattern']}`")
    return ", ".join(out)


def _type(info: FieldInfo) -> str:
    annotation, optional = _parts(info.annotation)
    kind = ", ".join(filter(None, [_kind(annotation), _limits(info, annotation)]))
    return f"{kind}, or unset" if optional else kind


def _value(value: Any) -> str:
    """A default as it would be written in the file."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, str | int | float):
        return f"`{_number(value)}`"
    if isinstance(value, list | dict) and not value:
        return "none"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(f"`{v}`" for v in value)
    if isinstance(value, dict):
        return "one for each of " + ", ".join(f"`{k}`" for k in value)
    if isinstance(value, BaseModel):
        changed = value.model_dump(mode="json", exclude_defaults=True)
        if type(value) not in SHARED:
            return ""  # its keys follow, each with its own default
        if not changed:
            return f"a {SHARED[type(value)]} with its defaults"
        given = ", ".join(f"`{k}: {_number(v)}`" for k, v in changed.items())
        return f"a {SHARED[type(value)]} with {given}"
    raise TypeError(f"the reference cannot show the default {value!r}")


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return info.default


def _defaults(values: Mapping[str, Any]) -> str:
    """One default for a setting of every entry of a mapping: the commonest value, then the
    entries that differ, as in ``4; embedded: 1``."""
    counts = Counter(values.values())
    common = counts.most_common(1)[0][0]
    others = [f"{key}: {_value(value)}" for key, value in values.items() if value != common]
    return "; ".join([_value(common), *others])


def _settings(
    model: type[BaseModel], prefix: str, given: BaseModel | Mapping[str, BaseModel] | None
) -> Iterator[Setting]:
    """The settings of ``model`` under ``prefix``, then those of its sections, depth first;
    ``given`` holds the defaults that the section's own default sets (an instance, or one per
    key of a mapping), else the model's own defaults apply."""
    for name, info in model.model_fields.items():
        if not info.description or "\n" in info.description:
            raise ValueError(f"{model.__name__}.{name} needs a one-line description")
        key = prefix + name
        if isinstance(given, BaseModel):
            value: Any = getattr(given, name)
            default = _value(value)
        elif given is not None:
            value = None
            default = _defaults({k: getattr(v, name) for k, v in given.items()})
        else:
            value = PydanticUndefined if info.is_required() else _default(info)
            default = "required" if value is PydanticUndefined else _value(value)
        yield Setting(key, _type(info), default, info.description)
        inner, _ = _parts(info.annotation)
        if get_origin(inner) is list:
            inner, value, key = get_args(inner)[0], None, key + "[]"
        elif get_origin(inner) is dict:
            inner, key = get_args(inner)[1], f"{key}.{KEY_NAMES.get(name, '<key>')}"
            value = value or None
        if isinstance(inner, type) and issubclass(inner, BaseModel) and inner not in SHARED:
            below = value if isinstance(value, BaseModel | dict) else None
            yield from _settings(inner, key + ".", below)


def _uses(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[type[BaseModel], str]]:
    """Every place a shared section is used: its class and its key."""
    for name, info in model.model_fields.items():
        inner, _ = _parts(info.annotation)
        key = prefix + name
        if get_origin(inner) is list:
            inner, key = get_args(inner)[0], key + "[]"
        elif get_origin(inner) is dict:
            inner, key = get_args(inner)[1], f"{key}.{KEY_NAMES.get(name, '<key>')}"
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            if inner in SHARED:
                yield inner, key
            else:
                yield from _uses(inner, key + ".")


def study_sections() -> list[Section]:
    """The reference's sections: the top level, one per section of the file, and one per
    shared section (a model section)."""
    every = list(_settings(StudyConfig, "", None))
    top = tuple(s for s in every if "." not in s.key and "[" not in s.key)
    sections = []
    for setting in top:
        below = tuple(s for s in every if s.key.startswith((setting.key + ".", setting.key + "[")))
        if below:
            meaning = setting.meaning[:1].upper() + setting.meaning[1:] + "."
            sections.append(Section(f"`{setting.key}`", meaning, below))
    linked = tuple(
        replace(s, type=_linked(s.type, s.key))
        if any(section.title == f"`{s.key}`" for section in sections)
        else s
        for s in top
    )
    sections.insert(0, Section("Top level", "The keys at the top of the file.", linked))
    for model, name in SHARED.items():
        places = ", ".join(f"`{key}`" for used, key in _uses(StudyConfig) if used is model)
        intro = f"{model.__doc__} The keys of every {name}: {places}."
        own = tuple(_settings(model, "", None))
        sections.append(Section(name[:1].upper() + name[1:] + "s", intro, own))
    return sections


def _linked(kind: str, anchor: str) -> str:
    """A type whose words before any limits link to a heading: ``[list of sections](#x), not
    empty``."""
    words, comma, limits = kind.partition(",")
    return f"[{words}](#{anchor}){comma}{limits}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


HEADER = """\
# The study file

<!-- Written by `heart settings --output {path}` from the study model (src/heart/config.py):
change a description there, then write this file again; a test fails while they differ. -->

Every key `study.yaml` may hold: its type, its default when the key is left out, and what it
does. `heart init DIR` writes a commented study file to start from, and `heart check` says what
is still missing. `items.esconv` is a key inside the section `items`; `systems[].name` is the
key `name` of each entry in the list `systems`; `<provider>` and `<base URL>` stand for a key
you choose. A wrong key or value is refused with its line and field.
"""


def settings_reference() -> str:
    """The reference as Markdown: contents, then one table per section."""
    sections = study_sections()
    out = [HEADER.format(path=DOC_PATH), "## Contents\n"]
    out += [f"- [{s.title.strip('`')}](#{_anchor(s.title.strip('`'))})" for s in sections]
    for section in sections:
        out += ["", f"## {section.title}", "", section.intro, ""]
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        out += [
            f"| `{s.key}` | {_cell(s.type)} | {_cell(s.default)} | {_cell(s.meaning)} |"
            for s in section.settings
        ]
    return "\n".join(out) + "\n"


__all__ = ["DOC_PATH", "Section", "Setting", "settings_reference", "study_sections"]
