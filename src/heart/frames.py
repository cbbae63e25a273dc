"""Results as data frames for notebooks: pandas and pyarrow load only when asked for, and a
missing one is named with the extra that installs it."""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from heart.errors import HeartError
from heart.stats import Share

EXTRAS = {"pandas": "pandas", "pyarrow": "parquet"}
"""The optional module → the extra of heart-bench that installs it."""


def optional_module(name: str, purpose: str) -> Any:
    """Import the optional module ``name`` (pandas, pyarrow); a one-line HeartError saying
    what to install when it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError:
        extra = EXTRAS.get(name.split(".")[0], name)
        raise HeartError(
            f"{purpose} needs {name}, which is not installed: pip install 'heart-bench[{extra}]'"
        ) from None


def flat(record: Any, prefix: str = "") -> dict[str, Any]:
    """A dataclass (or mapping) as one flat row: a mapping field ``axis_elo`` with key ``H``
    becomes the column ``axis_elo_H``, a share (or no share) the columns ``flip_hits``,
    ``flip_n``, ``flip_value``, ``flip_low``, ``flip_high``, a tuple of words one "; "-separated
    cell, NaN a None."""
    if isinstance(record, Mapping):
        fields = [(name, value, "") for name, value in record.items()]
    else:
        fields = [
            (f.name, getattr(record, f.name), str(f.type)) for f in dataclasses.fields(record)
        ]
    out: dict[str, Any] = {}
    for name, value, kind in fields:
        key = f"{prefix}{name}"
        if isinstance(value, Share) or (value is None and kind.startswith("Share")):
            out.update(share_cells(value, f"{key}_"))
        elif isinstance(value, Mapping) or (
            dataclasses.is_dataclass(value) and not isinstance(value, type)
        ):
            out.update(flat(value, f"{key}_"))
        elif isinstance(value, tuple | list) and all(isinstance(v, str) for v in value):
            out[key] = "; ".join(value)
        elif isinstance(value, float) and math.isnan(value):
            out[key] = None
        else:
            out[key] = value
    return out


def share_cells(share: Share | None, prefix: str) -> dict[str, Any]:
    """A share as ``hits``, ``n``, ``value``, ``low``, ``high`` (empty cells for no share)."""
    if share is None:
        return {f"{prefix}{k}": None for k in ("hits", "n", "value", "low", "high")}
    return {f"{prefix}hits": share.hits, f"{prefix}n": share.n, f"{prefix}value": share.value,
            f"{prefix}low": share.low, f"{prefix}high": share.high}  # fmt: skip


def frame(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Any:
    """A pandas DataFrame of ``rows`` (with ``columns`` in that order, even when there are no
    rows)."""
    pandas = optional_module("pandas", "a data frame")
    return pandas.DataFrame.from_records(list(rows), columns=list(columns) if columns else None)


def records_frame(records: Iterable[Any], columns: Sequence[str] | None = None) -> Any:
    """A pandas DataFrame with one flat row (``flat``) per dataclass in ``records``."""
    return frame((flat(r) for r in records), columns)


T = TypeVar("T")


class Rows(list[T]):
    """A list of result records (dataclasses) that also reads as a data frame."""

    def to_pandas(self) -> Any:
        """One row per record, its fields as columns (mappings spread out, see ``flat``)."""
        return records_frame(self)


__all__ = ["EXTRAS", "Rows", "flat", "frame", "optional_module", "records_frame"]
