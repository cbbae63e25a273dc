"""The reading half of heart.pipeline: boards, verdicts and analyses as data, checked by hand on
one conversation and one rater, equal whatever order data came in, and read from a study opened
read-only without changing a byte of its store."""

from __future__ import annotations

import hashlib
import math
import stat
from pathlib import Path

import pytest

from heart import pipeline
from heart.errors import HeartError, StoreError
from heart.study import open_study

from .verdict_study import make_study

ELO_SCALE = 400 / math.log(10)


def test_leaderboard_on_one_conversation_by_hand(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    with open_study(root, read_only=True) as study:
        board = pipeline.leaderboard(study)  # LLM judges, all items
    assert (board.key, board.source, board.subset) == ("llm-all", "llm", "all")
    frame = board.to_pandas().set_index("system")
    # judge-g: gpt won shown first (strength 3), claude won shown first (strength 2):
    # weighted Bradley-Terry puts gpt ln(3/2) above claude, centred on 1500
    half = ELO_SCALE * math.log(1.5) / 2
    assert frame.loc["gpt", "elo"] == pytest.approx(1500 + half)
    assert frame.loc["claude", "elo"] == pytest.approx(1500 - half)
    assert frame.loc["gpt", "win_rate"] == 0.5 and frame.loc["gpt", "comparisons"] == 2
    # per axis (a "none" is half to each): H a|b, E none|b, A a|b, R b|b, T none|b
    assert [frame.loc["gpt", f"axis_win_rates_{a}"] for a in "HEART"] == [
        0.5, 0.25, 0.5, 0.0, 0.25,
    ]  # fmt: skip
    assert frame.loc["gpt", "axis_elo_H"] == pytest.approx(1500 + ELO_SCALE * math.log(2) / 2)
    # one conversation: no interval, no rank, and the row says why
    assert frame.loc["gpt", "low"] is None and frame.loc["gpt", "rank"] == 0
    assert frame.loc["gpt", "preliminary"].startswith(
        "1 conversation: an interval needs 5, so none is shown; 2 comparisons (fewer than 50)"
    )


def test_one_rater_board_says_every_verdict_is_from_one_rater(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    with open_study(root, read_only=True) as study:
        board = pipeline.leaderboard(study, judges="human")
        by_name = pipeline.leaderboard(study, judges=["r1"])
    # r2 is excluded by quality control: the board counts r1's two verdicts only
    assert board.leaderboard.judges == ("r1",) and board.leaderboard.comparisons == 2
    frame = board.to_pandas().set_index("system")
    assert frame.loc["people", "win_rate"] == 1.0 and frame.loc["claude", "win_rate"] == 1.0
    assert frame.loc["gpt", "win_rate"] == 0.0
    assert all("every verdict comes from one rater" in p for p in frame["preliminary"])
    assert by_name.source == "human"
    assert by_name.to_pandas().equals(board.to_pandas())


def test_reading_errors_name_what_the_study_has(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    with open_study(root, read_only=True) as study:
        with pytest.raises(HeartError, match="subsets judged are: all, regular"):
            pipeline.leaderboard(study, subset="adversarial")
        with pytest.raises(HeartError, match=r"judges with some are: judge-g, r1$"):
            pipeline.leaderboard(study, judges=["r2"])  # excluded: none of its verdicts count
        with pytest.raises(HeartError, match="judges must be llm, human, all"):
            pipeline.leaderboard(study, judges="people")


def test_boards_and_verdicts_are_the_same_whatever_order_data_came_in(tmp_path: Path) -> None:
    frames = []
    for order in ("12", "21"):
        with open_study(make_study(tmp_path / order, imports=order), read_only=True) as study:
            verdicts = pipeline.verdicts(study).to_pandas().drop(columns="created_at")
            frames.append((pipeline.boards(study).to_pandas(), verdicts))
    assert frames[0][0].equals(frames[1][0]) and frames[0][1].equals(frames[1][1])
    boards, verdicts = frames[0]
    assert list(dict.fromkeys(boards["board"])) == ["llm-all", "human-all", "all-all"]
    assert len(verdicts) == 5 and verdicts["counted"].sum() == 4
    assert str(verdicts["strength"].dtype) == "Int64"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_reading_works_on_a_read_only_store_and_changes_no_byte(tmp_path: Path) -> None:
    root = make_study(tmp_path / "s")
    store = root / "heart.db"
    assert not (root / "heart.db-wal").exists()  # closed cleanly: every row is in the file
    store.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    before = _sha256(store)
    try:
        with open_study(root, read_only=True) as study:
            assert len(pipeline.verdicts(study).to_arrow()) == 5
            assert len(pipeline.boards(study).to_pandas()) == 10
            assert len(pipeline.leaderboard(study, judges="all").to_pandas()) == 4
            assert list(pipeline.audit(study).to_pandas()["judge"]) == ["judge-g", "r1"]
            assert pipeline.agreement(study).to_pandas().empty  # no pair has both majorities
            assert len(pipeline.latency(study).to_pandas()) == 4
            facts = pipeline.facts(study)
            assert facts.main is not None and facts.main.key == "llm-all"
            with pytest.raises(Exception, match=r"readonly"):
                study.use_prompt("generation")  # a write is refused, even to root
    finally:
        store.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert _sha256(store) == before


def test_read_only_refuses_a_store_it_would_have_to_migrate(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    (root / "study.yaml").write_text(
        "name: empty\nsystems:\n  - {name: people, kind: human, family: human}\n"
    )
    (root / "heart.db").write_bytes(b"")  # an empty SQLite file: no schema yet
    with pytest.raises(StoreError, match="holds no study yet"):
        open_study(root, read_only=True)
    assert (root / "heart.db").read_bytes() == b""
