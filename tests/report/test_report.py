"""The report of a study with LLM and human verdicts: its files, its tables, and how it looks in
headless Chromium (screenshots go to test-output/)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from heart.report import (
    StudyFacts,
    gather_boards,
    gather_facts,
    render_markdown,
    terminal_conclusions,
    terminal_table,
)
from heart.store import open_store
from heart.study import open_study

from ..helpers import CHROMIUM, heart, require_chromium
from ..rows import Verdict, seed_verdicts

OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
SYSTEMS = ["m1", "m2", "m3", "warm"]
AXES = list("HEART")


def _verdicts() -> list[Verdict]:
    """Ten items; judges g1, g2 (LLM) and raters r1-r3 rate every pair of four systems plus one
    human reply; the rank is m1 > human > m2 > m3 > warm, with some noise."""
    rank = ["m1", "human/x", "m2", "m3", "warm"]
    out = []
    for i in range(10):
        for x in range(5):
            for y in range(x + 1, 5):
                for n, judge in enumerate(["g1", "g2", "r1", "r2", "r3"]):
                    upset = (i + x + y + n) % 5 == 0
                    winner, strength = "b" if upset else "a", 1 + n % 3
                    # LLM judges also judge the five axes; people give only the preference
                    axes = {a: {"winner": winner, "strength": strength} for a in AXES}
                    out.append(
                        Verdict(i, rank[x], rank[y], judge, winner, strength,
                                axes=axes if judge.startswith("g") else {})
                    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("study")
    heart("init", root, "--demo")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    seed_verdicts(
        store,
        _verdicts(),
        kinds={"human": "human", "warm": "control"},
        sources={r: "human" for r in ("r1", "r2", "r3")},
    )
    store.close()
    heart("report", "--study", root)
    return root


def test_report_writes_markdown_and_csv_tables(study: Path) -> None:
    report = study / "report"
    names = {p.name for p in report.iterdir()}
    assert {"index.html", "report.md", "leaderboard.csv", "differences.csv",
            "judge_audit.csv", "agreement-humans.csv", "reliability.csv"} <= names  # fmt: skip
    with (report / "leaderboard.csv").open() as f:
        rows = list(csv.DictReader(f))
    boards = {r["board"] for r in rows}
    assert boards == {"llm-all", "human-all", "all-all"}
    llm = [r for r in rows if r["board"] == "llm-all"]
    assert [r["system"] for r in llm] == ["m1", "human", "m2", "m3", "warm", "Best human"]
    # Arena's rule: 1 + the systems whose interval lies wholly above; m1 and human overlap
    assert [r["rank"] for r in llm] == ["1", "1", "2", "3", "4", "†"]
    for r in llm[:5]:
        above = sum(float(o["low"]) > float(r["high"]) for o in llm[:5])
        assert int(r["rank"]) == 1 + above
        assert (r["conversations"], r["opponents"], r["judges"]) == ("10", "4", "2")
        # every verdict shows a first and the first mostly wins: the audit flags both judges
        assert (r["preliminary"], r["audit"], r["flagged_judges"]) == ("false", "flagged", "g1;g2")
    assert abs(sum(float(r["elo"]) for r in llm[:5]) / 5 - 1500) < 1e-5
    md = (report / "report.md").read_text()
    headings = ["## LLM judges, all items", "## human raters, all items", "## Agreement"]
    headings += ["### Reliability of the preference", "## Judge audit", "### Prompts"]
    assert all(h in md for h in headings)
    # the board's detail, closed in the HTML, is in place in report.md: nothing left out
    for title in ("LLM judges, all items", "human raters, all items", "combined, all items"):
        board = md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        parts = ["| # | system |", "How the leaderboard is computed.", "### Elo per axis: ",
                 "### Head to head: ", "### Differences between systems: ",
                 "### Ablations: "]  # fmt: skip
        at = [board.index(part) for part in parts]
        assert at == sorted(at), title


def test_leaderboard_command_prints_each_board(study: Path) -> None:
    out = heart("leaderboard", "--study", study, "--judges", "human").stdout
    assert "human raters, all items" in out and "Best human" in out
    main = heart("leaderboard", "--study", study)  # exit 0, and the warnings under the board
    said = " ".join(main.stdout.split())
    assert main.returncode == 0
    assert "LLM judges, all items: 200 verdicts over 10 conversations from 2 judges." in said
    assert (
        "The judge audit flags every judge on this board (g1, g2) as unreliable: read it as a "
        "test of the pipeline, not as a ranking." in said
    )
    assert "Cannot be told apart (a shared rank): rank 1: m1, human." in said
    bad = heart("leaderboard", "--study", study, "--subset", "adversarial", check=False)
    assert bad.returncode == 2 and "has no board" in bad.stdout


def test_a_pair_of_one_system_is_noted_and_crashes_no_board(tmp_path: Path) -> None:
    root = tmp_path / "study"
    heart("init", root, "--demo")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    verdicts = [Verdict(i, "m1", "m2", "g1", "a", 2) for i in range(3)]
    verdicts += [Verdict(0, "m1", "m1", "g1", "b", 4)]  # as an earlier release could import
    seed_verdicts(store, verdicts)
    store.close()
    board = heart("leaderboard", "--study", root).stdout
    assert "m1" in board and "m2" in board
    heart("report", "--study", root)
    md = (root / "report" / "report.md").read_text()
    assert "3 comparisons over 3 conversations" in md
    assert "- judgments left out of the analyses: 1 on a pair of two replies of one system" in md


def test_html_report_renders_in_headless_chromium(study: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto((study / "report" / "index.html").as_uri())
        page.screenshot(path=str(OUTPUT / "report.png"), full_page=True)
        board = page.locator("#board-llm-all tbody tr")
        assert board.count() == 6  # five ranked systems and the best human
        assert board.first.locator("td").nth(1).inner_text() == "m1"
        assert page.locator("#board-human-all tbody tr").count() == 6
        widths = page.eval_on_selector_all("figure img", "els => els.map(e => e.naturalWidth)")
        ids = page.eval_on_selector_all("figure", "els => els.map(e => e.id)")
        assert "heatmap-llm-all" in ids and "forest-llm-all" in ids
        # the main board's five-axis profile drawn as small multiples (the others: tables)
        assert [i for i in ids if i.startswith("profile-")] == ["profile-llm-all"]
        assert len(widths) == 1 + 3 + 1 and all(w > 300 for w in widths)
        h2h = page.locator("#h2h-llm-all tbody tr")
        m1_vs_human = [v for v in _verdicts() if v.judge in ("g1", "g2") and v.b == "human/x"]
        m1_vs_human = [v for v in m1_vs_human if v.a == "m1"]
        won = sum(v.winner == "a" for v in m1_vs_human) / len(m1_vs_human)
        assert h2h.count() == 5
        # in the board's closed detail: in the page, shown once opened
        assert h2h.first.locator("td").nth(2).text_content() == f"{100 * won:.0f}%"
        assert page.locator("#reliability tbody tr").count() == 2
        assert page.locator("#judge-audit tbody tr").count() == 2 + 3  # judges, then raters
        study_list = page.locator("h2#study + ul li")  # a list, names as code: no raw Markdown
        assert study_list.first.inner_text().startswith("items: ")
        assert "`" not in page.locator("h2#study + ul").inner_text()
        # every system of the study file is listed, those without replies as none yet
        names = {*SYSTEMS, "human", "smollm2-135m", "esconv-original", "generic-warmth"}
        assert study_list.locator("code").first.inner_text() in names
        browser.close()
    # self-contained: nothing but the file itself and its inline images was fetched
    assert all(u.startswith(("file://", "data:")) for u in requests)


def test_the_leaderboard_reads_the_boards_and_audit_the_report_shows(study: Path) -> None:
    """`heart leaderboard` fits only what it prints: the same boards and audit as the report."""
    with open_study(study) as s:
        facts, boards = gather_facts(s), gather_boards(s)

    def shown(of: StudyFacts) -> list[str]:
        console = Console(record=True, width=200)
        for board in of.boards:
            console.print(terminal_table(of, board))
            console.print("\n".join(terminal_conclusions(of, board)))
        return [console.export_text(), *(repr(judge) for judge in of.audit)]

    assert [b.key for b in boards.boards] == [b.key for b in facts.boards] != []
    assert shown(boards) == shown(facts)
    assert boards.agreement is None and boards.rationales is None


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_csv_files_hold_numbers_at_full_precision(study: Path) -> None:
    with open_study(study) as s:
        facts = gather_facts(s)
    report = study / "report"
    agreement = facts.agreement
    assert agreement is not None and agreement.human_llm is not None
    humans = {r["what"]: r for r in _csv_rows(report / "agreement-humans.csv")}
    row = humans["human majority vs LLM-ensemble majority"]
    share = agreement.human_llm
    assert (int(row["hits"]), int(row["n"])) == (share.hits, share.n)
    assert (float(row["estimate"]), float(row["low"]), float(row["high"])) == (
        share.value,
        share.low,
        share.high,
    )
    audit = {r["judge"]: r for r in _csv_rows(report / "judge_audit.csv")}
    for judge in facts.audit:
        first = judge.first_position
        assert first is not None
        cells = audit[judge.judge]
        assert int(cells["first_position_n"]) == first.n == judge.verdicts
        assert float(cells["first_position_estimate"]) == first.value
        assert cells["flagged"] == ("true" if judge.flagged else "false")
    (llm_board,) = [b for b in facts.boards if b.key == "llm-all"]
    board = {
        r["system"]: r for r in _csv_rows(report / "leaderboard.csv") if r["board"] == "llm-all"
    }
    for standing in llm_board.leaderboard.standings:
        assert float(board[standing.system]["elo"]) == standing.elo
        assert float(board[standing.system]["low"]) == standing.low
    for name in ("reliability.csv", "stability.csv", "differences.csv"):
        for r in _csv_rows(report / name):
            for column, value in r.items():
                assert "%" not in value and "[" not in value, (name, column, value)


def test_axis_columns_say_no_data_where_no_verdict_judged_the_axes(study: Path) -> None:
    rows = _csv_rows(study / "report" / "leaderboard.csv")
    axis_columns = [f"{kind}_{a}" for kind in ("win_rate", "elo") for a in AXES]
    for r in rows:
        if r["board"] == "human-all":  # people judged only the overall preference
            assert all(r[c] == "" for c in axis_columns) and r["win_rate"] != ""
        elif r["board"] == "llm-all" and r["rank"] != "†":
            assert all(r[c] != "" for c in axis_columns)
    md = (study / "report" / "report.md").read_text()
    human_board = md.split("## human raters, all items", 1)[1].split("## combined", 1)[0]
    m1 = next(line for line in human_board.splitlines() if line.startswith("| 1 |"))
    assert m1.count("no data") == len(AXES)
    elo_per_axis = human_board.split("### Elo per axis", 1)[1]
    assert "| m1 | no data | no data | no data | no data | no data |" in elo_per_axis
    # the combined board takes the axes from the LLM judges' verdicts alone
    combined = {r["system"]: r for r in rows if r["board"] == "all-all"}
    llm = {r["system"]: r for r in rows if r["board"] == "llm-all"}
    assert combined["m1"]["win_rate_H"] == llm["m1"]["win_rate_H"]


def test_the_study_section_says_how_many_judgments_were_left_out_and_why(tmp_path: Path) -> None:
    root = tmp_path / "study"
    root.mkdir()
    url = f"sqlite:///{root / 'heart.db'}"
    store = open_store(url)
    seed_verdicts(
        store,
        [Verdict(0, "m1", "human/r1", "r1", "b"), Verdict(0, "m1", "human/r1", "r2", "a"),
         Verdict(0, "m1", "m2", "r1", "a"), Verdict(1, "m1", "human/r1", "r1", "tie")],
        kinds={"human": "human"},
        sources={"r1": "human", "r2": "human"},
    )  # fmt: skip
    store.close()
    config = {"name": "left-out", "seed": 0, "store": url,
              "systems": [{"name": "human", "kind": "human", "family": "human"}]}  # fmt: skip
    (root / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with open_study(root) as s:
        facts = gather_facts(s)
    assert facts.left_out == {"by a rater on a pair holding their own reply": 2}
    line = "- judgments left out of the analyses: 2 by a rater on a pair holding their own reply"
    assert line in render_markdown(facts).splitlines()


SCREENS = {"desktop": (1280, 900), "phone": (390, 844)}


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_the_report_reads_top_down_on_a_desktop_and_a_phone(study: Path, screen: str) -> None:
    """First screen: what the study is, what can be concluded and the main board; then the
    contents, the boards (each a full leaderboard, the rest of the board closed until opened),
    the judge audit right under them, and empty sections as one line. Nothing makes the page
    scroll sideways, the boards opened: wide tables scroll inside their own box."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    width, height = SCREENS[screen]
    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto((study / "report" / "index.html").as_uri())
        page.screenshot(path=str(OUTPUT / f"report-first-screen-{width}.png"))
        page.screenshot(path=str(OUTPUT / f"report-{width}.png"), full_page=True)

        def box(selector: str) -> dict[str, float]:
            found = page.locator(selector).first.bounding_box()
            assert found is not None, selector
            return dict(found)

        # the first screen
        for selector in ("h1", "#about", "#warning", "#conclusions", "#main-board"):
            assert box(selector)["y"] < height, (screen, selector)
        first_row = box("#main-board tbody tr")
        assert first_row["y"] + first_row["height"] <= height, screen
        assert page.locator("#main-board tbody tr").first.locator("td").nth(1).inner_text() == "m1"
        # then the contents, listing every section in the order they come
        sections = page.eval_on_selector_all("section h2[id]", "els => els.map(e => e.id)")
        assert sections[0] == "conclusions"
        links = page.eval_on_selector_all("#contents a", "els => els.map(e => e.hash.slice(1))")
        assert links == sections[1:]
        assert box("#contents")["y"] > box("#main-board")["y"]
        # the boards, and the judge audit directly under them
        assert sections[1:5] == ["llm-all", "human-all", "all-all", "audit"]
        # each board's leaderboard is open, the rest of the board closed under a line saying
        # what it holds, so the audit starts within four screens: the first screen, then the
        # contents and three leaderboards (with every board open it started 9.7 screens down at
        # 1280 px and 11.5 at 390 px)
        audit_top = box("#audit")["y"]  # the page is not scrolled: its position on the page
        assert audit_top < 4 * height, (screen, audit_top)
        boards = ["llm-all", "human-all", "all-all"]
        for board in boards:
            assert page.locator(f"#board-{board}").is_visible()
            detail = page.locator(f"details#more-{board}")
            summary = detail.locator("summary").inner_text()
            assert summary.startswith("More on this board: how it is computed, ") and (
                "forest plot, Elo per axis, head to head, differences (" in summary
            )
            assert detail.get_attribute("open") is None
            inside = [f"#forest-{board}", f"#axes-{board}", f"#h2h-{board}",
                      f"#differences-{board}", f"#ablations-{board}"]  # fmt: skip
            inside += ["#heatmap-llm-all"] if board == "llm-all" else []
            inside += ["#profile-llm-all"] if board == "llm-all" else []
            assert all(not page.locator(key).is_visible() for key in inside)
            detail.locator("summary").click()  # opening it shows all it holds
            assert detail.get_attribute("open") is not None
            assert all(page.locator(key).is_visible() for key in inside), board
            assert detail.locator("p").first.inner_text().startswith("How the leaderboard is")
        page.screenshot(path=str(OUTPUT / f"report-{width}-opened.png"), full_page=True)
        # a section without data is one line saying what would fill it
        empty = page.locator("section.empty")
        assert empty.count() >= 2
        for n in range(empty.count()):
            text = empty.nth(n).inner_text()
            assert "\n" not in text.strip() and ("run" in text or "set" in text), text
            if screen == "desktop":
                assert empty.nth(n).bounding_box()["height"] < 40, text  # type: ignore[index]
        strategies = page.locator("section.empty:has(h2#strategies)").inner_text()
        assert strategies.startswith("Strategies No strategy classifications yet")
        # nothing scrolls the page sideways; wide tables scroll inside their own box
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        boxes = page.eval_on_selector_all(
            "table",
            "els => els.map(t => { const b = t.parentElement; return [b.className, "
            "b.getBoundingClientRect().right, b.scrollWidth > b.clientWidth, "
            "getComputedStyle(b).overflowX]; })",
        )
        assert boxes and all(
            kind == "scroll" and overflow == "auto" for kind, _, _, overflow in boxes
        )
        assert all(right <= width for _, right, _, _ in boxes)
        scrolling = sum(wide for _, _, wide, _ in boxes)
        assert scrolling > 0 if screen == "phone" else scrolling < len(boxes)
        rights = page.eval_on_selector_all(
            "figure img, pre, p, ul", "els => els.map(e => e.getBoundingClientRect().right)"
        )
        assert max(rights) <= width
        browser.close()


