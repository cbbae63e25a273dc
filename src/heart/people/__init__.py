"""People in the loop: seats of human work, claims safe under concurrency, submissions, access
and quality control. The web app (heart.web) is one front end to these."""

from heart.errors import TaskRefused
from heart.people._claims import (
    ATTENTION_REPLY,
    CHARS_PER_WORD,
    CHOICES,
    GOLD_REPLY,
    NOT_YOURS,
    Task,
    check_reply,
    claim,
    load_task,
    open_to,
    submit_judgment,
    submit_labels,
    submit_write,
)
from heart.people._quality import RaterQuality, review_quality, time_outliers
from heart.people._raters import invite, prolific_rater, rater_for_token, token_hash
from heart.people._tasks import (
    ATTENTION,
    GOLD,
    JUDGE,
    KINDS,
    LABEL,
    WRITE,
    TaskCounts,
    expected_answer,
    sync_tasks,
    task_id,
)
from heart.people._text import CONTROL, plain_text

__all__ = [
    "ATTENTION",
    "ATTENTION_REPLY",
    "CHARS_PER_WORD",
    "CHOICES",
    "CONTROL",
    "GOLD",
    "GOLD_REPLY",
    "JUDGE",
    "KINDS",
    "LABEL",
    "NOT_YOURS",
    "WRITE",
    "RaterQuality",
    "Task",
    "TaskCounts",
    "TaskRefused",
    "check_reply",
    "claim",
    "expected_answer",
    "invite",
    "load_task",
    "open_to",
    "plain_text",
    "prolific_rater",
    "rater_for_token",
    "review_quality",
    "submit_judgment",
    "submit_labels",
    "submit_write",
    "sync_tasks",
    "task_id",
    "time_outliers",
    "token_hash",
]
