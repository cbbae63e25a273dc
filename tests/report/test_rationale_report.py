"""The report's Rationales section on the crafted study: its tables, its CSVs at full precision
with empty cells where there is no data, a study with LLM rationales only, and one with none
coded."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from heart.config import parse_study
from heart.rationales import load_codebook
from heart.rationales.code import code_with_rules
from heart.report import _aside, csv_files, gather_facts, render_html, render_markdown
from heart.report import _facts as _facts_module
from heart.report._facts import StudyFacts
from heart.store import Store
from heart.study import Study

from ..rationale_rows import CRAFTED, Said, add_pair, add_said, crafted_study

STUDY = "name: rationales\nsystems: [{name: m1, kind: model, family: m1, model: {}}]"
CODEBOOK = load_codebook()


def _facts(store: Store, root: Path) -> StudyFacts:
    code_with_rules(store, CODEBOOK)
    return gather_facts(Study(root, parse_study(STUDY), store))


def _section(markdown: str) -> str:
    return markdown.split("## Rationales", 1)[1].split("\n## ", 1)[0]


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_section_shows_themes_co_mention_and_verdicts(store: Store, tmp_path: Path) -> None:
    crafted_study(store)
    facts = _facts(store, tmp_path)
    section = _section(render_markdown(facts))
    assert section.lstrip().startswith(
        "Coded by rules-v1 with codebook v1 (18 themes, sha256 "
        f"{CODEBOOK.hash[:12]}…): 6 of 6 rationales of LLM judges, 9 of 9 rationales of human "
        "raters."
    )
    assert "The rule-based coder is transparent but literal" in section
    assert "| asks one concrete question | R | micro-skill, strength | 50% [" in section
    assert '"asks a" ×3' in section
    assert "| all themes (pooled) | 94% [" in section and "] of 54 | 87% | 0.64 |" in section
    assert "| names the feeling | 100% [100–100%] of 3 | 3" in section  # chance about 33%
    assert "3 of the 3 pairs where the human majority" in section
    assert "| LLM judges | generic or scripted | weakness | 1 | 0% | – | – |" in section
    assert "No human rationales" not in section
    html = render_html(facts)
    assert "<a href='#rationales'>Rationales</a>" in html
    assert "<table id='rationale-comention'>" in html


def test_csvs_hold_the_figures_at_full_precision(store: Store, tmp_path: Path) -> None:
    crafted_study(store)
    files = csv_files(_facts(store, tmp_path))
    themes = {(r["judges"], r["theme"]): r for r in _rows(files["rationale-themes.csv"])}
    asks = themes["llm", "asks-question"]
    assert (asks["hits"], asks["n"], asks["estimate"]) == ("3", "6", "0.5")
    assert (asks["axis"], asks["skill"], asks["polarity"]) == ("R", "true", "strength")
    assert len(themes) == 2 * len(CODEBOOK.themes)
    comention = {r["theme"]: r for r in _rows(files["rationale-comention.csv"])}
    pooled = comention["all"]
    assert (pooled["hits"], pooled["n"], float(pooled["estimate"])) == ("51", "54", 51 / 54)
    assert pooled["human_rate"] == pooled["llm_rate"] == ""  # no data: an empty cell
    assert comention["concise"]["kappa"] == ""  # nobody mentions it: κ undefined
    assert float(comention["asks-question"]["kappa"]) == 1.0
    verdicts = {(r["judges"], r["theme"]): r for r in _rows(files["rationale-verdicts.csv"])}
    generic = verdicts["llm", "generic-scripted"]
    assert (generic["judgments"], generic["its_reply_won"], generic["odds"]) == ("1", "0", "")
    codes = _rows(files["rationale-codes.csv"])
    assert len(codes) == 15  # every code of the crafted study, one row each
    j2 = next(r for r in codes if r["judgment"] == "jd-0-j2-ba")
    assert (j2["theme"], j2["side"], j2["evidence"], j2["cue"]) == (
        "generic-scripted", "b", "generic", "A"
    )  # fmt: skip
    assert "rationale-coders.csv" not in files  # no LLM coder


def test_without_human_rationales_the_llm_themes_still_show(store: Store, tmp_path: Path) -> None:
    for pair in range(2):
        add_pair(store, pair)
    for said in CRAFTED:
        if said.judge.startswith("j") and said.pair < 2:
            add_said(store, said)
    section = _section(render_markdown(_facts(store, tmp_path)))
    assert "4 of 4 rationales of LLM judges." in section
    assert "No human rationales are coded: the co-mention of themes" in section
    assert "| LLM judges | phrases found most |" in section
    assert "### Humans and LLM judges on agreed pairs" not in section


def test_a_study_with_nothing_coded_says_how_to_code(store: Store, tmp_path: Path) -> None:
    add_pair(store, 0)
    add_said(store, Said(0, "j1", "a", ""))
    section = _section(render_markdown(gather_facts(Study(tmp_path, parse_study(STUDY), store))))
    assert "No rationale is coded yet: run `heart rationales`" in section
    assert not [name for name in csv_files(_facts(store, tmp_path)) if "rationale" in name]


def test_a_large_studys_figures_computed_in_another_process_are_the_same(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crafted_study(store)
    here = _facts(store, tmp_path)
    started: list[object] = []
    monkeypatch.setattr(_aside, "ASIDE_VERDICTS", 1)  # every study is large
    monkeypatch.setattr(_aside, "usable_cores", lambda: 2)
    monkeypatch.setattr(_facts_module, "ReportAside", _watched(started))
    aside = _facts(store, tmp_path)
    assert len(started) == 1
    assert _section(render_markdown(aside)) == _section(render_markdown(here))
    assert {name: text for name, text in csv_files(aside).items() if "rationale" in name} == {
        name: text for name, text in csv_files(here).items() if "rationale" in name
    }
    assert here.rationales is not None and here.rationales.codes is not None
    assert len(here.rationales.codes) > 0 and here.rationale_files is None
    assert aside.rationales is not None and aside.rationales.codes is not None
    assert list(aside.rationales.codes) == list(here.rationales.codes)  # every code, as here
    made = {name: text for name, text in csv_files(here).items() if "rationale" in name}
    assert aside.rationale_files == made and "rationale-codes.csv" in made


def _watched(started: list[object]) -> type[_aside.ReportAside]:
    class Watched(_aside.ReportAside):
        def __init__(self) -> None:
            super().__init__()
            started.append(self)

    return Watched
