"""The LLM coder against a local OpenAI-compatible server: valid codes stored in the pair's
terms, an answer that quotes words the rationale lacks asked again then stored failed, one fixed
on the re-ask, a rerun that asks only what failed, the dry run, and the report's comparison with
the rule-based coder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from heart import pipeline
from heart.rationales import load_codebook
from heart.rationales.llm_coder import InvalidCoding, parse_coding
from heart.report import gather_facts, render_markdown
from heart.store import JudgmentRow, RationaleCodeRow, RationaleCodingRow, Store
from heart.study import create_study, open_study
from heart.types import Shown

from ..fakes.fault_server import FaultServer, conversation
from ..helpers import rewrite_study

CODEBOOK = load_codebook()
PLAIN = "I hear you. What happened next?"
BRIEF = "That sounds hard."
RATIONALES = {  # by which control replies the judge sees
    "both": "A names the feeling and asks what happened.",
    "plain": "A is generic.",  # the coder's first answer is prose, the second valid
    "brief": "B sounds natural.",  # the coder quotes words that are not there, twice
}
ITEMS = 2


def _judge(user: str) -> str:
    seen = "both" if PLAIN in user and BRIEF in user else "plain" if PLAIN in user else "brief"
    axes = dict.fromkeys("HEART", "none")
    return json.dumps({"winner": "A", "strength": 2, "axes": axes, "rationale": RATIONALES[seen]})


def _code(reason: str, asked_again: bool) -> str:
    def code(theme: str, evidence: str, reply: str = "A") -> dict[str, Any]:
        return {"theme": theme, "reply": reply, "denied": False, "evidence": evidence}

    if reason == RATIONALES["both"]:
        codes = [code("names-feeling", "names the feeling"), code("asks-question", "asks what")]
        return json.dumps({"codes": codes})
    if reason == RATIONALES["plain"]:
        if not asked_again:
            return "The judge finds A generic."
        return json.dumps({"codes": [code("generic-scripted", "generic")]})
    return json.dumps({"codes": [code("sounds-natural", "feels natural", "B")]})


def _answer(body: dict[str, Any]) -> str:
    turns = conversation(body)
    first_user = next(text for role, text in turns if role == "user")
    if turns[0][1].startswith("You read the reason a judge gave"):
        reason = first_user.split("The judge's reason:\n", 1)[1].split("\n\nCode the reason", 1)[0]
        return _code(reason, asked_again=any(role == "assistant" for role, _ in turns))
    return _judge(first_user)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(_answer) as fault_server:
        yield fault_server


def _study(root: Path, server: FaultServer, store: Store) -> Path:
    """The demo corpus with two control systems and the ESConv original, one judge and the LLM
    coder at the server, and ``store`` (SQLite or PostgreSQL) as the study's store."""
    create_study(root, demo=True)
    url = store.engine.url.render_as_string(hide_password=False)
    model = f"{{provider: openai, base_url: '{server.openai_base_url}', model: local}}"
    rewrite_study(
        root,
        [f'{{name: plain, kind: control, family: plain, reply: "{PLAIN}"}}',
         f'{{name: brief, kind: control, family: brief, reply: "{BRIEF}"}}',
         "{name: esconv-original, kind: dataset, family: dataset}"],
        [f"{{name: judge, family: j, model: {model}}}"],
        f"rationales: {{coder: {model}}}\nengine: {{providers: {{openai: {{concurrency: 1}}}}}}\n"
        f"store: '{url}'\n",
        items=ITEMS,
    )  # fmt: skip
    with open_study(root) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        pipeline.judge(study)
    return root


def test_evidence_must_be_words_of_the_rationale() -> None:
    reason = "Reply B asks  what HAPPENED."
    answer = {"codes": [{"theme": "asks-question", "reply": "B", "denied": False,
                         "evidence": "asks what happened"}]}  # fmt: skip
    (code,) = parse_coding(json.dumps(answer), reason, CODEBOOK)
    assert (code.theme, code.shown, code.evidence) == ("asks-question", Shown.SECOND,
                                                       "asks what happened")  # fmt: skip
    assert reason[code.start : code.end] == "asks  what HAPPENED"
    for bad, why in (
        ({"codes": [{**answer["codes"][0], "evidence": "asks why"}]}, "is not words of the reason"),
        ({"codes": [{**answer["codes"][0], "theme": "charm"}]}, "is not a theme id"),
        ({"codes": [{**answer["codes"][0], "reply": "C"}]}, 'reply must be "A", "B" or "none"'),
        ({"codes": [{**answer["codes"][0], "evidence": " "}]}, "quotes no evidence"),
        ({"themes": []}, 'the one key "codes"'),
    ):
        with pytest.raises(InvalidCoding, match=why):
            parse_coding(json.dumps(bad), reason, CODEBOOK)


def test_the_llm_coder_codes_checks_and_resumes(
    server: FaultServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    root = _study(tmp_path / "s", server, store)
    with open_study(root) as study:
        (plan,) = pipeline.dry_run(study, ("rationales",)).stages
        assert plan.models[0].calls == 3 * ITEMS  # three pairs per item, one judge
        summary = pipeline.code_rationales(study)
        assert summary.rules.coded == 3 * ITEMS
        assert summary.llm is not None and summary.llm.model_calls.failed == ITEMS
        coder = summary.llm.plan.coder
        with study.store.session() as s:
            codings = {
                j.rationale: (c.status, c.error, len(c.refused), j.order)
                for c, j in s.execute(
                    select(RationaleCodingRow, JudgmentRow)
                    .join(JudgmentRow, JudgmentRow.id == RationaleCodingRow.judgment_id)
                    .where(RationaleCodingRow.coder == coder)
                )
            }
            codes = s.execute(
                select(RationaleCodeRow.theme, RationaleCodeRow.side, JudgmentRow.order)
                .join(JudgmentRow, JudgmentRow.id == RationaleCodeRow.judgment_id)
                .where(RationaleCodeRow.coder == coder)
            ).all()
    assert codings[RATIONALES["both"]][:3] == ("ok", None, 0)
    assert codings[RATIONALES["plain"]][:3] == ("ok", None, 1)  # fixed when asked again
    status, error, refused, _ = codings[RATIONALES["brief"]]
    assert (status, refused) == ("failed", 1)
    assert error is not None and "after 2 asks" in error and "is not words of the reason" in error
    # every code says A, the reply shown first: the pair's a or b as the judgment's order says
    assert {theme for theme, _, _ in codes} == {"names-feeling", "asks-question",
                                                "generic-scripted"}  # fmt: skip
    assert all(side == ("a" if order == "ab" else "b") for _, side, order in codes)

    asked = len(server.requests)
    with open_study(root) as study:
        again = pipeline.code_rationales(study)
        assert again.llm is not None
        assert (again.llm.plan.to_code, again.llm.plan.already_done) == (ITEMS, 2 * ITEMS)
        assert again.rules.coded == 0
        markdown = render_markdown(gather_facts(study))
    assert len(server.requests) - asked == 2 * ITEMS  # only the failed ones, asked twice each
    section = markdown.split("## Rationales", 1)[1].split("\n## ", 1)[0]
    assert f"Coded by {coder} with codebook v1" in section
    assert f"The LLM coder {coder} agrees with the rule-based coder on" in section
    assert "### LLM coder against the rule-based coder" in section
