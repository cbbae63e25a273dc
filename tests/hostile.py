"""Hostile input, drawn by hypothesis, for the fuzz layer over every reader of outside data:
values that are the right shape but wrong (console markup, control and bidirectional
characters, NUL, lone surrogates, huge and non-finite numbers, the wrong JSON type, very long or
deeply nested values), YAML that abuses anchors and tags, and damage to a file's bytes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from .damage import damage_bytes

WORDS = [
    # console markup, and text that only looks like it
    "[/red]",
    "[bold]x[/bold]",
    "[/]",
    "[red",
    "\\[/red]",
    "[link=file:///etc/passwd]x[/link]",
    "[@click=app.quit]x[/]",
    "[/x]",
    # control, format and bidirectional characters, escapes, odd line breaks
    "\x00",
    "\x07",
    "\x08",
    "\x1b[31m",
    "\x1b]8;;http://x\x1b\\",
    "\x7f",
    "\x85",
    "\x9b",
    "\u200b",
    "\u200e",
    "\u200f",
    "\u061c",
    "\u202a",
    "\u202e",
    "\u2066",
    "\u2069",
    "\ufeff",
    "\u2028",
    "\u2029",
    "\r",
    "\r\n",
    "\n",
    "\t",
    "\x0b",
    "\x0c",
    # lone surrogates and the edges of Unicode
    "\ud800",
    "\udfff",
    "\ud83d",
    "\uffff",
    "\ufffd",
    "\U0010ffff",
    "😀",
    "é",
    "e\u0301",
    # markup of other kinds, templates, paths, SQL, format strings
    "<script>alert(1)</script>",
    "</p>",
    "&amp;",
    "{{7*7}}",
    "{% if %}",
    "${HOME}",
    "%s%n",
    "{0}",
    "{}",
    "'; DROP TABLE judgments; --",
    "../../etc/passwd",
    "~",
    "*",
    "#",
    "|",
    ">",
    # YAML that is not plain text
    "*a",
    "&a",
    "!!python/object/apply:os.system",
    "? ",
    ": ",
    "- ",
    "---",
    "...",
    "%YAML 1.1",
    # numbers that are text, and text that looks like numbers
    "1e308",
    "-1e308",
    "1e999",
    "-1e999",
    "1e-320",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "-0",
    "0x10",
    "1_000",
    "٣",
    "１",
    " 1 ",
    "1,5",
    "99999999999999999999",
    "9" * 400,
    # words that mean something else to other readers
    "true",
    "false",
    "null",
    "None",
    "~",
    "yes",
    "no",
    "",
    " ",
    "  \t ",
]
"""Short values that each break some reader that trusts its input."""

characters = st.characters(codec="utf-8") | st.sampled_from(
    [c for c in WORDS if len(c) == 1] + ["\ud800", "\udc00"]
)


def _long(unit_and_times: tuple[str, int]) -> str:
    unit, times = unit_and_times
    return unit * times


words = st.sampled_from(WORDS)
texts = st.one_of(
    words,
    words,
    st.lists(words | st.text(characters, max_size=4), min_size=1, max_size=6).map("".join),
    st.lists(words | st.text(characters, max_size=4), min_size=1, max_size=6).map("".join),
    st.text(characters, max_size=20),
    st.tuples(
        st.sampled_from(["a", "[/x]", ". ", "\u202e", "é", "\x00"]),
        st.sampled_from([1000, 40_000, 131_072, 131_073]),
    ).map(_long),
)
"""Hostile text: the values above alone or mixed with any characters, or very long."""

numbers = st.one_of(
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 10**400, 1e308, -1e308]),
    st.integers(),
    st.floats(),  # NaN and both infinities among them
)


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(texts | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
) | st.integers(30, 400).map(_nested)
"""Any JSON value of any type, some nested past what the store allows."""


def json_text(value: Any) -> str:
    """``value`` as JSON (NaN and infinities as Python's json module writes them)."""
    return json.dumps(value, ensure_ascii=False)


def yaml_snippets(key: str) -> st.SearchStrategy[str]:
    """A top-level YAML setting ``key`` written to abuse the YAML reader: anchors and aliases
    (expanding to at most a few thousand nodes), tags, merge keys, odd keys and nesting."""

    def aliases(shape: tuple[int, int]) -> str:
        fanout, depth = shape
        lines = ["a0: &a0 [x, y]"]
        for level in range(1, depth + 1):
            refs = ", ".join(f"*a{level - 1}" for _ in range(fanout))
            lines.append(f"a{level}: &a{level} [{refs}]")
        return "\n".join(lines) + f"\n{key}: *a{depth}"

    return st.one_of(
        st.tuples(st.integers(1, 4), st.integers(1, 5)).map(aliases),
        st.sampled_from(
            [
                f"{key}: !!python/object/apply:os.system ['true']",
                f"{key}: !!python/name:os.system",
                f"{key}: !!binary aGVsbG8=",
                f"{key}: !!timestamp 2001-12-14",
                f"{key}: !!set {{a, b}}",
                f"{key}: !!omap [a: 1]",
                f"{key}: !custom x",
                f"{key}: !!str",
                f"{key}: !!int 0x1F",
                f"{key}: !!float .nan",
                f"{key}: .inf",
                f"{key}: 1e999",
                f"{key}: 0o777",
                f"{key}: 99999999999999999999999999999999",
                f"base: &b {{name: x}}\n{key}: {{<<: *b}}",
                f"{key}: {{<<: [*missing]}}",
                f"{key}: &self [*self]",
                f"? [{key}]\n: 1",
                "? {a: 1}\n: 1",
                f"{key}:\n  1: x\n  null: y\n  true: z",
                f"{key}: " + "[" * 60 + "]" * 60,
                f"{key}: " + "{a: " * 60 + "x" + "}" * 60,
                f"{key}: |\n  \x00",
                f'{key}: "\\ud800"',
                f'{key}: "\\x1b[31m [/red] \\u202e"',
                f"{key}: '[/red]'",
                f"{key}:\n\t- tab",
                f"{key}: [",
                f"{key}: {{",
                f"{key}: @x",
                f"{key}: `x`",
                f"%TAG ! tag:x,2000:\n---\n{key}: !foo x",
                f"{key}: x\n---\n{key}: y",
                f"{key}: x\n{key}: y",
            ]
        ),
    )


def damaged(data: st.DataObject, raw: bytes, most: int = 2) -> bytes:
    """``raw`` as it is (half the time), or with up to ``most`` truncations, flipped bytes or
    inserted garbage (hostile words among it), sometimes in another encoding or with other line
    ends first."""
    if data.draw(st.booleans()):
        return raw
    encoding = data.draw(
        st.sampled_from(["utf-8"] * 8 + ["utf-8-sig", "utf-16", "latin-1", "crlf"])
    )
    if encoding == "crlf":
        raw = raw.replace(b"\n", b"\r\n")
    elif encoding != "utf-8":
        # bytes damaged already may be no UTF-8 at all: keep them as escapes, written as "?"
        raw = raw.decode("utf-8", "surrogateescape").encode(encoding, "replace")
    for _ in range(data.draw(st.integers(0, most))):
        if data.draw(st.booleans()):
            raw = damage_bytes(data, raw)
        else:
            at = data.draw(st.integers(0, len(raw)))
            word = data.draw(words).encode("utf-8", "surrogatepass")
            raw = raw[:at] + word + raw[at:]
    return raw
