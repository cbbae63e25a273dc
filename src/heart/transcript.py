"""How a context is shown to a model: a plain transcript with the roles named."""

from __future__ import annotations

from collections.abc import Sequence

from heart.types import Role, Turn

ROLE_NAMES = {Role.SEEKER: "Seeker", Role.SUPPORTER: "Supporter"}


def render_transcript(turns: Sequence[Turn]) -> str:
    """One line per turn, ``Seeker: ...`` / ``Supporter: ...``."""
    return "\n".join(f"{ROLE_NAMES[t.role]}: {t.text}" for t in turns)
