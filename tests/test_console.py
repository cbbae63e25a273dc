"""What people wrote reaches the terminal as written: judge names, corpus text, a study's name,
file paths and values quoted in errors are never read as console markup or emoji codes, through
every command that prints them, and no control character reaches the terminal."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from rich.table import Table

from heart import open_study, pipeline
from heart.cli import main
from heart.console import TextConsole, as_text, say, visible
from heart.items import stored_items
from heart.study import create_study

from .helpers import heart, rewrite_study

MARKUP = ["[/red]", "[bold]x[/bold]", "[/x]", "[red", ":smile:"]
"""Markup-like text: a closing tag with no opening one (rich raises on it), a tag pair (rich
would drop it), a dangling bracket, an emoji code (rich would print a face)."""
LINK = "[link=http://x]y[/link]"
BIASED, CAREFUL, CAUTIOUS, FIRST = "[/red]", "[bold]x[/bold]", LINK, "[red"
"""The judges: a person and an LLM who always pick the reply shown first (both flagged), an LLM
judge who picks the original, a person who calls every pair a tie."""
ITEMS = 10


def _study(root: Path) -> list[str]:
    """The demo study with markup-like text at the start of every turn and situation and in its
    name; its items and fixed replies stored, and verdicts imported from judges with markup-like
    names and rationales. Returns the item ids."""
    create_study(root, demo=True)
    corpus = root / "esconv_demo.jsonl"
    rows = [json.loads(text) for text in corpus.read_text(encoding="utf-8").splitlines()]
    marks = " ".join(MARKUP)
    for row in rows:
        row["situation"] = f"{marks} {row['situation']}"
        for turn in row["dialog"]:
            turn["text"] = f"{marks} {turn['text']}"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    study_file = root / "study.yaml"
    text = study_file.read_text(encoding="utf-8")
    study_file.write_text(text.replace("name: heart-demo", "name: '[/red] study'"), "utf-8")
    rewrite_study(
        root,
        [
            "{name: original, kind: dataset, family: dataset}",
            "{name: warm, kind: control, family: control, reply: 'That sounds so hard.'}",
        ],
        items=ITEMS,
    )
    with open_study(root) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        ids = [item.id for item in stored_items(study.store)]
    assert len(ids) == ITEMS
    rows = []
    for n, item in enumerate(ids):
        first, second = ("original", "warm") if n % 2 else ("warm", "original")
        careful = "a" if first == "original" else "b"
        why = f"the first reply {' '.join(MARKUP)} {LINK}"
        rows += [
            f"{item},{BIASED},{first},{second},a,2,{why},human",
            f"{item},{CAREFUL},{first},{second},{careful},3,{why},llm",
            f"{item},{CAUTIOUS},{first},{second},tie,1,{why},human",
            f"{item},{FIRST},{first},{second},a,2,{why},llm",
        ]
    judgments = root / "judgments.csv"
    header = "item_id,judge,a_system,b_system,winner,strength,rationale,source\n"
    judgments.write_text(header + "".join(f"{row}\n" for row in rows), encoding="utf-8")
    pipeline.import_into(root, judgments, "judgments")
    return ids


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("markup") / "study"
    return root, _study(root)


def _clean(result: subprocess.CompletedProcess[str], *, code: int) -> str:
    """The command's output, after checking its exit status and that nothing crashed."""
    out, err = result.stdout, result.stderr
    assert result.returncode == code, f"exit {result.returncode}\n{out}\n{err}"
    assert "Traceback" not in out + err and "MarkupError" not in out + err, out + err
    return out


def test_items_show_and_list_print_corpus_text_as_written(
    study: tuple[Path, list[str]],
) -> None:
    root, ids = study
    shown = _clean(heart("items", "show", ids[0], "--study", root, check=False), code=0)
    marks = " ".join(MARKUP)
    assert f"situation: {marks} " in shown
    assert f"Seeker: {marks} " in shown and f"Supporter: {marks} " in shown
    assert f"original reply: {marks} " in shown
    listed = _clean(heart("items", "list", "--study", root, check=False), code=0)
    assert sum(marks in row for row in listed.splitlines()) == ITEMS


