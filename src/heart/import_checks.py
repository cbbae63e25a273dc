"""What an imported row may hold: each store column's type, length and vocabulary, and the shape
of its JSON, so an import refuses a bad value by file, line and field instead of storing it
(or failing inside the database)."""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from operator import add, itemgetter
from typing import Any, get_args, get_origin, get_type_hints

from pydantic import ValidationError
from sqlalchemy import JSON, Boolean, Column, Float, Integer, String, inspect

from heart.errors import ImportRefused
from heart.store import Base
from heart.text_policy import REFUSED, refused_character
from heart.types import Axis, JudgeSource, Order, Side, Status, Subset, SystemKind, Turn

MAX_INT = 2**31 - 1
"""The largest integer every store holds (PostgreSQL's ``integer``)."""

STRENGTHS = range(1, 6)
"""A verdict's strength: 1 to 5."""

MAX_DEPTH = 32
"""The deepest a JSON value in a row may nest (a study's own values stay within a few levels)."""

VOCABULARY: dict[tuple[str, str], tuple[str, ...]] = {
    ("systems", "kind"): tuple(SystemKind),
    ("judges", "source"): tuple(JudgeSource),
    ("items", "subset"): tuple(Subset),
    ("completions", "status"): tuple(Status),
    ("judgments", "status"): tuple(Status),
    ("judgments", "order"): tuple(Order),
    ("judgments", "winner"): (Side.A, Side.B, Side.TIE),
}
"""Columns whose text is one of a few words (table, column)."""


JSON_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "true/false"),
    ((int, float), "the number"),
    (str, "the text"),
    (list, "a list"),
    (dict, "an object"),
)
"""How a message names each kind of JSON value (true/false before numbers: bool is an int)."""


class KeyTwice(ValueError):
    """A JSON object that gives one key twice (json.loads would keep the last without a
    word)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"{key!r} is given twice")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s object_pairs_hook for outside JSON: raises KeyTwice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise KeyTwice(key)
        out[sys.intern(key)] = value  # a million rows share their column names
    return out


def parse_json(text: str, where: str, fix: str) -> Any:
    """One JSON value from outside; bad JSON, or an object that gives one key twice, is refused
    in one line naming ``where`` and ``fix``."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except KeyTwice as twice:
        raise ImportRefused(f"{where}: {twice}; keep one") from None
    except RecursionError:
        raise ImportRefused(f"{where}: JSON nested too deeply; {fix}") from None
    except ValueError as exc:
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ImportRefused(f"{where}: not valid JSON ({problem}); {fix}") from None


def describe(value: Any) -> str:
    """A value as a message names it: its JSON kind and a short form of it."""
    if value is None:
        return "nothing (null)"
    kind = next((name for types, name in JSON_KINDS if isinstance(value, types)), "the value")
    try:
        short = json.dumps(value, ensure_ascii=False, default=str)
    except RecursionError:
        short = "[[[..." if isinstance(value, list) else "{...}"
    short = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in short)
    return f"{kind} {short if len(short) <= 40 else short[:37] + '...'}"


def text_problem(value: Any) -> str | None:
    """What keeps a string, or any string (or key) inside a JSON value, out of a store: a
    character the text policy refuses (heart.text_policy: controls, NUL among them, which
    PostgreSQL refuses; bidirectional controls; lone surrogates), or nesting past MAX_DEPTH."""
    if isinstance(value, str):  # the common case, and the quick look below, before the walk
        found = refused_character(value)
        return f"holds {found}" if found else None
    return None if _storable(value, 0) else _first_text_problem(value)


