"""The ESConv readers: three layouts, one normalised form, errors that say where and what to fix."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from heart.corpus import (
    STRATEGIES,
    Origin,
    detect_layout,
    load_corpus,
    normalise_strategy,
    read_file,
)
from heart.errors import CorpusError
from heart.types import Conversation, Role, Turn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "esconv"

# One conversation in a neutral form: (role, text, strategy, feedback) per utterance.
Utter = tuple[Role, str, str | None, str | None]

DIALOG: list[Utter] = [
    (Role.SUPPORTER, "Hi, how are you today?", "Question", None),
    (Role.SEEKER, "Not great.", None, None),
    (Role.SEEKER, "I think I will lose my job.", None, "3"),
    (Role.SUPPORTER, "That sounds really stressful.", "Reflection of feelings", None),
    (Role.SUPPORTER, "I went through that last year.", "Self-disclosure", None),
    (Role.SEEKER, "What did you do?", None, "5"),
    (Role.SUPPORTER, "I spoke to my manager early.", "Providing Suggestions", None),
]

META: dict[str, Any] = {
    "experience_type": "Current Experience",
    "emotion_type": "anxiety",
    "problem_type": "job crisis",
    "situation": "I am on sick leave and afraid of losing my job.",
    "survey_score": {
        "seeker": {
            "initial_emotion_intensity": "4",
            "empathy": "5",
            "relevance": "4",
            "final_emotion_intensity": "2",
        },
        "supporter": {"relevance": "5"},
    },
}

LABELS = {
    "hf": ("usr", "sys"),
    "upstream": ("seeker", "supporter"),
    "failed": ("speaker", "listener"),
}


def hf_record(dialog: list[Utter] = DIALOG, **meta: Any) -> dict[str, Any]:
    """The conversation as one line of the hf layout (no feedback: hf has none)."""
    turns = []
    for role, text, strategy, _ in dialog:
        turn: dict[str, Any] = {"text": text, "speaker": "usr" if role is Role.SEEKER else "sys"}
        if strategy is not None:
            turn["strategy"] = strategy
        turns.append(turn)
    return {**META, **meta, "dialog": turns, "seeker_question1": "", "supporter_question1": ""}


def array_record(
    dialog: list[Utter] = DIALOG,
    layout: str = "upstream",
    *,
    feedback: bool = True,
    quirks: bool = False,
    **meta: Any,
) -> dict[str, Any]:
    """The conversation in an array layout; ``quirks`` adds the chat UI's stray whitespace."""
    seeker, supporter = LABELS[layout]
    turns = []
    for role, text, strategy, rating in dialog:
        annotation: dict[str, str] = {}
        if strategy is not None:
            annotation["strategy"] = strategy
        if rating is not None and feedback:
            annotation["feedback"] = rating
        content = text.replace(" ", "  ", 1) + "\n" if quirks else text
        turns.append(
            {
                "speaker": seeker if role is Role.SEEKER else supporter,
                "annotation": annotation,
                "content": content,
            }
        )
    return {**META, **meta, "dialog": turns}


