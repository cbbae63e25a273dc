"""The report package imports in one direction: from its sections down to a small core, never
round in a circle (an import inside a function counts too: it only hides the circle)."""

from __future__ import annotations

import ast
from pathlib import Path

import heart.report

PACKAGE = "heart.report"
FOLDER = Path(heart.report.__file__).parent


def _module(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def _imports(path: Path) -> set[str]:
    """The modules of the package that ``path`` imports, wherever in the file it does."""
    found: set[str] = set()
    modules = {_module(p) for p in FOLDER.glob("*.py")}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.ImportFrom) and node.level:  # relative: from . import x
            base = PACKAGE if node.module is None else f"{PACKAGE}.{node.module}"
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        found |= {name for name in names if name in modules}
    found.discard(_module(path))
    return found


def import_graph() -> dict[str, set[str]]:
    return {_module(path): _imports(path) for path in sorted(FOLDER.glob("*.py"))}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of imports (its modules in order, the first repeated last), or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        path.append(start)
        on_path.add(start)
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
                continue
            nxt = todo.pop()
            if nxt in on_path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done:
                stack.append((nxt, sorted(graph.get(nxt, ()))))
                path.append(nxt)
                on_path.add(nxt)
    return None


def test_the_finder_sees_a_circle_and_a_line() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_report_package_has_no_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 5  # the package's modules were found
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_sections_sit_below_the_document_and_its_renderers() -> None:
    """No section or core module imports the document's structure or a renderer."""
    graph = import_graph()
    above = {f"{PACKAGE}.{name}" for name in ("_document", "_as_html", "_as_markdown", "_write")}
    for module, imports in graph.items():
        if module in {PACKAGE, *above}:
            continue
        assert not imports & above, (module, imports & above)
