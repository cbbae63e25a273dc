"""report.md shows what people wrote as text: a study's, a system's or a judge's name, a quoted
rationale and the study file render as those characters (checked with markdown-it, a CommonMark
renderer, with GitHub's tables and strikethrough), never as HTML, links or emphasis."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from heart.report import gather_facts, render_markdown
from heart.report._markdown import md_block, md_cell, md_fence, md_heading, md_inline
from heart.store import open_store
from heart.study import open_study

from ..rows import Verdict, seed_verdicts

MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
pieces = st.sampled_from(
    [*"ab1 _*~<>&[]()!#-+=.:|\\/\"'^é", "\n", "http://x", "&amp;", "&#60;", "<b>", "</p>",
     "<!--", "1.", "1)", "www.x.org", "a@b.c", "[^1]", "```", "    "]
)  # fmt: skip
texts = st.lists(pieces, max_size=20).map("".join)
"""Text made of what Markdown reads as syntax, in any order."""


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


@FUZZ
@given(texts.filter(lambda t: "`" not in t))
def test_text_renders_as_written_in_a_paragraph_a_cell_and_a_heading(text: str) -> None:
    line = _one_line(text)
    paragraph = MARKDOWN.render(md_block(text))
    assert paragraph == (f"<p>{escapeHtml(line.strip())}</p>\n" if line.strip() else "")
    table = MARKDOWN.render(f"| h |\n|---|\n| {md_cell(text)} |\n")
    assert f"<td>{escapeHtml(line.strip())}</td>" in table
    heading = MARKDOWN.render(md_heading(2, f"Board: {text}"))
    assert heading == f"<h2>{escapeHtml(f'Board: {line}'.strip())}</h2>\n"
    bold = MARKDOWN.render(f"**{md_inline(text.strip())}**")
    assert escapeHtml(_one_line(text.strip())) in bold and "<em>" not in bold


@FUZZ
@given(st.lists(st.sampled_from(["`", "``", " ", "a", "<b>", "*", "|", "\\"]), max_size=14))
def test_text_between_backticks_is_code_and_nothing_else_is_markup(pieces: list[str]) -> None:
    text = "".join(pieces)
    for html in (
        MARKDOWN.render(md_block(text)),
        MARKDOWN.render(f"| h |\n|---|\n| {md_cell(text)} |\n").split("<td>")[1].split("</td>")[0],
    ):
        assert set(re.findall(r"</?(\w+)", html)) <= {"p", "code"}, (text, html)
        shown = unescape(re.sub(r"<[^>]+>", "", html))
        assert re.sub(r"[\s`]", "", shown) == re.sub(r"[\s`]", "", text), (text, html)


def test_markdown_reads_well_as_plain_text() -> None:
    assert md_cell("0.86 [0.78–0.93]") == "0.86 [0.78–0.93]"
    assert md_block("p < 0.001 for mild_ending") == "p < 0.001 for mild_ending"
    assert md_block("run `heart rationales` first") == "run `heart rationales` first"
    assert md_cell("a|b") == "a\\|b"
    assert md_block("<script>x</script>") == "\\<script>x\\</script>"
    assert md_block("1. [y](http://x) *z* _w_") == "1\\. [y\\](http://x) \\*z\\* \\_w\\_"


def test_a_fence_outlasts_every_backtick_run_in_its_text() -> None:
    text = "a: 1\n```\n<script>alert(1)</script>\n````"
    block = md_fence(text, "yaml")
    assert block[0] == "`````yaml" and block[-1] == "`````"
    html = MARKDOWN.render("\n".join(block))
    assert html == f'<pre><code class="language-yaml">{escapeHtml(text)}\n</code></pre>\n'


SCRIPT = "<script>alert(1)</script>"
NAMES = {
    "study": f"{SCRIPT} study",
    "system": "<img src=x onerror=alert(1)>",
    "judge": "[click](javascript:alert(1))",
    "rater": "**<b>r</b>** _x_ ~~y~~",
}


def test_names_in_report_md_render_as_text(tmp_path: Path) -> None:
    root = tmp_path / "study"
    root.mkdir()
    url = f"sqlite:///{root / 'heart.db'}"
    store = open_store(url)
    system, judge, rater = NAMES["system"], NAMES["judge"], NAMES["rater"]
    seed_verdicts(
        store,
        [
            Verdict(i, a, b, who, "a" if (i + n) % 3 else "b")
            for i in range(6)
            for n, (a, b) in enumerate([("m1", system), (system, "m2"), ("m1", "m2")])
            for who in (judge, rater)
        ],
        sources={rater: "human"},
    )
    store.close()
    config = {"name": NAMES["study"], "seed": 0, "store": url,
              "systems": [{"name": "human", "kind": "human", "family": "human"}]}  # fmt: skip
    text = yaml.safe_dump(config) + f"# a comment that closes a fence:\n# ```\n# {SCRIPT}\n"
    (root / "study.yaml").write_text(text, encoding="utf-8")
    with open_study(root) as study:
        markdown = render_markdown(gather_facts(study))
    html = MARKDOWN.render(markdown)
    assert set(re.findall(r"<(\w+)", html)) <= {
        "h1", "h2", "h3", "h4", "p", "strong", "ul", "li", "code", "pre",
        "table", "thead", "tbody", "tr", "th", "td",
    }  # fmt: skip
    assert html.startswith(f"<h1>HEART report: {escapeHtml(NAMES['study'])}</h1>")
    for name in NAMES.values():
        assert escapeHtml(name) in html, name
    assert f"<td>{escapeHtml(system)}</td>" in html
    assert f"<code>{escapeHtml(judge)}</code>" in html  # the study section's counts
    assert escapeHtml(text.rstrip()) in html  # the study file, whole, in its code block
