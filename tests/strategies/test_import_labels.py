"""People's strategy labels from a file: all or nothing, each bad row named by line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from heart.errors import ImportRefused
from heart.release import import_table
from heart.store import LabelRow, RaterRow, Store
from heart.strategies import load_taxonomy

from ..rows import seed_study


def _labels(store: Store) -> list[tuple[str, str, list[str], str | None]]:
    with store.session() as s:
        return [
            (r.completion_id, r.rater_id, list(r.strategies), r.taxonomy_hash)
            for r in s.scalars(select(LabelRow).order_by(LabelRow.id))
        ]


def test_labels_import_with_their_raters_and_the_taxonomy_hash(
    store: Store, tmp_path: Path
) -> None:
    seed_study(store, ["m1", "m2"], items=1, completions=True)
    path = tmp_path / "labels.csv"
    path.write_text(
        "\ufeffcompletion_id,rater,strategies\n"
        "cp-0-m1,ann,Offer Hope; Chit Chat\ncp-0-m2,ann,\ncp-0-m1,bo,Offer Hope\n",
        encoding="utf-8",
    )
    summary = import_table(store, path, "labels", seed=0)
    assert summary.added == {"raters.jsonl": 2, "strategy_labels.jsonl": 3}
    taxonomy = load_taxonomy().hash
    assert sorted(_labels(store)) == sorted([
        ("cp-0-m1", "ann", ["Chit Chat", "Offer Hope"], taxonomy),
        ("cp-0-m2", "ann", [], taxonomy),
        ("cp-0-m1", "bo", ["Offer Hope"], taxonomy),
    ])  # fmt: skip
    again = import_table(store, path, "labels", seed=0)  # a rerun adds nothing
    assert again.added == {} and sum(again.unchanged.values()) == 3
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(RaterRow)) == 2


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"completion_id": "cp-0-m1", "rater": "ann", "strategies": ["Hope"]},
         r"line 2: 'strategies': 'Hope' is not one of the 15 strategies"),
        ({"completion_id": "cp-0-m1", "rater": "ann", "strategies": 3},
         r"line 2: 'strategies' must be a list of strategy names"),
        ({"completion_id": "cp-0-zz", "rater": "ann", "strategies": []},
         r"line 2: 'completion_id' refers to unknown completion 'cp-0-zz'"),
        ({"completion_id": "cp-0-m1", "rater": 7, "strategies": []},
         r"line 2: 'rater' must be text"),
    ],
)  # fmt: skip
def test_a_bad_row_is_named_and_nothing_is_stored(
    store: Store, tmp_path: Path, row: dict[str, object], message: str
) -> None:
    seed_study(store, ["m1"], items=1, completions=True)
    path = tmp_path / "labels.jsonl"
    good = {"completion_id": "cp-0-m1", "rater": "bo", "strategies": ["Offer Hope"]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ImportRefused, match=message):
        import_table(store, path, "labels", seed=0)
    assert _labels(store) == []


def test_one_rater_labelling_a_completion_twice_differently_names_both_lines(
    store: Store, tmp_path: Path
) -> None:
    seed_study(store, ["m1"], items=1, completions=True)
    path = tmp_path / "labels.csv"
    path.write_text("completion_id,rater,strategies\ncp-0-m1,ann,Offer Hope\ncp-0-m1,ann,\n")
    with pytest.raises(ImportRefused, match=r"line 3: rater 'ann' labels .* from line 2"):
        import_table(store, path, "labels", seed=0)
