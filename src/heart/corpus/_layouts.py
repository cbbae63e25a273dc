"""The three ESConv file layouts: detecting which one a file uses, and reading each one.

* ``hf``: JSON Lines (despite the ``.json`` name), turns ``{speaker: usr|sys, text, strategy}``;
* ``upstream``: one JSON array, turns ``{speaker: seeker|supporter, annotation, content}``;
* ``failed``: like upstream, but the speakers are ``speaker`` (seeker) and ``listener`` (supporter).

Every problem with the input is raised as a ``CorpusError`` naming the file, the line (hf) or
conversation index (arrays), the field, and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from heart.corpus._normalise import (
    Utterance,
    accepted_strategies,
    collapse_whitespace,
    conversation_id,
    merge_utterances,
    normalise_strategy,
    parse_feedback,
    parse_score,
)
from heart.errors import CorpusError
from heart.types import Conversation, Role
from heart.utf8 import NotUtf8, decode_utf8

Layout = Literal["upstream", "hf", "failed"]

_DETECTION_SAMPLE = 5
"""How many leading conversations of an array file vote on upstream vs failed speaker labels."""


@dataclass(frozen=True)
class Origin:
    """Where a conversation came from: file, position in it (0-based), 1-based line (hf), layout."""

    path: str
    index: int
    line: int | None
    layout: str


@dataclass(frozen=True)
class _Schema:
    """The names one layout uses for speakers and fields."""

    layout: Layout
    seeker: str
    supporter: str
    text: str
    annotated: bool  # strategy and feedback sit under "annotation"

    def role(self, label: str) -> Role | None:
        key = label.strip().casefold()
        if key == self.seeker:
            return Role.SEEKER
        if key == self.supporter:
            return Role.SUPPORTER
        return None


_HF = _Schema("hf", "usr", "sys", "text", annotated=False)
_UPSTREAM = _Schema("upstream", "seeker", "supporter", "content", annotated=True)
_FAILED = _Schema("failed", "speaker", "listener", "content", annotated=True)


@dataclass(frozen=True)
class _Site:
    """A place in a file, for error messages."""

    path: str
    line: int | None = None
    conversation: int | None = None

    def error(self, problem: str, field: str | None = None, fix: str | None = None) -> CorpusError:
        return CorpusError(
            self.path,
            problem,
            line=self.line,
            conversation=self.conversation,
            field=field,
            fix=fix,
        )


def detect_layout(path: str | Path) -> Layout:
    """A file's layout: ``hf`` if it starts with ``{``, else upstream or failed by speakers."""
    name = str(path)
    text = _read_text(Path(path))
    if _first_char(name, text) == "{":
        return "hf"
    return _array_schema(_parse_array(name, text)).layout


def read_file(path: str | Path) -> list[tuple[Origin, Conversation]]:
    """Every conversation of one ESConv file, in file order, with where each came from."""
    name = str(path)
    text = _read_text(Path(path))
    if _first_char(name, text) == "{":
        return read_hf(name, text)
    records = _parse_array(name, text)
    if _array_schema(records) is _FAILED:
        return read_failed(name, records)
    return read_upstream(name, records)


