"""The PandaLM test set (``../shared/data/pandalm/``, when present) as verdicts: 999 pairs, each
judged by three people and by two LLM judges (GPT-3.5 and PandaLM-7B), every pair its own
conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.rows import Verdict

PANDALM = Path(__file__).resolve().parents[2] / "shared" / "data" / "pandalm"
PEOPLE = ("annotator1", "annotator2", "annotator3")
JUDGES = {"gpt-3.5-turbo": "gpt_result", "pandalm-7b": "pandalm_result"}
SOURCES = {**{p: "human" for p in PEOPLE}, **{j: "llm" for j in JUDGES}}
_WINNER = {0: "tie", 1: "a", 2: "b", "Tie": "tie", "1": "a", "2": "b"}


def pandalm_verdicts() -> list[Verdict]:
    """Every verdict of the set whose answer is a side or a tie (GPT-3.5's "garbage" left out),
    response 1 as a; skips the test when the data is not here."""
    if not (PANDALM / "testset-v1.json").is_file():
        pytest.skip("the PandaLM test set is not in ../shared/data/pandalm")
    pairs = json.loads((PANDALM / "testset-v1.json").read_text(encoding="utf-8"))
    judged = {
        judge: {
            row["idx"]: row[field]
            for row in json.loads((PANDALM / f"{judge}-testset-v1.json").read_text("utf-8"))
        }
        for judge, field in JUDGES.items()
    }
    out = []
    for pair in pairs:
        first, second = pair["cmp_key"].split("_", 1)
        answers = [(p, pair[p]) for p in PEOPLE]
        answers += [(j, judged[j].get(pair["idx"])) for j in JUDGES]
        out += [
            Verdict(item=pair["idx"], a=first, b=second, judge=who, winner=_WINNER[answer])
            for who, answer in answers
            if answer in _WINNER
        ]
    return out