def write_hf(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    return path


def write_array(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text(json.dumps(list(records), indent=1), encoding="utf-8")
    return path


def only(path: Path) -> Conversation:
    [(_, conversation)] = read_file(path)
    return conversation


# --- each layout ----------------------------------------------------------------------------------


def test_hf_layout_merges_consecutive_turns_and_keeps_part_boundaries(tmp_path: Path) -> None:
    conversation = only(write_hf(tmp_path / "train.json", hf_record()))
    assert [t.role for t in conversation.turns] == [
        Role.SUPPORTER,
        Role.SEEKER,
        Role.SUPPORTER,
        Role.SEEKER,
        Role.SUPPORTER,
    ]
    assert conversation.turns[1] == Turn(
        role=Role.SEEKER,
        text="Not great. I think I will lose my job.",
        parts=("Not great.", "I think I will lose my job."),
    )
    assert conversation.turns[2] == Turn(
        role=Role.SUPPORTER,
        text="That sounds really stressful. I went through that last year.",
        parts=("That sounds really stressful.", "I went through that last year."),
        strategies=("Reflection of feelings", "Self-disclosure"),
    )
    assert conversation.turns[1].strategies == ()
    assert all(t.feedback == () for t in conversation.turns)
    assert conversation.problem_type == "job crisis"
    assert conversation.emotion_type == "anxiety"
    assert conversation.experience_type == "Current Experience"
    assert conversation.survey == {
        "seeker": {
            "initial_emotion_intensity": 4,
            "empathy": 5,
            "relevance": 4,
            "final_emotion_intensity": 2,
        },
        "supporter": {"relevance": 5},
    }


def test_upstream_layout_reads_feedback_as_ints_per_part(tmp_path: Path) -> None:
    conversation = only(write_array(tmp_path / "ESConv.json", array_record()))
    seeker = conversation.turns[1]
    assert seeker.parts == ("Not great.", "I think I will lose my job.")
    assert seeker.feedback == (None, 3)
    assert conversation.turns[3].feedback == (5,)
    assert conversation.turns[0].feedback == ()
    assert conversation.turns[2].strategies == ("Reflection of feelings", "Self-disclosure")


def test_failed_layout_maps_speaker_listener_and_old_strategy_labels(tmp_path: Path) -> None:
    dialog: list[Utter] = [
        (Role.SEEKER, "Hey there\n", None, None),
        (Role.SUPPORTER, "hi", "Other", None),
        (Role.SUPPORTER, "how are you?", "Questions", None),
        (Role.SEEKER, "sad\n", None, "2"),
        (Role.SUPPORTER, "You should rest.", "Direct Guidance", None),
        (Role.SUPPORTER, "You did well.", "Approval and Reassurance", None),
        (Role.SUPPORTER, "So you feel sad.", "Restatement", None),
        (Role.SUPPORTER, "Me too.", "  self-DISCLOSURE ", None),
    ]
    path = write_array(tmp_path / "FailedESConv.json", array_record(dialog, "failed"))
    conversation = only(path)
    assert [t.role for t in conversation.turns] == [
        Role.SEEKER,
        Role.SUPPORTER,
        Role.SEEKER,
        Role.SUPPORTER,
    ]
    assert conversation.turns[0].parts == ("Hey there",)
    assert conversation.turns[1].strategies == ("Others", "Question")
    assert conversation.turns[2].feedback == (2,)
    assert conversation.turns[3].strategies == (
        "Providing Suggestions",
        "Affirmation and Reassurance",
        "Restatement or Paraphrasing",
        "Self-disclosure",
    )
    assert read_file(path)[0][0] == Origin(str(path), 0, None, "failed")


def test_whitespace_is_collapsed_and_blank_utterances_are_dropped(tmp_path: Path) -> None:
    dialog: list[Utter] = [
        (Role.SEEKER, "  I  feel\n\nbad \t today\n", None, None),
        (Role.SUPPORTER, " \n ", "Question", None),  # blank: dropped, so the seeker parts merge
        (Role.SEEKER, "really\u00a0bad", None, None),
        (Role.SUPPORTER, "Why?", "Question", None),
    ]
    record = array_record(
        dialog,
        situation="  lost\n my  job ",
        problem_type=" job crisis ",
        experience_type=" Current\nExperience ",
    )
    conversation = only(write_array(tmp_path / "a.json", record))
    assert conversation.turns[0].parts == ("I feel bad today", "really bad")
    assert conversation.turns[0].text == "I feel bad today really bad"
    assert len(conversation.turns) == 2
    assert conversation.situation == "lost my job"
    assert conversation.problem_type == "job crisis"
    assert conversation.experience_type == "Current Experience"


def test_category_labels_keep_their_case(tmp_path: Path) -> None:
    record = hf_record(problem_type="Sleep Problems", emotion_type="Anxiety")
    conversation = only(write_hf(tmp_path / "a.jsonl", record))
    assert (conversation.problem_type, conversation.emotion_type) == ("Sleep Problems", "Anxiety")


def test_survey_with_empty_or_missing_sides_and_int_values(tmp_path: Path) -> None:
    partial = hf_record(survey_score={"seeker": {"initial_emotion_intensity": 3}})
    missing = {k: v for k, v in hf_record().items() if k != "survey_score"}
    path = write_hf(tmp_path / "a.json", partial, missing)
    [(_, first), (_, second)] = read_file(path)
    assert first.survey == {"seeker": {"initial_emotion_intensity": 3}, "supporter": {}}
    assert second.survey == {"seeker": {}, "supporter": {}}


def test_a_supporter_turn_without_strategy_is_allowed(tmp_path: Path) -> None:
    dialog: list[Utter] = [(Role.SEEKER, "hi", None, None), (Role.SUPPORTER, "hello", None, None)]
    conversation = only(write_hf(tmp_path / "a.json", hf_record(dialog)))
    assert conversation.turns[1].strategies == (None,)


def test_hf_origins_count_file_lines_and_skip_blank_lines(tmp_path: Path) -> None:
    other = hf_record(situation="something else")
    path = tmp_path / "a.json"
    path.write_text(f"\n{json.dumps(hf_record())}\n\n  \n{json.dumps(other)}\n", encoding="utf-8")
    origins = [origin for origin, _ in read_file(path)]
    assert origins == [Origin(str(path), 0, 2, "hf"), Origin(str(path), 1, 5, "hf")]


# --- one conversation, any layout -----------------------------------------------------------------


def test_hf_and_upstream_with_quirks_give_identical_conversations(tmp_path: Path) -> None:
    hf = only(write_hf(tmp_path / "test.json", hf_record()))
    upstream = only(
        write_array(tmp_path / "ESConv.json", array_record(feedback=False, quirks=True))
    )
    assert upstream == hf
    assert upstream.id == hf.id
    assert hf.id.startswith("c") and len(hf.id) == 17


def test_feedback_does_not_change_the_id(tmp_path: Path) -> None:
    hf = only(write_hf(tmp_path / "test.json", hf_record()))
    rated = only(write_array(tmp_path / "ESConv.json", array_record(quirks=True)))
    assert rated.id == hf.id
    assert rated != hf
    assert [t.feedback for t in rated.turns] == [(), (None, 3), (), (5,), ()]
    assert rated.model_copy(update={"turns": hf.turns}) == hf


def test_the_id_depends_on_content_not_on_file_or_position(tmp_path: Path) -> None:
    record = hf_record()
    other = hf_record(situation="another story")
    first = read_file(write_hf(tmp_path / "a.json", record, other))
    second = read_file(write_hf(tmp_path / "b.json", other, record))
    assert first[0][1].id == second[1][1].id
    assert first[0][1].id != first[1][1].id


# --- detection and folders ------------------------------------------------------------------------


def test_detect_layout_of_each_layout(tmp_path: Path) -> None:
    assert detect_layout(write_hf(tmp_path / "train.json", hf_record())) == "hf"
    assert detect_layout(write_array(tmp_path / "ESConv.json", array_record())) == "upstream"
    failed = write_array(tmp_path / "FailedESConv.json", array_record(layout="failed"))
    assert detect_layout(failed) == "failed"
    padded = tmp_path / "padded.jsonl"
    padded.write_text("\n\n  " + json.dumps(hf_record()), encoding="utf-8")
    assert detect_layout(padded) == "hf"


def test_folder_loads_every_split_sorted_with_duplicates_counted(tmp_path: Path) -> None:
    a, b, c = (hf_record(situation=s) for s in ("story a", "story b", "story c"))
    write_hf(tmp_path / "train.json", a, b)
    write_hf(tmp_path / "valid.jsonl", c, a)  # a again: a duplicate
    (tmp_path / "README.md").write_text("not a corpus file", encoding="utf-8")
    corpus = load_corpus(tmp_path)
    assert len(corpus.conversations) == 3
    assert corpus.duplicates == 1
    ids = [conversation.id for conversation in corpus.conversations]
    assert ids == sorted(ids)
    assert {conversation.situation for conversation in corpus.conversations} == {
        "story a",
        "story b",
        "story c",
    }
    first_a = next(cv for cv in corpus.conversations if cv.situation == "story a")
    assert corpus.origins[first_a.id] == Origin(str(tmp_path / "train.json"), 0, 1, "hf")
    assert set(corpus.origins) == set(ids)


def test_folder_may_mix_layouts_and_dedupes_across_them(tmp_path: Path) -> None:
    write_array(tmp_path / "a_upstream.json", array_record(feedback=False, quirks=True))
    write_hf(tmp_path / "b_hf.json", hf_record())
    corpus = load_corpus(tmp_path)
    assert len(corpus.conversations) == 1
    assert corpus.duplicates == 1
    assert corpus.origins[corpus.conversations[0].id].layout == "upstream"


def test_load_corpus_of_a_single_file(tmp_path: Path) -> None:
    corpus = load_corpus(str(write_hf(tmp_path / "x.txt", hf_record())))
    assert len(corpus.conversations) == 1
    assert corpus.duplicates == 0


# --- strategies -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Question", "Question"),
        ("questions", "Question"),
        ("Other", "Others"),
        ("  reflection   OF feelings ", "Reflection of feelings"),
        ("Restatement", "Restatement or Paraphrasing"),
        ("Approval and Reassurance", "Affirmation and Reassurance"),
        ("Direct Guidance", "Providing Suggestions"),
    ],
)
def test_normalise_strategy(label: str, expected: str) -> None:
    assert normalise_strategy(label) == expected


