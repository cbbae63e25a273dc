"""The rule-based coding stage on a crafted store: what it codes (counted judgments with a
rationale), the sides it stores in the pair's terms, and that a rerun codes only what is new."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select

from heart.config import parse_study
from heart.errors import ConfigError
from heart.rationales import RULE_CODER, load_codebook
from heart.rationales.code import code_with_rules
from heart.store import RaterRow, RationaleCodeRow, RationaleCodingRow, Store
from heart.study import open_study

from ..helpers import heart
from ..rationale_rows import Said, add_pair, add_said, crafted_study

CODEBOOK = load_codebook()


def _codes(store: Store) -> dict[str, list[tuple[str, str, str, str]]]:
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    with store.session() as s:
        for row in s.scalars(select(RationaleCodeRow).order_by(RationaleCodeRow.span_start)):
            assert (row.coder, row.codebook_hash) == (RULE_CODER, CODEBOOK.hash)
            out.setdefault(row.judgment_id, []).append((row.theme, row.side, row.evidence, row.cue))
    return out


def test_rules_code_every_counted_rationale_once_in_the_pairs_terms(store: Store) -> None:
    ids = crafted_study(store)
    add_said(store, Said(2, "j2", "a", "A names the feeling.", status="failed"))
    first = code_with_rules(store, CODEBOOK)
    assert (first.coded, first.already_done) == (15, 0)  # 16 minus the empty rationale
    codes = _codes(store)
    assert codes[ids[0, "j1"]] == [
        ("names-feeling", "a", "names the hurt", "A"),
        ("asks-question", "a", "asks what", "A"),
    ]
    # j2 saw the pair in the order b, a: the A it calls generic is the pair's b
    assert codes[ids[0, "j2"]] == [("generic-scripted", "b", "generic", "A")]
    assert ids[1, "h2"] not in codes  # coded, but no theme: a coding without codes
    with store.session() as s:
        codings = {r.judgment_id: r.status for r in s.scalars(select(RationaleCodingRow))}
    assert codings[ids[1, "h2"]] == "ok"
    assert ids[3, "h2"] not in codings  # no rationale
    assert "jd-2-j2-ab" not in codings  # a failed judgment does not count
    assert first.codes == sum(len(c) for c in codes.values())

    again = code_with_rules(store, CODEBOOK)
    assert (again.coded, again.codes, again.already_done) == (0, 0, 15)
    add_said(store, Said(2, "h3", "a", "A is warm and gentle."))
    later = code_with_rules(store, CODEBOOK)
    assert (later.coded, later.codes, later.already_done) == (1, 2, 15)
    # a new codebook (another hash) reads everything again, beside the old codes
    edited = replace(CODEBOOK, hash="0" * 64)
    assert code_with_rules(store, edited).coded == 16


def test_a_rater_excluded_by_quality_control_is_not_coded(store: Store) -> None:
    add_pair(store, 0)
    add_said(store, Said(0, "h1", "a", "A names the feeling."))
    with store.session() as s:
        rater = s.get(RaterRow, "h1")
        assert rater is not None
        rater.excluded_reason = "failed 2 of 2 quality checks"
    assert code_with_rules(store, CODEBOOK).coded == 0


def test_the_command_codes_then_has_nothing_left(tmp_path: Path) -> None:
    root = tmp_path / "study"
    root.mkdir()
    (root / "study.yaml").write_text(
        "name: r\nsystems: [{name: m1, kind: model, family: m1, model: {}}]\n", encoding="utf-8"
    )
    with open_study(root) as study:
        crafted_study(study.store)
    first = heart("rationales", "--study", root).stdout
    assert "15 coded by the rule-based coder (rules-v1, codebook v1), 15 themes found" in first
    again = heart("rationales", "--study", root).stdout
    assert "rationales: 0 coded by the rule-based coder" in again and "15 coded before" in again
    dry = heart("rationales", "--dry-run", "--study", root).stdout
    assert "nothing to do" in dry and "The rule-based coder makes no model calls." in dry


def test_the_rationales_settings_are_checked_with_their_line() -> None:
    base = "name: r\nsystems: [{name: m1, kind: control, family: c, reply: hi}]\n"
    config = parse_study(base + "rationales:\n  coder: {provider: openai, model: m}\n")
    assert config.rationales.coder is not None and config.rationales.reasks == 1
    assert parse_study(base).rationales.coder is None
    with pytest.raises(ConfigError, match=r"line 4: 'rationales.reasks'.*less than or equal to 5"):
        parse_study(base + "rationales:\n  reasks: 9\n")
