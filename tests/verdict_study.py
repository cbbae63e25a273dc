"""A small study on disk for the reading tests: one conversation, one item, three systems and a
failed one, an LLM judge's verdicts in both shown orders, and two raters' verdicts imported from
files (one rater excluded by quality control)."""

from __future__ import annotations

from pathlib import Path

from heart.ids import completion_id, judgment_id, pair_id
from heart.release import import_table
from heart.store import (
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

CONTEXT = [
    {"role": "seeker", "text": "I lost my job last week.", "parts": ["I lost my job last week."]},
    {"role": "supporter", "text": "That is a lot to carry.", "parts": ["That is a lot to carry."]},
    {"role": "seeker", "text": "I don't know what to do.", "parts": ["I don't know what to do."]},
]
REPLIES = {
    "gpt": "Losing a job hurts; what worries you most?",
    "claude": "That sounds frightening. Want to make a plan together?",
}
PEOPLE = "I'm sorry, that is hard. I'm here."
GPT, CLAUDE, HUMAN = (completion_id("i0", "gpt"), completion_id("i0", "claude"),
                      completion_id("i0", "people", "r9"))  # fmt: skip
GPT_CLAUDE, GPT_HUMAN, HUMAN_CLAUDE = (pair_id("i0", GPT, CLAUDE), pair_id("i0", GPT, HUMAN),
                                       pair_id("i0", HUMAN, CLAUDE))  # fmt: skip

STUDY_FILE = """name: reading
systems:
  - {name: people, kind: human, family: human}
"""
RATER_ONE = (
    "item_id,judge,a_system,b_system,winner,strength,a_contributor,b_contributor,rationale\n"
    "i0,r1,gpt,people,b,2,,r9,sounds like a person\n"  # r1 saw gpt first, chose people
    "i0,r1,claude,gpt,a,1,,,a plan\n"  # r1 saw claude first, chose claude
)
RATER_TWO = (
    "item_id,judge,a_system,b_system,winner,strength,a_contributor,b_contributor,rationale\n"
    "i0,r2,people,claude,tie,1,r9,,=both fine\n"
)


def study_files(root: Path) -> tuple[Path, Path]:
    """The two raters' judgments files, written beside the study."""
    one, two = root.parent / f"{root.name}-r1.csv", root.parent / f"{root.name}-r2.csv"
    one.write_text(RATER_ONE)
    two.write_text(RATER_TWO)
    return one, two


def make_study(root: Path, *, imports: str = "12") -> Path:
    """The study at ``root`` (its store ``heart.db``); the raters' files imported in the order
    ``imports`` names ("12" or "21")."""
    root.mkdir(parents=True)
    (root / "study.yaml").write_text(STUDY_FILE)
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    with store.session() as s:
        s.add(
            ConversationRow(
                id="c1", problem_type="job crisis", emotion_type="anxiety", situation="laid off",
                survey={}, turns=[], origin={},
            )
        )  # fmt: skip
        for name, kind, family in (
            ("gpt", "model", "openai"), ("claude", "model", "anthropic"),
            ("people", "human", "human"), ("broken", "model", "meta"),
        ):  # fmt: skip
            s.add(SystemRow(name=name, kind=kind, family=family, spec={}))
        s.add(JudgeRow(name="judge-g", source="llm", family="google", spec={}))
        s.flush()
        s.add(
            ItemRow(
                id="i0", content_hash="h0", subset="regular", conversation_id="c1",
                turn_index=3, context=CONTEXT, reference="Tell me more.",
                problem_type="job crisis", emotion_type="anxiety", situation="laid off", meta={},
            )
        )  # fmt: skip
        s.flush()
        for system, text in REPLIES.items():
            s.add(
                CompletionRow(id=completion_id("i0", system), item_id="i0", system=system,
                              contributor="", status="ok", text=text, created_at="t")
            )  # fmt: skip
        s.add(
            CompletionRow(id=HUMAN, item_id="i0", system="people", contributor="r9",
                          status="ok", text=PEOPLE, created_at="t")
        )  # fmt: skip
        s.add(
            CompletionRow(id=completion_id("i0", "broken"), item_id="i0", system="broken",
                          contributor="", status="failed", text="", error="timed out",
                          created_at="t")
        )  # fmt: skip
        s.flush()
        for pair, a, b in ((GPT_CLAUDE, GPT, CLAUDE), (GPT_HUMAN, GPT, HUMAN),
                           (HUMAN_CLAUDE, HUMAN, CLAUDE)):  # fmt: skip
            s.add(PairRow(id=pair, item_id="i0", a_id=a, b_id=b, design="all"))
        s.flush()
        axes_ab = {
            "H": {"winner": "a", "strength": 2}, "E": {"winner": "none", "strength": 0},
            "A": {"winner": "a", "strength": 1}, "R": {"winner": "b", "strength": 1},
            "T": {"winner": "none", "strength": 0},
        }  # fmt: skip
        axes_ba = {axis: {"winner": "b", "strength": 1} for axis in "HEART"}
        for order, winner, strength, axes, cost in (
            ("ab", "a", 3, axes_ab, 0.0012), ("ba", "b", 2, axes_ba, None),
        ):  # fmt: skip
            s.add(
                JudgmentRow(
                    id=judgment_id(GPT_CLAUDE, "judge-g", order), pair_id=GPT_CLAUDE,
                    judge="judge-g", order=order,
                    status="ok", winner=winner, strength=strength, axes=axes,
                    rationale=f"shown {order}", raw="{}", call_hash=f"call-{order}",
                    latency_ms=850.0, tokens_in=500, tokens_out=60, cost_usd=cost,
                    created_at="t",
                )
            )  # fmt: skip
        s.add(
            JudgmentRow(
                id=judgment_id(GPT_HUMAN, "judge-g", "ab"), pair_id=GPT_HUMAN, judge="judge-g",
                order="ab", status="failed",
                winner=None, strength=None, axes={}, rationale="", error="no JSON",
                created_at="t",
            )
        )  # fmt: skip
    files = study_files(root)
    for n in imports:
        import_table(store, files[int(n) - 1], "judgments", seed=0)
    with store.session() as s:
        s.add(RaterRow(id="r2", meta={}, excluded_reason="failed 2 of 3 checks", created_at="t"))
    store.close()
    return root