def _storable(value: Any, depth: int) -> bool:
    """Whether ``value`` (at ``depth``) holds no refused character and nests within MAX_DEPTH:
    a quick look that names nothing, so that only a refused value is walked for its message."""
    if isinstance(value, str):
        return REFUSED.search(value) is None
    if isinstance(value, dict):
        return depth < MAX_DEPTH and all(
            (not isinstance(k, str) or REFUSED.search(k) is None) and _storable(v, depth + 1)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return depth < MAX_DEPTH and all(_storable(v, depth + 1) for v in value)
    return True


def _first_text_problem(value: Any) -> str | None:
    """``text_problem`` by a walk in reading order that names where the first problem is."""
    # (value, depth, its path inside ``value``, how a message names where it is)
    todo: list[tuple[Any, int, str, str]] = [(value, 0, "", "")]
    while todo:
        item, depth, path, where = todo.pop()
        if isinstance(item, str):
            found = refused_character(item)
            if found:
                return f"holds {found}{where}"
        elif isinstance(item, dict | list):
            if depth == MAX_DEPTH:
                return f"is nested more than {MAX_DEPTH} levels deep"
            inner: list[tuple[Any, int, str, str]] = []
            named = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
            for name, part in named:
                at = f"{path}[{json.dumps(name)}]"
                if isinstance(item, dict):
                    inner.append(
                        (name, depth + 1, path, f" of a key{' in ' + path if path else ''}")
                    )
                inner.append((part, depth + 1, at, f" of {at}"))
            todo += reversed(inner)  # the first problem in reading order is the one named
    return None


@cache
def _json_types(model: type[Base]) -> dict[str, type]:
    """The Python type (dict or list) each JSON column of ``model`` holds."""
    out: dict[str, type] = {}
    hints = get_type_hints(model)
    for column in inspect(model).columns:
        if isinstance(column.type, JSON):
            (held,) = get_args(hints[str(column.key)])
            out[str(column.key)] = get_origin(held) or held
    return out


@cache
def json_columns(model: type[Base]) -> frozenset[str]:
    """The columns of ``model``'s table that hold JSON (objects or arrays)."""
    return frozenset(_json_types(model))


@cache
def _columns(model: type[Base]) -> list[tuple[str, Column[Any], type | None]]:
    """Each column of ``model``'s table with its key and the type its JSON holds (None when it
    holds no JSON), looked up once per table rather than once per row."""
    json_types = _json_types(model)
    return [(str(c.key), c, json_types.get(str(c.key))) for c in inspect(model).columns]


def _column_problem(column: Column[Any], json_type: type | None, value: Any) -> str | None:
    """Why ``value`` cannot go into ``column``, or None."""
    if value is None:
        return None if column.nullable else "must be given, got nothing (null)"
    kind = column.type
    if isinstance(kind, String):
        if not isinstance(value, str):
            return f"must be text, got {describe(value)}"
        if kind.length is not None and len(value) > kind.length:
            return f"is {len(value)} characters long; the most it may be is {kind.length}"
        return text_problem(value)
    if isinstance(kind, Boolean):
        return None if isinstance(value, bool) else f"must be true or false, got {describe(value)}"
    if isinstance(kind, Integer):
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be a whole number, got {describe(value)}"
        return None if abs(value) <= MAX_INT else f"must be at most {MAX_INT} in size, got {value}"
    if isinstance(kind, Float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"must be a number, got {describe(value)}"
    if json_type is not None and not isinstance(value, json_type):
        wanted = "an object" if json_type is dict else "a list"
        return f"must be {wanted}, got {describe(value)}"
    return text_problem(value)


def _turns_problem(turns: list[Any]) -> str | None:
    for index, turn in enumerate(turns):
        try:
            Turn.model_validate(turn)
        except ValidationError as exc:
            err = exc.errors()[0]
            at = ".".join(str(p) for p in err["loc"])
            return f"turn {index}{' ' + at if at else ''}: {err['msg']}"
    return None


AXES, SIDES = tuple(Axis), tuple(Side)


def _axes_problem(axes: dict[str, Any]) -> str | None:
    for axis, verdict in axes.items():
        if axis not in AXES:
            return f"names axis {axis!r}; the axes are {', '.join(Axis)}"
        if not isinstance(verdict, dict) or set(verdict) != {"winner", "strength"}:
            return f"{axis}: must be an object with 'winner' and 'strength'"
        strength = verdict["strength"]
        whole = type(strength) is int and 0 <= strength <= 5
        if verdict["winner"] not in SIDES or not whole:
            return (
                f"{axis}: winner must be one of {', '.join(Side)} and strength 0 to 5, got "
                f"{describe(verdict)}"
            )
    return None


def _axes_fine(column: Sequence[Any]) -> bool:
    """Whether every value of a column is axes ``_axes_problem`` finds no problem with, looked
    at a kind of value at a time over the whole column (the axes, the verdicts, their winners
    and strengths) instead of a row at a time."""
    if set(map(type, column)) != {dict}:
        return not column
    if not set(itertools.chain.from_iterable(column)) <= set(AXES):
        return False
    verdicts = [verdict for axes in column for verdict in axes.values()]
    if not verdicts:
        return True
    if set(map(type, verdicts)) != {dict} or set(map(len, verdicts)) != {2}:
        return False
    try:
        winners = set(map(itemgetter("winner"), verdicts))
        strengths = list(map(itemgetter("strength"), verdicts))
    except KeyError:
        return False
    return (
        winners <= set(SIDES)
        and set(map(type, strengths)) == {int}
        and min(strengths) >= 0
        and max(strengths) <= 5
    )


def _strings_problem(values: list[Any]) -> str | None:
    odd = next((v for v in values if not isinstance(v, str)), None)
    return None if odd is None else f"must be a list of text, holds {describe(odd)}"


SHAPES: dict[tuple[str, str], Callable[[Any], str | None]] = {
    ("conversations", "turns"): _turns_problem,
    ("items", "context"): _turns_problem,
    ("judgments", "axes"): _axes_problem,
    ("strategy_labels", "strategies"): _strings_problem,
}
"""JSON columns whose content the stages read back, with the check of its shape."""

COLUMN_SHAPES: dict[tuple[str, str], Callable[[Sequence[Any]], bool]] = {
    ("judgments", "axes"): _axes_fine,
}
"""Shapes with a check of a whole column at once: True only if each value's shape is fine."""


def _value_problem(table: str, column: str, value: Any) -> str | None:
    words = VOCABULARY.get((table, column))
    if words is not None and value is not None and value not in words:
        return f"must be one of {', '.join(words)}, got {describe(value)}"
    if (table, column) == ("judgments", "strength") and value is not None:
        return None if value in STRENGTHS else f"must be 1 to 5, got {value}"
    shape = SHAPES.get((table, column))
    return shape(value) if shape is not None else None


Quick = Callable[[Any], bool]


_ESCAPES = re.compile(r"\\[bfu]")
"""JSON escapes that may stand for a character the text policy refuses (\\b, \\f and \\uXXXX;
\\n, \\r and \\t stand for characters it allows)."""


def plain_json(text: str) -> bool:
    """Whether the JSON ``text`` surely holds no text (key or value) with a character the text
    policy refuses and nests no deeper than MAX_DEPTH, judged from the text alone: no such
    character written in it, no escape that could stand for one, and few enough brackets.
    A row read from such text needs no look inside its values for either (``check_row``)."""
    return (
        REFUSED.search(text) is None
        and _ESCAPES.search(text) is None
        and text.count("{") + text.count("[") <= MAX_DEPTH
    )


def plain_lines(lines: Iterable[tuple[int, str]]) -> set[int]:
    """The numbers of the lines whose text ``plain_json`` finds plain, given (number, text):
    all of them looked at together first, each alone only when that finds something."""
    lines = list(lines)
    text = "\n".join(line for _, line in lines)  # a line feed is neither refused nor escaped
    if (
        "\\" not in text or _ESCAPES.search(text) is None
    ) and (  # of the ASCII characters the policy refuses, JSON text holds only DEL unescaped
        ("\x7f" not in text and text.isascii()) or REFUSED.search(text) is None
    ):
        texts = list(map(itemgetter(1), lines))
        brackets = map(
            add,
            map(str.count, texts, itertools.repeat("{")),
            map(str.count, texts, itertools.repeat("[")),
        )
        if max(brackets, default=0) <= MAX_DEPTH:  # counted at C's speed, no call a line
            return set(map(itemgetter(0), lines))
        return {n for n, line in lines if line.count("{") + line.count("[") <= MAX_DEPTH}
    return {n for n, line in lines if plain_json(line)}


def _quick_check(
    table: str, key: str, column: Column[Any], json_type: type | None, plain: bool
) -> Quick:
    """A test that passes only values ``column`` surely takes (those the full check below
    finds no problem with), quickly: a value it does not pass gets the full check, whose
    message names the problem. With ``plain`` the row's text was found plain (``plain_json``),
    so its values need no look for refused characters or deep nesting."""
    nullable, kind = bool(column.nullable), column.type
    shape = SHAPES.get((table, key))
    if shape is not None:
        if not plain or json_type is None:
            return lambda value: False
        return lambda value: type(value) is json_type and shape(value) is None
    words = VOCABULARY.get((table, key))
    if words is not None:
        allowed = frozenset(str(word) for word in words)
        return lambda value: (
            (value is None and nullable) or (type(value) is str and value in allowed)
        )
    if (table, key) == ("judgments", "strength"):
        return lambda value: (
            (value is None and nullable) or (type(value) is int and value in STRENGTHS)
        )
    search = REFUSED.search
    if isinstance(kind, String):
        most = kind.length if kind.length is not None else sys.maxsize
        if plain:
            return lambda value: (
                (value is None and nullable) or (type(value) is str and len(value) <= most)
            )
        return lambda value: (
            (value is None and nullable)
            or (type(value) is str and len(value) <= most and search(value) is None)
        )
    if isinstance(kind, Boolean):
        return lambda value: type(value) is bool or (value is None and nullable)
    if isinstance(kind, Integer):
        return lambda value: (
            (value is None and nullable) or (type(value) is int and -MAX_INT <= value <= MAX_INT)
        )
    if isinstance(kind, Float):
        return lambda value: type(value) in (float, int) or (value is None and nullable)
    if json_type is not None:
        if plain:
            return lambda value: (value is None and nullable) or type(value) is json_type
        return lambda value: (
            (value is None and nullable) or (type(value) is json_type and _storable(value, 0))
        )
    return lambda value: False


@cache
def _checks(model: type[Base], plain: bool) -> list[tuple[str, Quick, Column[Any], type | None]]:
    """Each column of ``model``'s table with its quick test (``_quick_check``)."""
    table = str(model.__tablename__)
    return [
        (key, _quick_check(table, key, column, json_type, plain), column, json_type)
        for key, column, json_type in _columns(model)
    ]


ColumnTest = Callable[[Sequence[Any]], bool]

_NONE = type(None)


def _column_test(table: str, key: str, column: Column[Any], json_type: type | None) -> ColumnTest:
    """A test that passes a column of values read from plain text (``plain_json``) only when
    ``column`` surely takes every one of them (as ``_quick_check`` does a value at a time, but
    over the whole column at once); a column it does not pass is checked a row at a time."""
    nullable, kind = bool(column.nullable), column.type
    empty: frozenset[type] = frozenset({_NONE}) if nullable else frozenset()

    def typed(values: Sequence[Any], *types: type) -> bool:
        return set(map(type, values)) <= empty | set(types)

    def given(values: Sequence[Any]) -> list[Any]:
        return [v for v in values if v is not None] if nullable else list(values)

    shape = SHAPES.get((table, key))
    if shape is not None:
        if json_type is None:
            return lambda values: False
        held = json_type
        whole_column = COLUMN_SHAPES.get((table, key))
        if whole_column is not None:
            return lambda values: typed(values, held) and whole_column(values)
        return lambda values: all(type(v) is held and shape(v) is None for v in values)
    words = VOCABULARY.get((table, key))
    if words is not None:
        allowed = frozenset(str(word) for word in words) | ({None} if nullable else set())
        return lambda values: typed(values, str) and set(values) <= allowed
    if (table, key) == ("judgments", "strength"):
        strengths = frozenset(STRENGTHS) | ({None} if nullable else set())
        return lambda values: typed(values, int) and set(values) <= strengths
    if isinstance(kind, String):
        most = kind.length if kind.length is not None else sys.maxsize
        return lambda values: typed(values, str) and max(map(len, given(values)), default=0) <= most
    if isinstance(kind, Boolean):
        return lambda values: typed(values, bool)
    if isinstance(kind, Integer):

        def whole(values: Sequence[Any]) -> bool:
            numbers = given(values)
            return typed(values, int) and (
                not numbers or (min(numbers) >= -MAX_INT and max(numbers) <= MAX_INT)
            )

        return whole
    if isinstance(kind, Float):
        return lambda values: typed(values, float, int)
    if json_type is not None:
        held_type = json_type
        return lambda values: typed(values, held_type)
    return lambda values: False


@cache
def _column_tests(model: type[Base]) -> dict[str, ColumnTest]:
    table = str(model.__tablename__)
    return {
        key: _column_test(table, key, column, json_type)
        for key, column, json_type in _columns(model)
    }


def checked_columns(
    model: type[Base], columns: Mapping[str, Sequence[Any]], *, plain: bool
) -> bool:
    """Whether every row of a chunk, given column by column, surely passes ``check_row`` (with
    ``plain``: every row read from plain text), judged a column at a time. False says only that
    the chunk must be checked a row at a time, which names the problem, if there is one."""
    if not plain:
        return False
    tests = _column_tests(model)
    if not all(tests[key](values) for key, values in columns.items()):
        return False
    table = str(model.__tablename__)
    if table == "judgments":
        given = zip(columns["status"], columns["winner"], strict=True)
        return not any(status == Status.OK and winner is None for status, winner in given)
    if table == "completions":
        given = zip(columns["status"], columns["text"], strict=True)
        return all(status != Status.OK or text.strip() for status, text in given)
    return True


def check_row(
    model: type[Base],
    record: Mapping[str, Any],
    where: str,
    fix: str,
    names: Mapping[str, str] | None = None,
    *,
    plain: bool = False,
) -> None:
    """Refuse the first value of ``record`` that ``model``'s table cannot hold, naming ``where``
    (file and line), the field (``names`` maps a column to the file's own name for it) and
    ``fix``. ``plain``: the record was read from text ``plain_json`` found plain."""
    table = str(model.__tablename__)
    for key, quick, column, json_type in _checks(model, plain):
        if key not in record:
            continue
        value = record[key]
        if quick(value):
            continue
        problem = _column_problem(column, json_type, value) or _value_problem(table, key, value)
        if problem:
            field = (names or {}).get(key, key)
            raise ImportRefused(f"{where}: '{field}' {problem}; {fix}")
    if table == "judgments" and record.get("status") == Status.OK and record.get("winner") is None:
        field = (names or {}).get("winner", "winner")
        raise ImportRefused(f"{where}: '{field}' must be given when 'status' is ok; {fix}")
    text = record.get("text")
    if table == "completions" and record.get("status") == Status.OK and not str(text).strip():
        field = (names or {}).get("text", "text")
        raise ImportRefused(f"{where}: '{field}' must hold the reply when 'status' is ok; {fix}")