def read_hf(path: str, text: str) -> list[tuple[Origin, Conversation]]:
    """The conversations of a JSON Lines file; blank lines are skipped, lines count from 1."""
    found: list[tuple[Origin, Conversation]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        site = _Site(path, line=number)
        try:
            record: object = json.loads(line)
        except (ValueError, RecursionError) as err:
            raise site.error(
                f"malformed JSON: {_json_problem(err)}",
                fix="the hf layout is JSON Lines: each line holds one whole conversation object",
            ) from None
        origin = Origin(path, len(found), number, _HF.layout)
        found.append((origin, _conversation(record, site, _HF)))
    if not found:
        raise _Site(path).error("the file holds no conversations", fix="check it is the right file")
    return found


def read_upstream(path: str, records: list[object]) -> list[tuple[Origin, Conversation]]:
    """The conversations of an upstream ``ESConv.json`` array (speakers seeker/supporter)."""
    return _read_array(path, records, _UPSTREAM)


def read_failed(path: str, records: list[object]) -> list[tuple[Origin, Conversation]]:
    """The conversations of a ``FailedESConv.json`` array (speakers speaker/listener)."""
    return _read_array(path, records, _FAILED)


def _read_array(
    path: str, records: list[object], schema: _Schema
) -> list[tuple[Origin, Conversation]]:
    if not records:
        raise _Site(path).error("the array is empty", fix="check it is the right file")
    return [
        (
            Origin(path, index, None, schema.layout),
            _conversation(record, _Site(path, conversation=index), schema),
        )
        for index, record in enumerate(records)
    ]


def _read_text(path: Path) -> str:
    """The file's text, decoded as strict UTF-8 (a leading byte-order mark is dropped)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CorpusError(str(path), "no such file", fix="check the path") from None
    except IsADirectoryError:
        raise CorpusError(str(path), "is a folder, not a file", fix="use load_corpus") from None
    except (OSError, ValueError) as err:
        raise CorpusError(str(path), f"cannot be read: {err}", fix="check the path") from None
    try:
        return decode_utf8(data)
    except NotUtf8 as bad:
        fix = "ESConv files are UTF-8; re-save the file as UTF-8"
        raise CorpusError(str(path), str(bad), line=bad.line, fix=fix) from None


def _first_char(path: str, text: str) -> str:
    stripped = text.lstrip()
    if not stripped:
        raise CorpusError(path, "the file is empty", fix="check it is the right file")
    first = stripped[0]
    if first not in "{[":
        line = text[: len(text) - len(stripped)].count("\n") + 1
        raise CorpusError(
            path,
            f"starts with {first!r}, which is neither an ESConv JSON array nor JSON Lines",
            line=line,
            fix="give a JSON array of conversations ('[') or one conversation per line ('{')",
        )
    return first


def _parse_array(path: str, text: str) -> list[object]:
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError as err:
        raise CorpusError(
            path,
            f"malformed JSON: {err.msg} at column {err.colno}",
            line=err.lineno,
            fix="the upstream and failed layouts are one JSON array of conversation objects",
        ) from None
    except (ValueError, RecursionError) as err:
        raise CorpusError(path, f"malformed JSON: {_json_problem(err)}") from None
    if not isinstance(value, list):
        raise CorpusError(
            path,
            f"expected a JSON array of conversations, got {_kind(value)}",
            fix="give a JSON array of conversation objects, or one object per line (hf layout)",
        )
    return cast(list[object], value)


def _array_schema(records: list[object]) -> _Schema:
    """Upstream or failed, by a vote of the speaker labels in the first conversations' dialogs."""
    votes = {_UPSTREAM.layout: 0, _FAILED.layout: 0}
    for record in records[:_DETECTION_SAMPLE]:
        dialog = record.get("dialog") if isinstance(record, dict) else None
        for turn in dialog if isinstance(dialog, list) else []:
            label = turn.get("speaker") if isinstance(turn, dict) else None
            for schema in (_UPSTREAM, _FAILED):
                if isinstance(label, str) and schema.role(label) is not None:
                    votes[schema.layout] += 1
    return _FAILED if votes[_FAILED.layout] > votes[_UPSTREAM.layout] else _UPSTREAM


def _conversation(record: object, site: _Site, schema: _Schema) -> Conversation:
    if not isinstance(record, dict):
        raise site.error(
            f"expected a conversation object, got {_kind(record)}",
            fix="each conversation is a JSON object with 'dialog', 'problem_type', 'emotion_type'",
        )
    problem_type = _required_label(record, "problem_type", site)
    emotion_type = _required_label(record, "emotion_type", site)
    situation = collapse_whitespace(_optional_text(record, "situation", site))
    dialog = record.get("dialog")
    if dialog is None:
        raise site.error("is missing", field="dialog", fix="give the turns as a list")
    if not isinstance(dialog, list):
        raise site.error(
            f"expected a list of turns, got {_kind(dialog)}",
            field="dialog",
            fix="give the conversation's turns as a list",
        )
    if not dialog:
        raise site.error(
            "the dialog is empty", field="dialog", fix="remove the conversation or give it turns"
        )
    turns = merge_utterances(
        _utterance(turn, f"dialog[{i}]", site, schema) for i, turn in enumerate(dialog)
    )
    if not turns:
        raise site.error(
            "no utterance is left once whitespace is removed",
            field="dialog",
            fix="remove the conversation or give it non-blank utterances",
        )
    return Conversation(
        id=conversation_id(problem_type, emotion_type, situation, turns),
        problem_type=problem_type,
        emotion_type=emotion_type,
        experience_type=collapse_whitespace(_optional_text(record, "experience_type", site)),
        situation=situation,
        survey=_survey(record.get("survey_score"), site),
        turns=turns,
    )


def _utterance(turn: object, field: str, site: _Site, schema: _Schema) -> Utterance:
    if not isinstance(turn, dict):
        raise site.error(
            f"expected a turn object, got {_kind(turn)}",
            field=field,
            fix=f"each turn is an object with 'speaker' and '{schema.text}'",
        )
    role = _role(turn, field, site, schema)
    text = collapse_whitespace(_text(turn.get(schema.text), site, f"{field}.{schema.text}"))
    if schema.annotated:
        annotation = _optional_object(
            turn.get("annotation"), site, f"{field}.annotation",
            "use {'strategy': ...}, {'feedback': ...} or {}",
        )  # fmt: skip
        prefix = f"{field}.annotation"
    else:
        annotation, prefix = turn, field
    if role is Role.SUPPORTER:
        strategy = _strategy(annotation.get("strategy"), site, f"{prefix}.strategy")
        return Utterance(role, text, strategy=strategy)
    feedback = _feedback(annotation.get("feedback"), site, f"{prefix}.feedback")
    return Utterance(role, text, feedback=feedback)


def _role(turn: dict[str, object], field: str, site: _Site, schema: _Schema) -> Role:
    label = turn.get("speaker")
    fix = (
        f"the {schema.layout} layout names the seeker '{schema.seeker}' "
        f"and the supporter '{schema.supporter}'"
    )
    if label is None:
        raise site.error("is missing", field=f"{field}.speaker", fix=fix)
    if not isinstance(label, str):
        raise site.error(
            f"expected a string, got {_kind(label)}", field=f"{field}.speaker", fix=fix
        )
    role = schema.role(label)
    if role is None:
        raise site.error(f"unknown speaker label {label!r}", field=f"{field}.speaker", fix=fix)
    return role


def _strategy(value: object, site: _Site, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise site.error(
            f"expected a string, got {_kind(value)}", field=field, fix=accepted_strategies()
        )
    try:
        return normalise_strategy(value)
    except ValueError as err:
        raise site.error(str(err), field=field, fix=accepted_strategies()) from None


def _feedback(value: object, site: _Site, field: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_feedback(value)
    except ValueError as err:
        raise site.error(str(err), field=field, fix="use a rating from '1' to '5'") from None


def _survey(value: object, site: _Site) -> dict[str, dict[str, int]]:
    """Seeker and supporter scores as integers; a missing or empty side is ``{}``."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise site.error(
            f"expected an object, got {_kind(value)}",
            field="survey_score",
            fix="use {'seeker': {...}, 'supporter': {...}}",
        )
    survey: dict[str, dict[str, int]] = {}
    for side in (Role.SEEKER.value, Role.SUPPORTER.value):
        scores = _optional_object(
            value.get(side), site, f"survey_score.{side}", "use an object of scores, or {}"
        )
        survey[side] = {}
        for name, score in scores.items():
            field = f"survey_score.{side}.{name}"
            try:
                survey[side][_text(name, site, field)] = parse_score(score)
            except ValueError as err:
                raise site.error(str(err), field=field, fix="use a whole number") from None
    return survey


def _required_label(record: dict[str, object], key: str, site: _Site) -> str:
    """A required category such as ``problem_type``: stripped, spelling and case kept."""
    fix = f"give the conversation's {key.replace('_', ' ')} as a string, e.g. 'job crisis'"
    if key not in record:
        raise site.error("is missing", field=key, fix=fix)
    label = _text(record[key], site, key).strip()
    if not label:
        raise site.error("is empty", field=key, fix=fix)
    return label


def _optional_text(record: dict[str, object], key: str, site: _Site) -> str:
    value = record.get(key)
    return "" if value is None else _text(value, site, key)


def _text(value: object, site: _Site, field: str) -> str:
    """``value`` as a string that can be written back as UTF-8 (no lone surrogate escapes)."""
    if value is None:
        raise site.error("is missing", field=field, fix="give it as a string")
    if not isinstance(value, str):
        raise site.error(
            f"expected a string, got {_kind(value)}", field=field, fix="give it as a string"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise site.error(
            "holds an unpaired surrogate escape (\\ud800-\\udfff)",
            field=field,
            fix="repair the escape or remove the character",
        ) from None
    return value


def _json_problem(err: ValueError | RecursionError) -> str:
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg} at column {err.colno}"
    if isinstance(err, RecursionError):
        return "nested too deeply"
    return str(err)


def _optional_object(value: object, site: _Site, field: str, fix: str) -> dict[str, object]:
    """``value`` as an object, ``{}`` when absent; anything else is an error at ``field``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise site.error(f"expected an object, got {_kind(value)}", field=field, fix=fix)
    return cast(dict[str, object], value)


def _kind(value: object) -> str:
    """A JSON-ish name for a value's type, for messages."""
    names = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)
