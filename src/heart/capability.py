"""The external capability index a user supplies (``ratings.capability_index`` in the study
file, or ``heart report --index FILE``): a CSV with the columns ``system`` and ``value``, read
and checked whole, with one line per problem naming the file, the line and the field."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from heart.errors import IndexFileError
from heart.utf8 import NotUtf8, decode_utf8

COLUMNS = ("system", "value")
MAX_PROBLEMS = 20  # problems listed before the rest are counted
SHOWN = 40  # characters of a cell quoted in a message
SCALE = 15
"""Index values are 0 or of a size from 1e-15 to 1e15, either sign: a score, a rating or a count
stays well within that, and the correlations, the line and the figure need the squares of the
values' differences to stay finite and above 0 (1e308 stopped the figure; values near 1e-200 left
Pearson's r undefined without a word)."""


@dataclass(frozen=True)
class CapabilityIndex:
    """Each listed system's index value, in the file's order, and the line it is on."""

    path: str
    values: dict[str, float]
    lines: dict[str, int]


def index_path(root: Path, configured: str | None, override: Path | None = None) -> Path | None:
    """The index file to read: ``override`` (``--index``, as given), else the study file's
    ``ratings.capability_index`` (relative to the study folder), else none."""
    if override is not None:
        return override
    if configured is None:
        return None
    path = Path(configured)
    return path if path.is_absolute() else root / path


def _quoted(cell: str) -> str:
    return repr(cell if len(cell) <= SHOWN else cell[:SHOWN] + "…")


def _names(systems: Collection[str]) -> str:
    names = sorted(systems)
    shown = ", ".join(names[:10])
    return shown + (f" and {len(names) - 10} more" if len(names) > 10 else "")


def _header(cells: list[str], source: str) -> dict[str, int]:
    """Where the columns ``system`` and ``value`` are (names compared without case or
    surrounding spaces); other columns are ignored."""
    names = [c.strip().lower() for c in cells]
    problems = [
        f"{source} line 1: column {name!r} appears twice; keep one"
        for name in COLUMNS
        if names.count(name) > 1
    ]
    missing = [name for name in COLUMNS if name not in names]
    if missing:
        has = ", ".join(repr(c.strip()) for c in cells if c.strip()) or "nothing"
        problems.append(
            f"{source} line 1: no column {' or '.join(map(repr, missing))}; the first line must "
            f"name the columns system and value (it has {has})"
        )
    if problems:
        raise IndexFileError("\n".join(problems))
    return {name: names.index(name) for name in COLUMNS}


def _value_problem(cell: str) -> str | None:
    text = cell.strip()
    if not text:
        return "empty; give a number, or leave the system out of the file"
    try:
        value = float(text)
    except ValueError:
        return f"{_quoted(cell)} is not a number"
    if not math.isfinite(value):
        return f"{_quoted(cell)} is not a finite number"
    if abs(value) > 10.0**SCALE or 0 < abs(value) < 10.0**-SCALE:
        return (
            f"{_quoted(cell)} is out of range: a value is 0 or of a size from 1e-{SCALE} to "
            f"1e{SCALE}; give the index on such a scale (a count of parameters or FLOPs as its "
            "log10)"
        )
    return None


def parse_capability_index(
    text: str | bytes, source: str, systems: Collection[str]
) -> CapabilityIndex:
    """Read the index from ``text`` (bytes must be UTF-8; a byte-order mark is fine). Every row
    names one of ``systems`` once, with a finite number in range (see SCALE); blank lines are
    skipped. Raises IndexFileError listing every problem, one line each."""
    if isinstance(text, bytes):
        try:
            text = decode_utf8(text)
        except NotUtf8 as bad:
            raise IndexFileError(
                f"{source} line {bad.line}: {bad}; save the file as UTF-8"
            ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    known = set(systems)
    values: dict[str, float] = {}
    lines: dict[str, int] = {}
    problems: list[str] = []
    try:
        first = next(reader, None)
        if first is None:
            raise IndexFileError(
                f"{source}: the file is empty; write the header system,value and one line per "
                "system"
            )
        columns = _header(first, source)
        while True:
            line = reader.line_num + 1
            cells = next(reader, None)
            if cells is None:
                break
            if not any(c.strip() for c in cells):
                continue
            where = f"{source} line {line}"
            if len(cells) > len(first):
                problems.append(
                    f"{where}: {len(cells)} cells, but the header names {len(first)} columns; "
                    "quote any cell that holds a comma (and write decimals with a point)"
                )
                continue
            get = {name: cells[i] if i < len(cells) else "" for name, i in columns.items()}
            system = get["system"].strip()
            if not system:
                problems.append(f"{where}, field 'system': empty; name a system of the study")
            elif system not in known:
                problems.append(
                    f"{where}, field 'system': {_quoted(system)} is not a system of this study "
                    f"(its systems: {_names(known)})"
                )
            elif system in lines:
                problems.append(
                    f"{where}, field 'system': {_quoted(system)} is listed again (first on line "
                    f"{lines[system]}); keep one line per system"
                )
            first_time = system in known and system not in lines
            if first_time:
                lines[system] = line
            value = _value_problem(get["value"])
            if value is not None:
                problems.append(f"{where}, field 'value': {value}")
            elif first_time:
                values[system] = float(get["value"].strip())
    except csv.Error as exc:
        problems.append(f"{source} line {reader.line_num}: not valid CSV ({exc}); save it as CSV")
    if not problems and not values:
        problems.append(
            f"{source}: no system is listed; write one line per system under the header "
            "system,value"
        )
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"{source}: and {len(problems) - MAX_PROBLEMS} more problems")
        raise IndexFileError("\n".join(shown))
    return CapabilityIndex(source, values, lines)


def read_capability_index(path: Path, systems: Collection[str], origin: str) -> CapabilityIndex:
    """Read and check the index file at ``path``; ``origin`` says where its name came from (the
    study file's setting or the command's option), for the message when it cannot be read."""
    try:
        data = path.read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a name no system takes (a NUL in it)
        why = exc.strerror if isinstance(exc, OSError) else exc
        raise IndexFileError(
            f"{path}: the capability index cannot be read ({why}); check {origin}"
        ) from None
    return parse_capability_index(data, str(path), systems)
