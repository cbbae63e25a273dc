"""The report's structure, the same in every format: the first screen (what the study is, the
warning, what can be concluded and the main board), then the boards, the judge audit directly
under them, and the other sections in reading order; its figures; and every CSV file, section by
section."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from heart.report._adversarial import adversarial_files, adversarial_section
from heart.report._agreement import agreement_files, agreement_section
from heart.report._audit import audit_files, audit_section
from heart.report._boards import board_files, board_sections
from heart.report._factors import factor_files, factor_section
from heart.report._facts import StudyFacts
from heart.report._judges_people import judges_people_files, judges_people_section
from heart.report._latency import latency_files, latency_section
from heart.report._overview import about, board_warning, first_screen
from heart.report._rationales import rationale_files, rationale_section
from heart.report._section import Figure, Section, every_block
from heart.report._strategies import strategy_files, strategy_section
from heart.report._study import study_section

SECTIONS: list[Callable[[StudyFacts], Section]] = [
    audit_section,
    agreement_section,
    judges_people_section,
    adversarial_section,
    rationale_section,
    strategy_section,
    factor_section,
    latency_section,
    study_section,
]
"""The sections after the boards, in reading order."""

FILES: list[Callable[[StudyFacts], dict[str, str]]] = [
    board_files,
    audit_files,
    agreement_files,
    judges_people_files,
    factor_files,
    adversarial_files,
    strategy_files,
    rationale_files,
    latency_files,
]


@dataclass
class Document:
    """The report before it is rendered."""

    title: str
    about: str
    warning: str | None
    first: Section
    sections: list[Section]


def document(facts: StudyFacts) -> Document:
    return Document(
        title=f"HEART report: {facts.name}",
        about=about(facts),
        warning=board_warning(facts),
        first=first_screen(facts),
        sections=[*board_sections(facts), *(make(facts) for make in SECTIONS)],
    )


def figure_draws(doc: Document) -> dict[str, Callable[[], bytes]]:
    """How each figure of ``doc`` is drawn, by its key, in reading order."""
    draws: dict[str, Callable[[], bytes]] = {}
    for section in (doc.first, *doc.sections):
        for block in every_block(section.blocks):
            if isinstance(block, Figure):
                if block.key in draws:
                    raise ValueError(f"two figures of the report have the key {block.key!r}")
                draws[block.key] = block.draw
    return draws


def csv_files(facts: StudyFacts) -> dict[str, str]:
    """Every CSV file of the report, by name."""
    return {name: text for make in FILES for name, text in make(facts).items()}