def test_the_final_labels_map_to_themselves() -> None:
    assert len(STRATEGIES) == 8
    assert [normalise_strategy(label) for label in STRATEGIES] == list(STRATEGIES)


def test_normalise_strategy_rejects_unknown_labels() -> None:
    with pytest.raises(ValueError, match="Empathy"):
        normalise_strategy("Empathy")


# --- errors ---------------------------------------------------------------------------------------


def error_of(path: Path) -> str:
    with pytest.raises(CorpusError) as caught:
        read_file(path)
    message = str(caught.value)
    assert str(path) in message
    return message


def test_malformed_json_in_hf_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "train.json"
    path.write_text(json.dumps(hf_record()) + '\n{"dialog": [\n', encoding="utf-8")
    message = error_of(path)
    assert "line 2" in message
    assert "malformed JSON" in message
    assert "JSON Lines" in message


def test_malformed_json_in_an_array_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "ESConv.json"
    path.write_text('[\n {"dialog": [}\n]', encoding="utf-8")
    message = error_of(path)
    assert "line 2" in message
    assert "column" in message


@pytest.mark.parametrize("field", ["dialog", "problem_type", "emotion_type"])
def test_missing_conversation_field(tmp_path: Path, field: str) -> None:
    record = {k: v for k, v in array_record().items() if k != field}
    message = error_of(write_array(tmp_path / "ESConv.json", array_record(), record))
    assert "conversation 1" in message
    assert f"field '{field}'" in message
    assert "is missing" in message


