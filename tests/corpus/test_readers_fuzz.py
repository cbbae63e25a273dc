"""Damaged ESConv files: reading either succeeds or raises CorpusError, never anything else."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heart.corpus import STRATEGIES, detect_layout, load_corpus, read_file
from heart.errors import CorpusError
from heart.types import Conversation, Role

from ..damage import damage_bytes

LAYOUTS = ("hf", "upstream", "failed")
SPEAKERS = {
    "hf": ("usr", "sys"),
    "upstream": ("seeker", "supporter"),
    "failed": ("speaker", "listener"),
}
LABELS = [*STRATEGIES, "Questions", "Other", "Restatement", "Direct Guidance", " question "]

texts = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from([" ", "\n", "\t", "\u00a0"]),
    max_size=15,
)
utterances = st.lists(
    st.tuples(
        st.sampled_from(Role),
        texts,
        st.sampled_from(LABELS) | st.none(),
        st.sampled_from(["1", "2", "3", "4", "5"]) | st.none(),
    ),
    min_size=1,
    max_size=6,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def conversations(draw: st.DrawFn) -> dict[str, Any]:
    """A valid conversation in a neutral form (utterances as tuples)."""
    return {
        "experience_type": draw(st.sampled_from(["Current Experience", "Previous Experience"])),
        "emotion_type": draw(texts.filter(str.strip)),
        "problem_type": draw(texts.filter(str.strip)),
        "situation": draw(texts),
        "survey_score": {
            "seeker": draw(
                st.dictionaries(
                    st.sampled_from(["empathy", "relevance"]), st.sampled_from(["1", "3", "5"])
                )
            ),
            "supporter": draw(st.dictionaries(st.just("relevance"), st.sampled_from(["2", "4"]))),
        },
        "dialog": draw(utterances),
    }


def serialise(conversation: dict[str, Any], layout: str, *, feedback: bool = True) -> Any:
    """The conversation as the JSON value one record of ``layout`` holds."""
    seeker, supporter = SPEAKERS[layout]
    turns: list[dict[str, Any]] = []
    for role, text, strategy, rating in conversation["dialog"]:
        label = seeker if role is Role.SEEKER else supporter
        if layout == "hf":
            turn: dict[str, Any] = {"text": text, "speaker": label}
            if role is Role.SUPPORTER and strategy is not None:
                turn["strategy"] = strategy
        else:
            annotation: dict[str, str] = {}
            if role is Role.SUPPORTER and strategy is not None:
                annotation["strategy"] = strategy
            if role is Role.SEEKER and rating is not None and feedback:
                annotation["feedback"] = rating
            turn = {"speaker": label, "annotation": annotation, "content": text}
        turns.append(turn)
    return {**conversation, "dialog": turns}


def file_text(records: list[Any], layout: str) -> str:
    if layout == "hf":
        return "\n".join(json.dumps(r) for r in records)
    return json.dumps(records, indent=1, ensure_ascii=False)


def slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in a JSON value, for damage to pick from."""
    found: list[tuple[Any, Any]] = []
    keys = value.keys() if isinstance(value, dict) else range(len(value))
    for key in list(keys):
        found.append((value, key))
        if isinstance(value[key], dict | list):
            found.extend(slots(value[key]))
    return found


def damage_value(data: st.DataObject, records: list[Any]) -> None:
    """Drop a key, change a value's type, or replace a speaker label, in place."""
    places = slots(records)
    if not places:
        return
    container, key = data.draw(st.sampled_from(places))
    action = data.draw(st.sampled_from(["drop", "retype", "speaker"]))
    if action == "drop":
        del container[key]
    elif action == "retype":
        container[key] = data.draw(json_values)
    else:
        speakers = [
            turn
            for record in records
            if isinstance(record, dict)
            for turn in (record.get("dialog") or [])
            if isinstance(turn, dict)
        ]
        if speakers:
            turn = data.draw(st.sampled_from(speakers))
            turn["speaker"] = data.draw(
                st.sampled_from(["usr", "sys", "seeker", "listener", "Speaker", "", "bot"]) | texts
            )


def read_or_refuse(path: Path) -> list[Conversation] | None:
    """The conversations, or None when the readers refuse the file with a CorpusError."""
    with contextlib.suppress(CorpusError):
        detect_layout(path)
    try:
        load_corpus(path)
        return [conversation for _, conversation in read_file(path)]
    except CorpusError as err:
        assert str(path) in str(err)
        return None


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(conversations(), min_size=1, max_size=3),
    layout=st.sampled_from(LAYOUTS),
    data=st.data(),
)
def test_damaged_files_are_read_or_refused_with_corpus_error(
    workdir: Path, records: list[dict[str, Any]], layout: str, data: st.DataObject
) -> None:
    values = [serialise(record, layout) for record in records]
    for _ in range(data.draw(st.integers(0, 2))):
        damage_value(data, values)
    try:
        raw = file_text(values, layout).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):  # a drawn value JSON cannot write; nothing to read
        return
    for _ in range(data.draw(st.integers(0, 2))):
        raw = damage_bytes(data, raw)
    path = workdir / f"damaged.{layout}.json"
    path.write_bytes(raw)
    read_or_refuse(path)


@settings(max_examples=200, deadline=None)
@given(records=st.lists(conversations(), min_size=1, max_size=3))
def test_every_layout_gives_the_same_conversations(
    workdir: Path, records: list[dict[str, Any]]
) -> None:
    read: dict[str, list[Conversation] | None] = {}
    for layout in LAYOUTS:
        path = workdir / f"same.{layout}.json"
        values = [serialise(record, layout, feedback=False) for record in records]
        path.write_text(file_text(values, layout), encoding="utf-8")
        read[layout] = read_or_refuse(path)
    assert read["hf"] == read["upstream"] == read["failed"]
    if read["hf"] is not None:
        for conversation in read["hf"]:
            for turn in conversation.turns:
                assert turn.text == " ".join(turn.parts)
                assert all(part == " ".join(part.split()) and part for part in turn.parts)
                assert all(s is None or s in STRATEGIES for s in turn.strategies)


@settings(max_examples=100, deadline=None)
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_are_read_or_refused_with_corpus_error(workdir: Path, raw: bytes) -> None:
    path = workdir / "any.json"
    path.write_bytes(raw)
    read_or_refuse(path)
