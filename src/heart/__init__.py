"""heart-bench: the HEART benchmark for emotional-support dialogue, end to end.

``heart.open_study`` opens a study folder; ``heart.pipeline`` runs its stages.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``open_study`` on first use, so importing heart stays light."""
    if name == "open_study":
        from heart.study import open_study

        return open_study
    raise AttributeError(f"module 'heart' has no attribute {name!r}")


__all__ = ["__version__", "open_study"]