def test_missing_turn_text_in_hf(tmp_path: Path) -> None:
    record = hf_record()
    del record["dialog"][2]["text"]
    message = error_of(write_hf(tmp_path / "test.json", record))
    assert "line 1" in message
    assert "field 'dialog[2].text'" in message


def test_missing_speaker_in_upstream(tmp_path: Path) -> None:
    record = array_record()
    del record["dialog"][4]["speaker"]
    message = error_of(write_array(tmp_path / "ESConv.json", record))
    assert "conversation 0" in message
    assert "field 'dialog[4].speaker'" in message


def test_unknown_speaker_label_names_the_accepted_ones(tmp_path: Path) -> None:
    record = hf_record()
    record["dialog"][3]["speaker"] = "bot"
    message = error_of(write_hf(tmp_path / "valid.json", hf_record(situation="x"), record))
    assert "line 2" in message
    assert "field 'dialog[3].speaker'" in message
    assert "'bot'" in message
    assert "'usr'" in message and "'sys'" in message


def test_failed_labels_in_an_upstream_file_are_refused(tmp_path: Path) -> None:
    record = array_record(layout="upstream")
    record["dialog"][1]["speaker"] = "listener"
    message = error_of(write_array(tmp_path / "ESConv.json", record))
    assert "field 'dialog[1].speaker'" in message
    assert "'seeker'" in message and "'supporter'" in message


