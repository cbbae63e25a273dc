"""Report speed: `heart report` on a study of 22 systems x 300 items x all pairs (69,300 LLM
verdicts, one judge), against the 10 s budget, in one run.

The study is simulated from known strengths and written to a temporary SQLite store. Every
verdict has a rationale, coded by the rule coder before the clock starts; human raters judge a
share of the pairs (three each); every system but two has times to first token; the study file
names a capability index. So each section of the report has work to do: boards, agreement,
rationales, the audit, factor structure, latency and capability. Then `heart report` runs as a
user would run it (a fresh process: start-up, imports, reading the store, every section, figures,
files), and the main steps are timed in-process to show where the time goes.

    .venv/bin/python bench/report_speed.py [--items 300] [--systems 22] [--judges 1]
        [--human-pairs 1000] [--keep DIR]

Target: under 10 s, the median of --rounds fresh-process runs (5; the machine's speed varies
from run to run). Prints the budget ratio (10 s / median) last.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
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
    RaterRow,
    SystemRow,
    open_store,
)

BUDGET_S = 10.0
RATERS_PER_PAIR = 3
UNTIMED = 2  # systems without times to first token
# Rationale sentences about the winner ({w}) and the loser ({l}); the rule coder finds themes in
# most of them, and leaves a few with none.
PRAISE = [
    "Reply {w} names the feeling and asks one concrete question.",
    "{w} sounds natural and warm; {l} reads like a script.",
    "{w} offers a small next step she can take today.",
    "Reply {w} reflects back what he said, while {l} brushes it off.",
    "{w} validates how hard this is and stays in role.",
    "{l} is too long and generic.",
    "Both are fine but {w} is more specific.",
    "{w} is better.",
]


def _verdict(rng: np.random.Generator, pid: str, judge: str, a_won: bool) -> dict[str, Any]:
    """One verdict on pair ``pid``, its axes agreeing with the overall winner, with a rationale
    that says why in the pair's terms."""
    axes = {
        a: {"winner": "a" if a_won else "b", "strength": int(rng.integers(1, 6))} for a in "HEART"
    }
    winner, loser = ("A", "B") if a_won else ("B", "A")
    why = PRAISE[int(rng.integers(len(PRAISE)))].format(w=winner, l=loser)
    return {"id": f"{pid}-{judge}", "pair_id": pid, "judge": judge, "order": "ab",
            "status": "ok", "winner": "a" if a_won else "b", "strength": int(rng.integers(1, 6)),
            "axes": axes, "rationale": why, "refused": [], "created_at": "x"}  # fmt: skip