def test_the_axis_profile_csv_and_table_hold_each_axis_with_its_evidence(study: Path) -> None:
    with open_study(study) as s:
        facts = gather_facts(s)
    (llm,) = [b for b in facts.boards if b.key == "llm-all"]
    rows = _csv_rows(study / "report" / "axis_profile.csv")
    assert rows[0].keys() == {
        "board", "system", "axis", "elo", "low", "high", "verdicts", "conversations",
        "win_rate", "preliminary", "preliminary_reasons", "flagged_judges", "weight",
    }  # fmt: skip
    profile = {(r["board"], r["system"], r["axis"]): r for r in rows}
    # the LLM boards: every ranked system on every axis, in board order; no Best human
    assert [r["system"] for r in rows if r["board"] == "llm-all"][::5] == [
        "m1", "human", "m2", "m3", "warm",
    ]  # fmt: skip
    for s in llm.leaderboard.standings:
        for a in AXES:
            r = profile[("llm-all", s.system, a)]
            assert (float(r["elo"]), float(r["low"]), float(r["high"])) == (
                s.axis_elo[a], s.axis_low[a], s.axis_high[a],
            )  # fmt: skip
            # g1 and g2 judge every pair in ten conversations; the audit flags both
            assert (r["verdicts"], r["conversations"]) == ("80", "10")
            assert (r["preliminary"], r["flagged_judges"], r["weight"]) == ("false", "g1;g2", "")
            assert s.axis_low[a] < s.axis_elo[a] < s.axis_high[a]
    # people judge only the overall preference: their board's profile says so, no number
    human = profile[("human-all", "m1", "H")]
    assert (human["elo"], human["low"], human["verdicts"], human["preliminary"]) == (
        "", "", "0", "true",
    )  # fmt: skip
    assert human["preliminary_reasons"] == "no verdict judged it"
    md = (study / "report" / "report.md").read_text()
    table = md.split("### Elo per axis: LLM judges, all items", 1)[1]
    m1 = llm.leaderboard.standings[0]
    cell = f"{m1.axis_elo['H']:.0f} [{m1.axis_low['H']:.0f}–{m1.axis_high['H']:.0f}] · 80 v, 10 c !"
    assert f"| m1 | {cell} |" in table
    assert "!: judged by g1, g2, flagged unreliable by the judge audit" in table


def test_leaderboard_axes_prints_the_profile_in_the_boards_order(study: Path) -> None:
    plain = heart("leaderboard", "--study", study).stdout
    assert "Five-axis profile" not in plain
    out = heart("leaderboard", "--study", study, "--axes").stdout
    board, profile = out.split("Five-axis profile: heart-demo (LLM judges, all items)", 1)
    assert "HEART leaderboard" in board
    names = [line.split("│")[2].strip() for line in profile.splitlines() if line.startswith("│ ")]
    assert [n for n in names if n] == ["m1", "human", "m2", "m3", "warm"]
    assert "80v 10c" in profile and "! judged by g1, g2, flagged unreliable" in profile
    helped = " ".join(heart("leaderboard", "--help").stdout.split())
    assert "--axes" in helped and "five-axis profile" in helped