def test_empty_dialog(tmp_path: Path) -> None:
    message = error_of(write_array(tmp_path / "ESConv.json", array_record([])))
    assert "conversation 0" in message
    assert "field 'dialog'" in message
    assert "empty" in message


def test_dialog_with_only_blank_utterances(tmp_path: Path) -> None:
    dialog: list[Utter] = [(Role.SEEKER, " \n", None, None), (Role.SUPPORTER, "", "Others", None)]
    message = error_of(write_hf(tmp_path / "a.json", hf_record(dialog)))
    assert "line 1" in message
    assert "field 'dialog'" in message
    assert "no utterance" in message


def test_non_utf8_bytes_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "train.json"
    path.write_bytes(json.dumps(hf_record()).encode() + b"\n" + b'{"situation": "caf\xe9"}')
    message = error_of(path)
    assert "line 2" in message
    assert "UTF-8" in message


def test_unknown_strategy_lists_the_accepted_labels(tmp_path: Path) -> None:
    record = array_record()
    record["dialog"][0]["annotation"]["strategy"] = "Empathy"
    message = error_of(write_array(tmp_path / "ESConv.json", record))
    assert "field 'dialog[0].annotation.strategy'" in message
    assert "'Empathy'" in message
    assert all(label in message for label in STRATEGIES)


@pytest.mark.parametrize("rating", ["0", "6", "three", "", 3.5, True, [3]])
def test_feedback_outside_one_to_five(tmp_path: Path, rating: object) -> None:
    record = array_record()
    record["dialog"][2]["annotation"]["feedback"] = rating
    message = error_of(write_array(tmp_path / "ESConv.json", record))
    assert "field 'dialog[2].annotation.feedback'" in message


def test_non_integer_survey_value(tmp_path: Path) -> None:
    record = hf_record(survey_score={"seeker": {"empathy": "high"}, "supporter": {}})
    message = error_of(write_hf(tmp_path / "a.json", record))
    assert "line 1" in message
    assert "field 'survey_score.seeker.empathy'" in message
    assert "'high'" in message


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"dialog": "hello"}, "dialog", "expected a list of turns, got a string"),
        ({"problem_type": 3}, "problem_type", "expected a string, got a number"),
        ({"emotion_type": "  "}, "emotion_type", "is empty"),
        ({"situation": ["a"]}, "situation", "expected a string, got an array"),
        ({"survey_score": [1]}, "survey_score", "expected an object"),
        ({"survey_score": {"seeker": 4}}, "survey_score.seeker", "expected an object"),
    ],
)
def test_wrong_types(tmp_path: Path, change: dict[str, Any], field: str, problem: str) -> None:
    message = error_of(write_hf(tmp_path / "a.json", {**hf_record(), **change}))
    assert f"field '{field}'" in message
    assert problem in message


def test_text_that_is_not_a_string(tmp_path: Path) -> None:
    record = array_record()
    record["dialog"][5]["content"] = 42
    message = error_of(write_array(tmp_path / "ESConv.json", record))
    assert "field 'dialog[5].content'" in message
    assert "expected a string, got a number" in message


def test_a_turn_that_is_not_an_object(tmp_path: Path) -> None:
    record = hf_record()
    record["dialog"][1] = "usr: hi"
    message = error_of(write_hf(tmp_path / "a.json", record))
    assert "field 'dialog[1]'" in message


