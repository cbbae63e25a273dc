"""Every reader of outside data, through its real entry point: the hostile cases written by
hand, and a seeded handful of drawn ones per reader. Each run succeeds or ends in the project's
one-line error, and a refusal changes nothing (tests/fuzz_layer.py; bench/fuzz_readers.py runs
10,000 drawn cases of each reader)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .fuzz_cases import READERS, known
from .fuzz_layer import Template, build_template, run_case, workspace

CASES = {
    "study": 10,
    "bundle": 12,
    "completions": 10,
    "judgments": 10,
    "labels": 10,
    "index": 6,
    "web": 10,
}
"""Drawn cases per reader in the suite: together well under a minute on a busy machine."""

KNOWN = [
    "study-markup-in-a-refused-value",
    "study-an-alias-of-itself",
    "study-check-names-a-new-store",
    "study-check-paths-too-long",
    "study-store-path-with-a-nul",
    "bundle-store-url-elsewhere",
    "bundle-refused-into-a-new-folder",
    "bundle-markup-in-a-refused-value",
    "completions-markup-in-a-refused-value",
    "judgments-markup-in-a-refused-value",
    "labels-markup-in-a-refused-value",
    "index-markup-in-a-refused-value",
    "index-named-with-a-nul-by-the-study-file",
    "index-values-at-the-edge-of-floats",
    "web-control-characters-in-a-reason",
    "web-markup-in-a-prolific-id",
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return build_template(tmp_path_factory.mktemp("fuzz-template"))


def test_the_known_cases_are_all_listed(template: Template) -> None:
    assert sorted(known(template)) == sorted(KNOWN)


@pytest.mark.parametrize("name", KNOWN)
def test_a_known_hostile_case(name: str, template: Template, tmp_path: Path) -> None:
    with workspace(template, tmp_path) as work:
        run_case(known(template)[name], work)


@pytest.mark.parametrize("reader", list(READERS))
def test_drawn_cases_succeed_or_are_refused_in_one_line_changing_nothing(
    reader: str, template: Template, tmp_path: Path
) -> None:
    @settings(
        max_examples=CASES[reader],
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def case(data: st.DataObject) -> None:
        with workspace(template, tmp_path) as work:
            run_case(READERS[reader](data, template), work)

    case()
