"""What both providers' batch clients share: a results file read line by line, so one
unreadable line loses only its own request, and the time a search for a batch starts from."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from heart.models._batch import BatchResult
from heart.models._errors import Cause, ModelCallError

_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([^"\\]{1,128})"')


def result_lines(data: bytes) -> Iterator[dict[str, Any] | BatchResult]:
    """Each line of a JSONL results file: its object, or, for a line that is not a JSON object,
    a retryable server error for the request it names (lines naming none are skipped)."""
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if isinstance(item, dict) and isinstance(item.get("custom_id"), str):
            yield item
            continue
        named = _CUSTOM_ID.search(line)
        if named is not None:
            yield BatchResult(
                named.group(1).decode("utf-8", "replace"),
                error=ModelCallError(
                    "the batch's result line for this call could not be read",
                    retryable=True,
                    cause=Cause.SERVER,
                ),
            )


def unreadable(custom_id: str, exc: Exception) -> BatchResult:
    """A result whose answer did not parse: a retryable server error."""
    return BatchResult(
        custom_id,
        error=ModelCallError(
            f"the batch's answer could not be read: {type(exc).__name__}",
            retryable=True,
            cause=Cause.SERVER,
        ),
    )


def since_seconds(since: str) -> int:
    """``since`` (ISO 8601, UTC) in whole Unix seconds, rounded down: providers stamp batches
    to the second at best."""
    return int(datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp())
