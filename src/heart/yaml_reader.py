"""Reading YAML that comes from outside (study files, a bundle's study.yaml): within a size
limit, with aliases that may repeat values only so far and never themselves, and every problem
one line that names the file and the fix.

A few hundred bytes of nested aliases ("billion laughs") stand for billions of values; PyYAML
composes them as one shared node each, so they are counted here, once per node, before anything
walks or validates the expanded settings.
"""

from __future__ import annotations

from typing import Any

import yaml

from heart.errors import ConfigError

MAX_YAML_BYTES = 256 * 1024
"""The most a settings file may hold (a study file is a few KiB)."""

MAX_YAML_VALUES = 20_000
"""The most values (mappings, lists and scalars) a settings file may stand for, each alias
counted as everything it repeats (a large study holds a few thousand)."""


def check_yaml_size(size: int, source: str) -> None:
    """Refuse a settings file of ``size`` bytes over MAX_YAML_BYTES, before it is read."""
    if size > MAX_YAML_BYTES:
        raise ConfigError(
            f"{source}: {size:,} bytes, over the {MAX_YAML_BYTES:,} a settings file may hold; "
            "keep settings only in it"
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, source: str) -> None:
    """Refuse a document whose aliases repeat values past MAX_YAML_VALUES or hold themselves;
    each node is visited once, however often aliases repeat it."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the nodes being counted: the current one and its parents
    todo: list[tuple[yaml.Node, bool]] = [(root, False)]
    while todo:
        node, counted_children = todo.pop()
        key = id(node)
        if counted_children:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_YAML_VALUES:
                raise ConfigError(
                    f"{source}: its aliases (*name) repeat values to more than "
                    f"{MAX_YAML_VALUES:,} in all; write the repeated settings out, or repeat "
                    "fewer of them"
                )
        elif key in open_nodes:
            raise ConfigError(
                f"{source} line {node.start_mark.line + 1}: the value here holds an alias of "
                "itself, which never ends; write it out"
            )
        elif key not in sizes:
            open_nodes.add(key)
            todo.append((node, True))
            todo += [(child, False) for child in _children(node)]


def compose_yaml(text: str, source: str) -> yaml.Node | None:
    """The node tree of one YAML document (None when empty), within the limits above."""
    check_yaml_size(len(text.encode("utf-8", "surrogatepass")), source)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.reader.ReaderError as exc:
        at = text.count("\n", 0, exc.position) + 1
        raise ConfigError(
            f"{source} line {at}: character U+{exc.character:04X} is not allowed in a YAML "
            "file; remove it"
        ) from None
    except RecursionError:
        raise ConfigError(f"{source}: settings nested too deeply to read; flatten them") from None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        started = (
            f" ({exc.context} started on line {exc.context_mark.line + 1})"
            if exc.context and exc.context_mark
            else ""
        )
        where = f"{source} line {line}" if line else source
        raise ConfigError(f"{where}: not valid YAML: {exc.problem}{started}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML ({exc})") from None
    if node is not None:
        _check_expansion(node, source)
    return node


def construct_yaml(node: yaml.Node, source: str) -> Any:
    """The plain Python values (mappings, lists, text, numbers, ...) of a composed document."""
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    except RecursionError:
        raise ConfigError(f"{source}: settings nested too deeply to read; flatten them") from None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        where = f"{source} line {line}" if line else source
        raise ConfigError(f"{where}: not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML ({exc})") from None
    except (ValueError, KeyError, TypeError, OverflowError):
        raise ConfigError(_unreadable_tag(node, source)) from None
    finally:
        loader.dispose()


def _unreadable_tag(node: yaml.Node, source: str) -> str:
    """Which explicitly tagged value (``!!int 0x1F*a``, ``!!bool maybe``) could not be read as
    its tag says, and where."""
    todo = [node]
    while todo:
        here = todo.pop()
        if isinstance(here, yaml.ScalarNode):
            loader = yaml.SafeLoader("")
            try:
                loader.construct_object(here)
            except (ValueError, KeyError, TypeError, OverflowError):
                tag = here.tag.rsplit(":", 1)[-1]
                return (
                    f"{source} line {here.start_mark.line + 1}: {here.value!r} is not a valid "
                    f"!!{tag}; remove the tag or write a valid value"
                )
            finally:
                loader.dispose()
        elif isinstance(here, yaml.SequenceNode):
            todo.extend(reversed(here.value))
        elif isinstance(here, yaml.MappingNode):
            todo.extend(v for pair in reversed(here.value) for v in reversed(pair))
    return f"{source}: a tagged value could not be read as its tag says; remove the tag"
