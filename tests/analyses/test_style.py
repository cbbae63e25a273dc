"""Style control on a board: the counting rules by hand, and a board whose verdicts follow
reply length."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import update

from heart import pipeline
from heart.analyses import (
    DEFAULT_WARMTH,
    STYLE_FEATURES,
    EvidenceRule,
    StyleInputs,
    build_leaderboard,
    build_style_control,
    count_markdown,
    count_questions,
    count_warmth,
    load_comparisons,
    load_reply_texts,
    reply_style,
    warmth_pairs,
    warmth_phrases,
)
from heart.store import CompletionRow, Store
from heart.study import open_study

from ..rows import Verdict, seed_verdicts
from ..verdict_study import make_study


def test_questions_are_runs_of_question_marks() -> None:
    assert count_questions("How are you? Really?? Tell me.") == 2
    assert count_questions("No questions here.") == 0


def test_markdown_elements_by_hand() -> None:
    text = "# Plan\n- **breathe** first\n2) call `her`\nSee [this](http://x.org) and *rest*."
    # heading, two list items, bold, code, link, italic
    assert count_markdown(text) == 7
    assert count_markdown("I hear you, and 2 * 3 is not emphasis.") == 0


def test_warmth_counts_word_pairs_shared_with_the_phrases() -> None:
    pairs = warmth_pairs(["Sorry you're going through this, that sounds hard."])
    assert count_warmth("I'm so sorry you're going through this.", pairs) == 4
    assert count_warmth("That sounds HARD, what happened at work?", pairs) == 2
    assert reply_style("That sounds hard? Yes? **Really**", pairs) == (5, 2, 1, 2)


def test_warmth_phrases_fall_back_to_control_replies_then_the_default() -> None:
    assert warmth_phrases(["a b"], ["c d"]) == ("a b",)
    assert warmth_phrases([], ["c d"]) == ("c d",)
    assert warmth_phrases([], []) == DEFAULT_WARMTH


def _length_verdicts() -> list[Verdict]:
    """Twelve conversations: the long-winded system wins every verdict against the other two,
    which tie among themselves half the time and split the rest."""
    out = []
    for i in range(12):
        out.append(Verdict(i, "long", "short", "g", "a" if i % 4 else "b", 3))
        out.append(Verdict(i, "mid", "long", "g", "b" if i % 3 else "a", 3))
        out.append(Verdict(i, "short", "mid", "g", "a" if i % 2 else "b", 3))
    return out


def test_board_with_style_control_shows_the_controlled_elo_and_coefficients(store: Store) -> None:
    seed_verdicts(store, _length_verdicts())
    words = {"long": 60, "mid": 25, "short": 8}
    with store.session() as s:
        for system, n in words.items():
            s.execute(
                update(CompletionRow)
                .where(CompletionRow.system == system)
                .values(text=" ".join(["word"] * n) + ("?" if system == "mid" else ""))
            )
        s.commit()
    comparisons = load_comparisons(store)
    texts = load_reply_texts(store, comparisons.completions)
    style = build_style_control(comparisons, StyleInputs(texts, DEFAULT_WARMTH), rounds=50)
    # Only length and questions differ; markdown and warmth are the same everywhere.
    assert [c.feature for c in style.coefficients] == ["length"]
    assert {name for name, _ in style.dropped} == {"questions", "markdown", "warmth"}
    board = build_leaderboard(comparisons, rounds=50, style=StyleInputs(texts, DEFAULT_WARMTH))
    row = {s.system: s for s in board.standings}
    assert row["long"].elo > row["mid"].elo
    for system in words:
        assert np.isfinite(row[system].style_elo)
        assert row[system].style_low <= row[system].style_elo <= row[system].style_high
    assert board.style is not None and board.style.coefficients[0].feature == "length"
    ablation = next(a for a in board.ablations if a.name == "style-controlled")
    assert -1.0 <= ablation.kendall_tau <= 1.0


def test_style_elo_is_on_the_board_unless_the_study_turns_it_off(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    with open_study(root, read_only=True) as study:
        board = pipeline.leaderboard(study)
    frame = board.to_pandas().set_index("system")
    study_file = root / "study.yaml"
    study_file.write_text(study_file.read_text() + "ratings: {style_control: false}\n")
    with open_study(root, read_only=True) as study:
        plain = pipeline.leaderboard(study)
    assert plain.leaderboard.style is None
    assert plain.to_pandas()["style_elo"].isna().all()  # turned off: no style-controlled Elo
    # Two verdicts of one conversation: every reply feature is determined by the two systems
    # or never differs, so all are dropped and the controlled Elo is the plain Elo.
    style = board.leaderboard.style
    assert style is not None and style.coefficients == []
    assert {name for name, _ in style.dropped} == set(STYLE_FEATURES)
    for system in ("gpt", "claude"):
        assert frame.loc[system, "style_elo"] == pytest.approx(frame.loc[system, "elo"])
    # one conversation: no interval, as for the plain Elo, and the fit is preliminary
    assert frame.loc["gpt", "style_low"] is None and frame.loc["gpt", "low"] is None
    assert style.preliminary[0].startswith("1 conversation: an interval needs 5")


def test_a_small_board_marks_its_style_fit_preliminary(store: Store) -> None:
    seed_verdicts(store, _length_verdicts())
    comparisons = load_comparisons(store)
    texts = {
        c: f"{' '.join(['word'] * (5 + i % 7))}?" for i, c in enumerate(comparisons.completions)
    }
    board = build_leaderboard(comparisons, rounds=40, style=StyleInputs(texts, DEFAULT_WARMTH))
    style = board.style
    assert style is not None
    # 36 verdicts over 12 conversations: enough for intervals, below the rule's 50 verdicts
    assert style.preliminary == ("36 comparisons (fewer than 50)",)
    assert all(np.isfinite(c.low) for c in style.coefficients)
    firm = build_leaderboard(
        comparisons, rounds=40, style=StyleInputs(texts, DEFAULT_WARMTH),
        rule=EvidenceRule(conversations=10, comparisons=30),
    )  # fmt: skip
    assert firm.style is not None and firm.style.preliminary == ()
    # fewer than five conversations: no interval for any coefficient
    few = comparisons.select(comparisons.conversation < 3)
    thin = build_leaderboard(few, rounds=40, style=StyleInputs(texts, DEFAULT_WARMTH))
    assert thin.style is not None
    assert thin.style.preliminary[0] == "3 conversations: an interval needs 5, so none is shown"
    assert all(np.isnan(c.low) and np.isnan(c.high) for c in thin.style.coefficients)
