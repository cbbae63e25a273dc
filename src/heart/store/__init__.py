"""The study store: SQLAlchemy tables, and opening and migrating a database."""

from heart.store._counted import counted_judgment
from heart.store._db import Store, now_iso, open_store
from heart.store._tables import (
    Base,
    CallRow,
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    PromptRow,
    RaterRow,
    RewriteRow,
    ScreeningRow,
    SystemRow,
    TaskRow,
)

__all__ = [
    "Base",
    "CallRow",
    "CompletionRow",
    "ConversationRow",
    "ItemRow",
    "JudgeRow",
    "JudgmentRow",
    "LabelRow",
    "PairRow",
    "PromptRow",
    "RaterRow",
    "RewriteRow",
    "ScreeningRow",
    "Store",
    "SystemRow",
    "TaskRow",
    "counted_judgment",
    "now_iso",
    "open_store",
]