def test_the_audit_names_judges_as_written_and_flags_them(study: tuple[Path, list[str]]) -> None:
    root, _ = study
    out = _clean(heart("judges", "audit", "--study", root, check=False), code=1)
    for judge in (BIASED, CAREFUL, CAUTIOUS, FIRST):
        assert judge in out
    assert f"Unreliable: {FIRST}. Their verdicts" in out
    assert f"Unreliable human raters: {BIASED}. Their verdicts" in out


def test_the_leaderboard_report_and_run_print_names_as_written(
    study: tuple[Path, list[str]],
) -> None:
    root, _ = study
    board = _clean(heart("leaderboard", "--judges", "all", "--study", root, check=False), code=0)
    assert "HEART leaderboard: [/red] study (combined, all items)" in board
    assert (
        f"The judge audit flags {BIASED}, {FIRST} as unreliable; passed the judge audit: "
        f"{CAREFUL}, {CAUTIOUS}." in board
    )
    for command in (("report",), ("run",)):
        out = _clean(heart(*command, "--study", root, check=False), code=0)
        assert "HEART leaderboard: [/red] study" in out
        assert f"Warning: the judge audit flags {FIRST}, {BIASED} as unreliable." in out
        assert CAUTIOUS in out and CAREFUL in out  # the audit under the board
        assert f"Report: {root / 'report' / 'index.html'}" in out


def _main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: object
) -> str:
    """`heart ARGS` in this process (its entry point, as the installed command calls it): the
    exit status and the output, after checking that nothing crashed."""
    monkeypatch.setattr(sys, "argv", ["heart", *map(str, args)])
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return f"{exited.value.code}: {out}"


def test_errors_quote_values_and_paths_as_written(
    study: tuple[Path, list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, ids = study
    bad = tmp_path / "bad.csv"
    bad.write_text(f"item_id,judge,a_system,b_system,winner\n{ids[0]},j,original,warm,[/red]\n")
    out = _main(monkeypatch, capsys, "import", bad, "--table", "judgments", "--study", root)
    assert out == f"2: error: {bad} line 2: 'winner' must be a, b or tie, got '[/red]'\n"
    missing = tmp_path / "[bold]x[/bold].csv"
    out = _main(monkeypatch, capsys, "import", missing, "--table", "labels", "--study", root)
    assert out.startswith(f"2: error: {missing}")
    out = _main(monkeypatch, capsys, "leaderboard", "--judges", LINK, "--study", root)
    assert out.startswith("2: error: --judges must be") and f"--judges {LINK} --subset all" in out
    out = _main(monkeypatch, capsys, "items", "show", "[red", "--study", root)
    assert out == "2: error: no item '[red' in this study; list them with `heart items list`\n"
    made = tmp_path / "[bold]x[/bold] :smile:"
    out = _main(monkeypatch, capsys, "init", made)
    assert out == (
        f"0: Created {made / 'study.yaml'}: set items.esconv and switch on your models and "
        f"judges (its comments say how), then `heart check --study {shlex.quote(str(made))}`\n"
    )


def _printed(*renderables: object) -> str:
    console = TextConsole(file=io.StringIO(), width=200, highlight=False)
    for renderable in renderables:
        console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_the_console_reads_no_markup_in_strings_lines_or_table_cells() -> None:
    table = Table(title="[/red] title")
    table.add_column("[bold]head[/bold]")
    table.add_row(":smile: [/x]")
    out = _printed("[/red] [bold]x[/bold]", as_text("[red", ("[/b]", "bold")), table)
    assert "[/red] [bold]x[/bold]\n[red[/b]\n" in out
    assert "[/red] title" in out and "[bold]head[/bold]" in out and ":smile: [/x]" in out


def test_control_characters_are_shown_not_sent_to_the_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert visible("a\x1b[2Jb\x07\x9bc\td\n") == "a\\x1b[2Jb\\x07\\x9bc\td\n"
    assert _printed("\x1b]0;title\x07") == "\\x1b]0;title\\x07\n"
    say("name: ", ("\x1b[31mred", "bold"))
    assert capsys.readouterr().out == "name: \\x1b[31mred\n"
