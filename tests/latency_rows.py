"""A small study with timings: streamed models, a model that was not streamed, one with no
replies, people, the ESConv original and a control, all judged by one LLM judge."""

from __future__ import annotations

from itertools import combinations

from heart.store import CompletionRow, Store, SystemRow

from .rows import Verdict, seed_verdicts

RANK = ["m4", "m3", "m1", "m2", "slow", "human/x", "ds", "warm"]
"""Best first; every pair is judged on each of 4 items, with an upset now and then."""
KINDS = {"human": "human", "ds": "dataset", "warm": "control"}
TTFT = {  # per item 0..3; None: no time to first token recorded
    "m1": [100.0, 200.0, 300.0, 400.0],  # median 250, quartiles 175 and 325
    "m2": [120.0, 80.0, 100.0, None],  # three of four streamed: median 100, quartiles 90, 110
    "m3": [600.0, 700.0, 800.0, 900.0],  # median 750, quartiles 675 and 825
    "m4": [2000.0, 3000.0, 4000.0, 5000.0],  # median 3500, quartiles 2750 and 4250
}
EXPECTED = {  # median, first quartile, third quartile (linear interpolation), by hand
    "m1": (250.0, 175.0, 325.0),
    "m2": (100.0, 90.0, 110.0),
    "m3": (750.0, 675.0, 825.0),
    "m4": (3500.0, 2750.0, 4250.0),
}


def latency_verdicts() -> list[Verdict]:
    out = []
    for i in range(4):
        for (x, a), (y, b) in combinations(enumerate(RANK), 2):
            upset = (i + x + y) % 4 == 0
            out.append(Verdict(i, a, b, "g", "b" if upset else "a", 2))
    return out


def seed_latency_study(store: Store) -> None:
    """The verdicts, then the timings: a total latency of TTFT + 1000 ms where there is a TTFT,
    1500 ms for every reply of ``slow``; a failed reply of m2 with a TTFT of 5 ms (never
    counted); and a model ``idle`` with no replies."""
    seed_verdicts(store, latency_verdicts(), kinds=KINDS)
    with store.session() as s:
        for system, values in TTFT.items():
            for item, ttft in enumerate(values):
                row = s.get(CompletionRow, f"cp-{item}-{system}")
                assert row is not None
                row.ttft_ms = ttft
                row.latency_ms = None if ttft is None else ttft + 1000.0
        for item in range(4):
            row = s.get(CompletionRow, f"cp-{item}-slow")
            assert row is not None
            row.latency_ms = 1500.0
        s.add(
            CompletionRow(
                id="cp-0-m2-failed", item_id="i0", system="m2", contributor="retry",
                status="failed", text="", ttft_ms=5.0, latency_ms=6.0, created_at="x",
            )
        )  # fmt: skip
        s.add(SystemRow(name="idle", kind="model", family="idle", spec={}))
