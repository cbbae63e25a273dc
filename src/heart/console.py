"""The one console every command prints through. What people wrote reaches it as data (names,
corpus text, file paths, values quoted in an error) and is shown as written: never read as
console markup or emoji codes, and with control characters shown as ``\\x1b`` rather than sent
to the terminal. Styles come from arguments, never from the text."""

from __future__ import annotations

from typing import Any

from rich.console import Console, RenderableType
from rich.text import Text

_CONTROLS = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\t\n"
}
"""C0 and C1 control characters and DEL (a tab and a line break aside), as visible text."""


def visible(text: str) -> str:
    """``text`` with every control character that a terminal would act on (an escape sequence,
    a bell, a carriage return) written out as ``\\xNN``."""
    return text.translate(_CONTROLS)


class TextConsole(Console):
    """A rich console that reads every string it renders (printed, or a table's cell, title or
    caption) as plain text: no markup, no emoji codes, control characters made visible."""

    def render_str(self, text: str, **options: Any) -> Text:
        options.update(markup=False, emoji=False)
        return super().render_str(visible(text), **options)


console = TextConsole(highlight=False)
"""Prints strings as they are: ``[bold]x[/bold]`` and ``:smile:`` stay text, ``[/red]`` never
raises."""

Part = str | tuple[str, str]
"""A piece of a line: plain text, or ``(text, style)`` such as ``("error:", "bold red")``."""


def as_text(*parts: Part, style: str = "") -> Text:
    """One line from plain and styled pieces, each piece's text kept as written."""
    return Text.assemble(
        *(visible(p) if isinstance(p, str) else (visible(p[0]), p[1]) for p in parts), style=style
    )


def say(*parts: Part, style: str = "", soft_wrap: bool = False) -> None:
    """Print one line from plain and styled pieces (``style`` over all of it); with
    ``soft_wrap``, the line is not broken at the console's width (a command to copy)."""
    console.print(as_text(*parts, style=style), soft_wrap=soft_wrap)


def show(renderable: RenderableType) -> None:
    """Print a table or another renderable; its string cells are text, not markup."""
    console.print(renderable)