def write_study(
    root: Path, n_items: int, n_systems: int, n_judges: int, human_pairs: int, seed: int = 0
) -> tuple[int, int]:
    """A study folder with its study.yaml, a capability index and a store holding every pair of
    every item judged by each judge, and ``human_pairs`` pairs (spread over the items) judged by
    three raters each; returns the numbers of LLM and human verdicts."""
    systems = [f"model-{i:02d}" for i in range(n_systems)]
    judges = [f"judge-{j}" for j in range(n_judges)]
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.7, n_systems)
    index = ["system,value"] + [
        f"{s},{50 + 10 * t + rng.normal(0, 4):.3f}" for s, t in zip(systems, theta, strict=True)
    ]
    (root / "index.csv").write_text("\n".join(index) + "\n", encoding="utf-8")
    lines = ["name: report-speed", "systems:"]
    lines += [
        f"  - {{name: {s}, kind: model, family: {s}, model: {{provider: openai, model: {s}}}}}"
        for s in systems
    ]
    lines += ["judges:"] + [f"  - {{name: {j}, family: other-{j}, model: {{}}}}" for j in judges]
    lines += ["ratings:", "  capability_index: index.csv"]
    (root / "study.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    n_pairs = n_items * n_systems * (n_systems - 1) // 2
    rated = set(rng.choice(n_pairs, size=min(human_pairs, n_pairs), replace=False).tolist())
    raters = [f"rater-{r:03d}" for r in range(60)]
    ttft_median = rng.lognormal(np.log(600), 0.8, n_systems)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    rows: dict[type, list[dict[str, Any]]] = {
        t: []
        for t in (ConversationRow, ItemRow, SystemRow, JudgeRow, RaterRow, CompletionRow, PairRow)
    }
    verdicts: list[dict[str, Any]] = []
    rows[SystemRow] = [{"name": s, "kind": "model", "family": s, "spec": {}} for s in systems]
    rows[JudgeRow] = [
        {"name": j, "source": "llm", "family": f"other-{j}", "spec": {}} for j in judges
    ] + [{"name": r, "source": "human", "family": "human", "spec": {}} for r in raters]
    rows[RaterRow] = [{"id": r, "meta": {}, "created_at": "x"} for r in raters]
    humans: list[dict[str, Any]] = []
    pair_number = 0
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
        for k, s in enumerate(systems):
            text = " ".join(rng.choice(words, int(rng.integers(8, 40))))
            ttft = None if k < UNTIMED else float(ttft_median[k] * rng.lognormal(0, 0.3))
            rows[CompletionRow].append(
                {"id": f"cp{i}-{s}", "item_id": f"i{i}", "system": s, "contributor": "",
                 "status": "ok", "text": text, "created_at": "x", "ttft_ms": ttft,
                 "latency_ms": None if ttft is None else ttft * 4}
            )  # fmt: skip
        for x, y in itertools.combinations(range(n_systems), 2):
            pid = f"p{i}-{x}-{y}"
            rows[PairRow].append(
                {"id": pid, "item_id": f"i{i}", "a_id": f"cp{i}-{systems[x]}",
                 "b_id": f"cp{i}-{systems[y]}", "design": "all"}
            )  # fmt: skip
            p_a = expit(theta[x] - theta[y])
            for j in judges:
                verdicts.append(_verdict(rng, pid, j, bool(rng.random() < p_a)))
            if pair_number in rated:
                for r in rng.choice(raters, RATERS_PER_PAIR, replace=False):
                    humans.append(_verdict(rng, pid, str(r), bool(rng.random() < p_a)))
            pair_number += 1
    with store.session() as session:
        for table, values in rows.items():
            session.execute(insert(table), values)
        session.execute(insert(JudgmentRow), verdicts + humans)
    store.close()
    return len(verdicts), len(humans)


def code_rationales(root: Path) -> tuple[int, int]:
    """The rule coder's stage, as `heart run` runs it: (rationales coded, themes found)."""
    from heart.rationales import load_codebook
    from heart.rationales.code import code_with_rules

    store = open_store(f"sqlite:///{root / 'heart.db'}")
    summary = code_with_rules(store, load_codebook())
    store.close()
    return summary.coded, summary.codes


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
    parser.add_argument("--human-pairs", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="write the study here (a new folder) and keep it")
    parser.add_argument("--rounds", type=int, default=5, help="fresh-process runs (median kept)")
    args = parser.parse_args()
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: the folder exists; name a new one")
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            root = args.keep
        start = time.perf_counter()
        llm, human = write_study(root, args.items, args.systems, args.judges, args.human_pairs)
        print(
            f"study: {llm:,} LLM and {human:,} human verdicts written in "
            f"{time.perf_counter() - start:.1f} s"
        )
        start = time.perf_counter()
        coded, found = code_rationales(root)
        print(
            f"rule coder (a stage of `heart run`, not timed below): {coded:,} rationales, "
            f"{found:,} themes in {time.perf_counter() - start:.1f} s"
        )
        for step, seconds in time_in_process(root).items():
            print(f"  {step}: {seconds:.2f} s")
        runs = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "heart", "report", "--study", str(root)],
                check=True,
                capture_output=True,
            )
            runs.append(time.perf_counter() - start)
        sections = (root / "report" / "report.md").read_text(encoding="utf-8").count("\n## ")
        print(f"report sections: {sections}")
    elapsed = statistics.median(runs)
    print("`heart report` runs (fresh process): " + ", ".join(f"{r:.2f} s" for r in runs))
    print(f"median {elapsed:.2f} s (budget {BUDGET_S:.0f} s)")
    print(f"{BUDGET_S / elapsed:.2f} ratio (budget / median)")


if __name__ == "__main__":
    main()
