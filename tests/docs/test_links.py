"""Every relative link of README.md and docs/*.md leads somewhere: the file exists and, for a
Markdown page, so does the heading its anchor names; and every docs page is linked from the
README."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from .markdown import ROOT, anchors, links, slug

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _broken(page: Path, root: Path = ROOT) -> list[str]:
    text = page.read_text(encoding="utf-8")
    problems = []
    for line, target in links(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / unquote(path)).resolve() if path else page
        name = f"{page.relative_to(root)} line {line}: {target}"
        if not where.exists():
            problems.append(f"{name}: no file {where.relative_to(root)}")
        elif (
            anchor
            and where.suffix == ".md"
            and anchor not in anchors(where.read_text(encoding="utf-8"))
        ):
            problems.append(f"{name}: no heading with the anchor #{anchor}")
    return problems


def test_every_relative_link_resolves() -> None:
    problems = [problem for page in PAGES for problem in _broken(page)]
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {(ROOT / target.partition("#")[0]).resolve() for _, target in links(readme)}
    assert [p.name for p in PAGES[1:] if p.resolve() not in linked] == []


def test_anchors_follow_github() -> None:
    assert slug("People in the loop (web app)") == "people-in-the-loop-web-app"
    assert slug("Ratings, agreement and the report") == "ratings-agreement-and-the-report"
    assert slug("`heart run --dry-run`: the cost") == "heart-run---dry-run-the-cost"
    assert anchors("# A\n```\n# not a heading\n```\n## A\n") == {"a", "a-1"}


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n## Here\n", encoding="utf-8")
    page.write_text(
        "# Page\nSee [here](other.md#here), [gone](other.md#gone), [none](none.md) "
        "and `[not](a-link.md)`.\n```\n[in code](code.md)\n```\n",
        encoding="utf-8",
    )
    assert [p.split(": ", 1)[1] for p in _broken(page, tmp_path)] == [
        "other.md#gone: no heading with the anchor #gone",
        "none.md: no file none.md",
    ]
