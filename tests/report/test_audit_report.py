"""Imported human raters in the judge audit, wherever it is shown: `heart judges audit`, the
report's table and judge_audit.csv."""

from __future__ import annotations

import csv
from pathlib import Path

from heart.store import open_store

from ..helpers import heart
from ..rows import seed_study

ITEMS = 10
ODD = "[bold]cy[/bold]"  # a name that rich would read as markup


def _study(root: Path) -> None:
    """A demo study (no verdicts of its own) with m1 and m2 replies to ten items, and imported
    verdicts: ann picks m1, bob the reply shown first, the odd name m1 or a tie."""
    heart("init", root, "--demo")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_study(store, ["m1", "m2"], items=ITEMS)
    store.close()
    completions = root / "c.csv"
    completions.write_text(
        "item_id,system,text\n" + "".join(f"i{i},m1,yes\ni{i},m2,no\n" for i in range(ITEMS))
    )
    heart("import", completions, "--table", "completions", "--study", root)
    rows = []
    for i in range(ITEMS):
        first, second = ("m1", "m2") if i % 2 else ("m2", "m1")
        rows.append(f"i{i},ann,{first},{second},{'a' if first == 'm1' else 'b'}")
        rows.append(f"i{i},bob,{first},{second},a")
        rows.append(f"i{i},{ODD},{first},{second},{'tie' if i < 4 else 'a' if i % 2 else 'b'}")
    judgments = root / "j.csv"
    judgments.write_text("item_id,judge,a_system,b_system,winner\n" + "\n".join(rows) + "\n")
    heart("import", judgments, "--table", "judgments", "--study", root)


def test_imported_raters_are_audited_in_the_terminal_the_report_and_the_csv(
    tmp_path: Path,
) -> None:
    root = tmp_path / "study"
    _study(root)
    audit = heart("judges", "audit", "--study", root, check=False)
    out = audit.stdout
    assert audit.returncode == 1, out
    assert "Judge audit (human raters)" in out and "Judge audit (LLM judges)" not in out
    bob = next(line for line in out.splitlines() if "│ bob" in line)
    assert "person, imported" in bob and "100% [72–100%] of 10" in bob
    assert bob.rstrip("│ ").endswith("unreliable")
    assert "bob: UNRELIABLE: the reply shown first won 100% [72–100%] of 10 verdicts." in out
    assert ODD in out  # shown as written
    odd = next(line for line in out.splitlines() if ODD in line)
    assert "10 (4 ties)" in odd and odd.rstrip("│ ").endswith("ok")
    assert f"{ODD}:" not in out  # a rater with nothing to say gets no line under the table
    assert "Unreliable human raters: bob." in out and "Unreliable:" not in out

    heart("report", "--study", root)
    with (root / "report" / "judge_audit.csv").open() as handle:
        rows = {r["judge"]: r for r in csv.DictReader(handle)}
    assert set(rows) == {"ann", "bob", ODD}
    assert [rows[ODD][c] for c in ("source", "imported", "verdicts", "ties", "both_orders")] == [
        "human",
        "10",
        "10",
        "4",
        "0",
    ]
    assert (rows[ODD]["first_position_hits"], rows[ODD]["first_position_n"]) == ("3", "6")
    assert rows["bob"]["flagged"] == "true" and rows["ann"]["flagged"] == "false"
    assert rows["bob"]["problems"] == "the reply shown first won 100% [72–100%] of 10 verdicts"
    markdown = (root / "report" / "report.md").read_text()
    assert (
        "## Judge audit" in markdown
        and "LLM judges and human raters, collected by heart or" in markdown
    )
    line = next(line for line in markdown.splitlines() if line.startswith("| bob |"))
    assert "| person, imported |" in line and "| UNRELIABLE: the reply shown first won" in line
