"""Every regular expression that reads text from outside (rationales, replies, seeker turns,
model answers, study files, URLs, imported cells), and every function that applies one, reads
128 KiB of hostile text in time linear in it.

The hostile texts are runs of the characters that make a backtracking pattern try again and again
(stops, spaces, line breaks, quotes, brackets, letters, words) with nothing at their end to
match. Time is the thread's processor time (waiting for a busy processor does not count), the
best of up to three runs. The bound is a second, or on a machine so loaded that plain prose of the
same length is already slow, RATIO times what the same function takes on that prose: linear
readers pass either way, and a quadratic one (minutes at this length) fails both.

The codebook's patterns are data, checked for shape when the codebook loads, and timed here
through the rule coder that runs them; the study file's name patterns are pydantic's (a regex
engine without backtracking), timed through the models that hold them.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

import heart
from heart.config import RationalesSpec, SystemSpec
from heart.corpus import collapse_whitespace, normalise_strategy
from heart.corpus._normalise import parse_score
from heart.errors import HeartError
from heart.import_checks import text_problem
from heart.items import safety_rule, screen_seeker_turn
from heart.items._profiles import Profile
from heart.items._rewrite_rules import Source, greets, structure_problems
from heart.items.adversarial import parse_rewrite
from heart.judging import parse_verdict
from heart.people import plain_text
from heart.plain import PlainText, quotes
from heart.rationales import code_rationale, load_codebook
from heart.rationales.llm_coder import InvalidCoding, parse_coding
from heart.strategies import load_taxonomy
from heart.strategies.classify import InvalidClassification, parse_classification
from heart.transcript import render_transcript
from heart.types import Conversation, Role, Turn
from heart.web._logging import redact

SIZE = 128 * 1024
LIMIT_S = 1.0
RATIO = 8.0
CODEBOOK = load_codebook()
TAXONOMY = load_taxonomy()
SRC = Path(heart.__file__).parent


def _run(unit: str, size: int, end: str = "x") -> str:
    return unit * ((size - len(end)) // len(unit)) + end


SHAPES: dict[str, Callable[[int], str]] = {
    "stops": lambda n: _run(".", n),
    "stops, marks and closing quotes": lambda n: _run("!?.'\")", n),
    "spaces": lambda n: _run(" ", n),
    "spaces and line breaks": lambda n: _run(" \n", n),
    "double quotes": lambda n: _run('"', n),
    "curly opening quotes": lambda n: _run("“", n),
    "apostrophes": lambda n: _run("'", n),
    "short quotes": lambda n: _run('"a b c", ', n),
    "brackets": lambda n: _run("([{", n),
    "one long word": lambda n: _run("a", n, end="!"),
    "the letter A": lambda n: _run("A ", n),
    "reply A": lambda n: _run("reply A ", n),
    "one word, then another": lambda n: _run("a ", n, end="b"),
    "a theme's words": lambda n: _run("names the feeling ", n),
    "a theme's words in clauses": lambda n: _run("names the feeling, ", n),
    "digits and hyphens": lambda n: _run("1-", n),
    "addresses": lambda n: _run("a.b@", n),
    "mixed": lambda n: _run("A. 'b' \"c\" (d) “e” , ; but the other ", n),
}
PROSE = (
    "Reply A names her worry about the exam and asks one gentle question, while B jumps "
    "straight to advice. It sounds warm; the second one feels scripted and too long. "
)


def _prose(size: int) -> str:
    return _run(PROSE, size, end="")


def _conversation() -> Conversation:
    turns = [
        Turn(role=Role.SUPPORTER, text="Hello, how are you?", parts=("Hello, how are you?",)),
        Turn(role=Role.SEEKER, text="Not great.", parts=("Not great.",)),
        Turn(role=Role.SUPPORTER, text="I hear you.", parts=("I hear you.",)),
        Turn(role=Role.SEEKER, text="It is hard.", parts=("It is hard.",)),
        Turn(role=Role.SUPPORTER, text="Tell me more.", parts=("Tell me more.",)),
    ]
    return Conversation(id="c", problem_type="p", emotion_type="e", turns=tuple(turns))


SOURCE = Source(_conversation(), 0, 4, Profile.LINEAR_RAMP, (2, 10))


def _quietly(run: Callable[[], object], *refused: type[Exception]) -> None:
    """Run ``run``; the errors it is meant to raise on text like this are an answer too."""
    with contextlib.suppress(*refused):
        run()


def _code_rules(text: str) -> None:
    code_rationale(text, CODEBOOK, text, text[::-1])


def _code_llm(text: str) -> None:
    codes = [{"theme": CODEBOOK.ids[0], "reply": "A", "denied": False,
              "evidence": text[len(text) // 2 :]}]  # fmt: skip
    _quietly(lambda: parse_coding(json.dumps({"codes": codes}), text, CODEBOOK), InvalidCoding)
    _quietly(lambda: parse_coding(text, text, CODEBOOK), InvalidCoding)


def _classify(text: str) -> None:
    evidence = text[len(text) // 2 :]
    answer = {name: {"status": "present", "probability": 0.5, "evidence": evidence}
              for name in TAXONOMY.names}  # fmt: skip
    _quietly(
        lambda: parse_classification(json.dumps(answer), text, TAXONOMY), InvalidClassification
    )


def _verdict(text: str) -> None:
    answer = {"winner": "A", "strength": 2, "axes": {}, "rationale": text}
    _quietly(lambda: parse_verdict(json.dumps(answer)), ValueError)
    _quietly(lambda: parse_verdict(text), ValueError)


def _screen(text: str) -> None:
    screen_seeker_turn(text)
    safety_rule([text])


def _rewrite(text: str) -> None:
    greets(text)
    structure_problems(SOURCE, [("supporter", text), ("seeker", text)])
    _quietly(lambda: parse_rewrite(json.dumps({text: {"speaker": "seeker"}})), ValueError)


def _corpus(text: str) -> None:
    _quietly(lambda: parse_score(text), ValueError)
    _quietly(lambda: normalise_strategy(text), ValueError)
    collapse_whitespace(text)
    render_transcript([Turn(role=Role.SEEKER, text=text, parts=(text,))])


def _plain(text: str) -> None:
    quotes(text, text[len(text) // 2 :])
    PlainText(text).span(text[len(text) // 2 :])


def _study_fields(text: str) -> None:
    _quietly(lambda: SystemSpec.model_validate({"name": text, "kind": "dataset",
                                                "family": "x"}), ValidationError)  # fmt: skip
    _quietly(lambda: RationalesSpec.model_validate({"codebook": text}), ValidationError)


def _people(text: str) -> None:
    _quietly(lambda: plain_text(text, "reply"), HeartError)
    text_problem(text)


PATHS: dict[str, Callable[[str], object]] = {
    "rule coder: code_rationale": _code_rules,
    "LLM coder: parse_coding": _code_llm,
    "strategy classifier: parse_classification": _classify,
    "judge's answer: parse_verdict": _verdict,
    "item screen: screen_seeker_turn, safety_rule": _screen,
    "adversarial rewrite: greets, structure_problems, parse_rewrite": _rewrite,
    "corpus normalisation and transcript": _corpus,
    "plain text: quotes, PlainText.span": _plain,
    "access log: redact": lambda text: redact(f"/invite/{text}?token={text}"),
    "study file's names and versions: SystemSpec, RationalesSpec": _study_fields,
    "text people send and import cells: plain_text, text_problem": _people,
}


def _modules_with_patterns() -> list[str]:
    names = []
    for path in sorted(SRC.rglob("*.py")):
        if re.search(r"^import re$", path.read_text(encoding="utf-8"), re.MULTILINE):
            parts = path.relative_to(SRC.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled pattern a heart module holds at its top level."""
    found = {}
    for name in _modules_with_patterns():
        for attr, value in vars(importlib.import_module(name)).items():
            if isinstance(value, re.Pattern):
                found[f"{name}.{attr}"] = value
    return found


