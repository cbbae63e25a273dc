"""Items: the contexts of the benchmark, chosen from ESConv by a transparent rule-based screen."""

from heart.items._build import (
    count_items,
    count_rewrites,
    item_from_row,
    item_to_row,
    save_selection,
    stored_item,
    stored_items,
)
from heart.items._rules import Screened, safety_rule, screen_seeker_turn
from heart.items._select import (
    Candidate,
    Decision,
    SecondPass,
    Selection,
    make_item,
    proportional_quotas,
    select_regular_items,
    select_study_items,
)

__all__ = [
    "Candidate",
    "Decision",
    "Screened",
    "SecondPass",
    "Selection",
    "count_items",
    "count_rewrites",
    "item_from_row",
    "item_to_row",
    "make_item",
    "proportional_quotas",
    "safety_rule",
    "save_selection",
    "screen_seeker_turn",
    "select_regular_items",
    "select_study_items",
    "stored_item",
    "stored_items",
]
