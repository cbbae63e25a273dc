"""The study store: SQLAlchemy tables, and opening and migrating a database."""

from heart.store._db import Store, now_iso, open_store
from heart.store._tables import (
    Base,
    CallRow,
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    PromptRow,
    RaterRow,
    ScreeningRow,
    SystemRow,
)

__all__ = [
    "Base",
    "CallRow",
    "CompletionRow",
    "ConversationRow",
    "ItemRow",
    "JudgeRow",
    "JudgmentRow",
    "PairRow",
    "PromptRow",
    "RaterRow",
    "ScreeningRow",
    "Store",
    "SystemRow",
    "now_iso",
    "open_store",
]
