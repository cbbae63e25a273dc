"""Report speed: `heart report` on a study of 22 systems x 300 items x all pairs (69,300 LLM
verdicts, one judge), against the 10 s budget, in one run.

The study is simulated from known strengths and written to a temporary SQLite store; then
`heart report` runs as a user would run it (a fresh process: start-up, imports, reading the
store, every board with its 1,000-round bootstrap, agreement, the audit, figures, files), and
the same steps are timed in-process to show where the time goes.

    .venv/bin/python bench/report_speed.py [--items 300] [--systems 22] [--judges 1]

Target: under 10 s. Prints the budget ratio (10 s / measured) last.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import expit
from sqlalchemy import insert

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from heart.store import (  # noqa: E402
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    SystemRow,
    open_store,
)

BUDGET_S = 10.0


def write_study(root: Path, n_items: int, n_systems: int, n_judges: int, seed: int = 0) -> int:
    """A study folder with its study.yaml and a store holding every pair of every item judged
    by each judge; returns the number of verdicts."""
    systems = [f"model-{i:02d}" for i in range(n_systems)]
    judges = [f"judge-{j}" for j in range(n_judges)]
    lines = ["name: report-speed", "systems:"]
    lines += [f"  - {{name: {s}, kind: dataset, family: {s}}}" for s in systems]
    lines += ["judges:"] + [f"  - {{name: {j}, family: other-{j}, model: {{}}}}" for j in judges]
    (root / "study.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.7, n_systems)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    rows: dict[type, list[dict[str, Any]]] = {
        t: [] for t in (ConversationRow, ItemRow, SystemRow, JudgeRow, CompletionRow, PairRow)
    }
    verdicts: list[dict[str, Any]] = []
    rows[SystemRow] = [{"name": s, "kind": "model", "family": s, "spec": {}} for s in systems]
    rows[JudgeRow] = [
        {"name": j, "source": "llm", "family": f"other-{j}", "spec": {}} for j in judges
    ]
    words = ["so", "sorry", "that", "sounds", "hard", "what", "helps", "you", "most", "now"]
    for i in range(n_items):
        rows[ConversationRow].append(
            {"id": f"c{i}", "problem_type": "p", "emotion_type": "e", "experience_type": "",
             "situation": "", "survey": {}, "turns": [], "origin": {}}
        )  # fmt: skip
        rows[ItemRow].append(
            {"id": f"i{i}", "content_hash": f"h{i}", "subset": "regular",
             "conversation_id": f"c{i}", "turn_index": 3, "context": [], "reference": "r",
             "problem_type": "p", "emotion_type": "e", "situation": "", "meta": {}}
        )  # fmt: skip
        for s in systems:
            text = " ".join(rng.choice(words, int(rng.integers(8, 40))))
            rows[CompletionRow].append(
                {"id": f"cp{i}-{s}", "item_id": f"i{i}", "system": s, "contributor": "",
                 "status": "ok", "text": text, "created_at": "x"}
            )  # fmt: skip
        for x, y in itertools.combinations(range(n_systems), 2):
            pid = f"p{i}-{x}-{y}"
            rows[PairRow].append(
                {"id": pid, "item_id": f"i{i}", "a_id": f"cp{i}-{systems[x]}",
                 "b_id": f"cp{i}-{systems[y]}", "design": "all"}
            )  # fmt: skip
            for j in judges:
                a_won = rng.random() < expit(theta[x] - theta[y])
                axes = {
                    a: {"winner": "a" if a_won else "b", "strength": int(rng.integers(1, 6))}
                    for a in "HEART"
                }
                verdicts.append(
                    {"id": f"{pid}-{j}", "pair_id": pid, "judge": j, "order": "ab",
                     "status": "ok", "winner": "a" if a_won else "b",
                     "strength": int(rng.integers(1, 6)), "axes": axes, "rationale": "",
                     "refused": [], "created_at": "x"}
                )  # fmt: skip
    with store.session() as session:
        for table, values in rows.items():
            session.execute(insert(table), values)
        session.execute(insert(JudgmentRow), verdicts)
    store.close()
    return len(verdicts)


def time_in_process(root: Path) -> dict[str, float]:
    """The report's steps, timed one by one in this process."""
    from heart.analyses import analyse_agreement, build_boards, load_comparisons
    from heart.report import gather_facts, write_report
    from heart.study import open_study

    study = open_study(root)
    out: dict[str, float] = {}
    start = time.perf_counter()
    comparisons = load_comparisons(study.store, source="all")
    out["read the verdicts"] = time.perf_counter() - start
    start = time.perf_counter()
    build_boards(comparisons)
    out["boards (fit, 1,000-round bootstrap, ablations)"] = time.perf_counter() - start
    start = time.perf_counter()
    analyse_agreement(comparisons)
    out["agreement"] = time.perf_counter() - start
    start = time.perf_counter()
    facts = gather_facts(study)
    write_report(facts, root / "report-in-process")
    out["whole report in-process (gather + write)"] = time.perf_counter() - start
    study.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--systems", type=int, default=22)
    parser.add_argument("--judges", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        start = time.perf_counter()
        n = write_study(root, args.items, args.systems, args.judges)
        print(f"study: {n:,} verdicts written in {time.perf_counter() - start:.1f} s")
        for step, seconds in time_in_process(root).items():
            print(f"  {step}: {seconds:.2f} s")
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "heart", "report", "--study", str(root)],
            check=True,
            capture_output=True,
        )
        elapsed = time.perf_counter() - start
    print(f"`heart report` (fresh process): {elapsed:.2f} s (budget {BUDGET_S:.0f} s)")
    print(f"ratio (budget / measured): {BUDGET_S / elapsed:.2f}")


if __name__ == "__main__":
    main()