def test_an_unpaired_surrogate_escape(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(
        json.dumps(hf_record()).replace("Not great.", "Not great \\ud83d"), encoding="utf-8"
    )
    assert "field 'dialog[1].text'" in error_of(path)


@pytest.mark.parametrize("text", ["42", '"dialog"', "null", "x"])
def test_a_file_that_is_not_esconv(tmp_path: Path, text: str) -> None:
    path = tmp_path / "a.json"
    path.write_text(text, encoding="utf-8")
    error_of(path)
    with pytest.raises(CorpusError):
        detect_layout(path)


def test_an_array_that_does_not_hold_objects(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("[1]", encoding="utf-8")
    assert "conversation 0" in error_of(path)


def test_a_json_object_that_is_not_a_line_per_conversation(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps(hf_record(), indent=2), encoding="utf-8")
    message = error_of(path)
    assert "line 1" in message
    assert "JSON Lines" in message


@pytest.mark.parametrize("text", ["", "  \n\n", "[]"])
def test_an_empty_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "a.json"
    path.write_text(text, encoding="utf-8")
    assert "empty" in error_of(path)


def test_a_missing_file_and_an_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file"):
        load_corpus(tmp_path / "nope.json")
    with pytest.raises(CorpusError, match=r"no \.json or \.jsonl files"):
        load_corpus(tmp_path)
    with pytest.raises(CorpusError, match="is a folder"):
        read_file(tmp_path)


def test_an_error_in_a_folder_names_the_file(tmp_path: Path) -> None:
    write_hf(tmp_path / "train.json", hf_record())
    bad = tmp_path / "valid.json"
    bad.write_text("{oops", encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        load_corpus(tmp_path)
    assert caught.value.path == str(bad)
    assert caught.value.line == 1


# --- the shared fixture files and the real corpus -------------------------------------------------


def test_fixture_files_agree_on_conversation_zero() -> None:
    upstream, hf = FIXTURES / "upstream_sample.json", FIXTURES / "hf_sample.jsonl"
    if not (upstream.is_file() and hf.is_file()):
        pytest.skip("tests/fixtures/esconv has no upstream_sample.json and hf_sample.jsonl yet")
    assert detect_layout(upstream) == "upstream"
    assert detect_layout(hf) == "hf"
    from_upstream, from_hf = read_file(upstream)[0][1], read_file(hf)[0][1]
    assert from_upstream.id == from_hf.id
    strip = {"turns": tuple(t.model_copy(update={"feedback": ()}) for t in from_upstream.turns)}
    assert from_upstream.model_copy(update=strip) == from_hf


def test_real_hf_splits_load_completely_and_quickly(esconv_splits: Path) -> None:
    start = time.perf_counter()
    corpus = load_corpus(esconv_splits)
    elapsed = time.perf_counter() - start
    assert len(corpus.conversations) == 1300
    assert corpus.duplicates == 0
    assert elapsed < 20
    parts = [p for c in corpus.conversations for t in c.turns for p in t.parts]
    assert len(parts) == 38365
    strategies = {s for c in corpus.conversations for t in c.turns for s in t.strategies}
    assert strategies == set(STRATEGIES)
    assert {o.layout for o in corpus.origins.values()} == {"hf"}


def test_real_failed_conversations_load(esconv_splits: Path) -> None:
    path = esconv_splits.parent / "FailedESConv.json"
    if not path.is_file():
        pytest.skip("FailedESConv.json is not in the shared corpus")
    assert detect_layout(path) == "failed"
    read = read_file(path)
    assert len(read) == 196
    assert {origin.layout for origin, _ in read} == {"failed"}
    ratings = [f for _, c in read for t in c.turns for f in t.feedback if f is not None]
    assert len(ratings) == 987
    assert set(ratings) == {1, 2, 3, 4, 5}
    assert not any("\n" in p for _, c in read for t in c.turns for p in t.parts)
