"""The project's own error types: each says what was wrong, where, and how to fix it."""

from __future__ import annotations


class HeartError(Exception):
    """Base of every error heart-bench raises on purpose; the CLI prints it without a traceback."""


class CorpusError(HeartError):
    """An unreadable ESConv file: names the file, the line or conversation, and the field."""

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        line: int | None = None,
        conversation: int | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.conversation = conversation
        self.field = field
        self.problem = problem
        self.fix = fix
        where = [path]
        if line is not None:
            where.append(f"line {line}")
        if conversation is not None:
            where.append(f"conversation {conversation}")
        if field is not None:
            where.append(f"field '{field}'")
        message = ", ".join(where) + f": {problem}"
        if fix:
            message += f" ({fix})"
        super().__init__(message)


class ConfigError(HeartError):
    """A study file that fails validation."""


class StoreError(HeartError):
    """A store that cannot be opened, migrated, or written as asked."""


class ImportRefused(HeartError):
    """An import that would reference unknown items or systems; nothing was written."""


class TaskRefused(HeartError):
    """Human work that cannot be shown or stored: not yours, taken by someone else, done, or
    an answer that breaks a rule (the message says which); nothing was stored."""


class IndexFileError(HeartError):
    """A capability index file (``ratings.capability_index`` or ``heart report --index``) that
    cannot be used: one line per problem, each naming the file, the line and the field."""


class ReportError(HeartError):
    """A report that cannot be put where it belongs; the previous report is left as it was."""