PATTERNS = _patterns()


def _seconds(run: Callable[[str], object], text: str) -> float:
    start = time.thread_time()
    run(text)
    return time.thread_time() - start


def _best(run: Callable[[str], object], text: str, limit: float) -> float:
    """The best of up to three runs; one far over ``limit`` is not noise and is not rerun."""
    best = _seconds(run, text)
    for _ in range(2):
        if best < limit or best > 4 * limit:
            break
        best = min(best, _seconds(run, text))
    return best


def _slow_shapes(run: Callable[[str], object]) -> list[str]:
    """The shapes ``run`` reads too slowly: at a sixteenth of SIZE, a quarter, then SIZE, each
    within its share of the bound, so that a quadratic reader fails in seconds, not hours."""
    slow: dict[str, str] = {}
    for size in (SIZE // 16, SIZE // 4, SIZE):
        prose = _best(run, _prose(size), float("inf"))
        limit = max(LIMIT_S * size / SIZE, RATIO * prose)
        for shape, make in SHAPES.items():
            if shape in slow:
                continue
            took = _best(run, make(size), limit)
            if took >= limit:
                slow[shape] = f"{shape}: {size} chars in {took:.2f} s (limit {limit:.2f} s)"
    return list(slow.values())


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_reader_of_outside_text_takes_linear_time(path: str) -> None:
    assert _slow_shapes(PATHS[path]) == []


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_reads_128_kib_of_hostile_text_in_linear_time(name: str) -> None:
    pattern = PATTERNS[name]
    if isinstance(pattern.pattern, bytes):  # a reader of raw lines: the same text as bytes
        assert _slow_shapes(lambda text: pattern.subn(b"", text.encode("utf-8"))) == []
    else:
        assert _slow_shapes(lambda text: pattern.subn("", text)) == []


def test_every_pattern_in_heart_is_held_where_the_timing_test_finds_it() -> None:
    """No module runs a pattern written inline (``re.search(r"...", text)``): each is compiled
    once at the top of its module, where the test above finds and times it."""
    inline = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr not in ("compile", "escape")
            ):
                inline.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert inline == []
    held = ["rationales._sides._SENTENCE_END", "items._rewrite_rules.SPEAKER_LABEL",
            "items._rules.IDENTIFYING", "plain._WORD"]  # fmt: skip
    assert {f"heart.{name}" for name in held} <= set(PATTERNS)
