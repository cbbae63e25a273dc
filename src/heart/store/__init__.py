"""The study store: SQLAlchemy tables, and opening and migrating a database."""

from heart.store._counted import counted_judgment, left_out_judgments, left_out_reason
from heart.store._db import SchemaState, Store, now_iso, open_store, schema_state
from heart.store._insert import add_if_missing
from heart.store._origin import imported_judgment
from heart.store._own import pair_with_reply_by, reply_by
from heart.store._tables import (
    Base,
    BundleProvenanceRow,
    CallRow,
    ClassificationRow,
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    PromptRow,
    RaterRow,
    RationaleCodeRow,
    RationaleCodingRow,
    RewriteRow,
    ScreeningRow,
    SystemRow,
    TaskRow,
)

__all__ = [
    "Base",
    "BundleProvenanceRow",
    "CallRow",
    "ClassificationRow",
    "CompletionRow",
    "ConversationRow",
    "ItemRow",
    "JudgeRow",
    "JudgmentRow",
    "LabelRow",
    "PairRow",
    "PromptRow",
    "RaterRow",
    "RationaleCodeRow",
    "RationaleCodingRow",
    "RewriteRow",
    "SchemaState",
    "ScreeningRow",
    "Store",
    "SystemRow",
    "TaskRow",
    "add_if_missing",
    "counted_judgment",
    "imported_judgment",
    "left_out_judgments",
    "left_out_reason",
    "now_iso",
    "open_store",
    "pair_with_reply_by",
    "reply_by",
    "schema_state",
]
