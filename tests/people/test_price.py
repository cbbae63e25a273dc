"""The people's side priced, by hand: seats per kind from items, pairs and replies, sessions of
tasks_per_person, minutes, hours, pay and the platform's fee; and `heart run --dry-run` on the
demo study printing them beside the models' cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from heart.config import PeopleSpec
from heart.people import TaskTime, price_people, projected_seats
from heart.study import create_study

from ..helpers import heart


def test_seats_sessions_and_pay_by_hand() -> None:
    spec = PeopleSpec(
        writers_per_item=2, raters_per_pair=3, check_every=4, label_completions=5,
        labellers_per_completion=2, tasks_per_person=20, pay_per_hour=12.0,
    )  # fmt: skip
    seats = projected_seats(spec, items=10, pairs=30, replies=40)
    assert seats == {"write": 20, "judge": (30 + 7) * 3, "label": 10}  # 7 checks: 30 // 4
    plan = price_people(spec, seats, {"write": 5}, TaskTime(45.0, 0, False))
    assert plan.left == 20 + 111 + 10 - 5 == 136
    assert plan.sessions == 7  # 136 tasks in sessions of 20, the last one paid whole
    assert plan.session_minutes == 15.0  # 20 tasks of 45 s
    assert plan.hours == pytest.approx(7 * 20 * 45 / 3600)  # 1.75 hours
    assert plan.pay == pytest.approx(1.75 * 12.0)
    assert plan.fee == pytest.approx(21.0 / 3) and plan.total == pytest.approx(28.0)
    unsized = price_people(PeopleSpec(), seats, {}, TaskTime(60.0, 0, False))
    assert (unsized.sessions, unsized.session_minutes, unsized.pay) == (None, None, None)
    assert unsized.hours == pytest.approx(141 / 60)
    none = price_people(spec, {"write": 2}, {"write": 2}, TaskTime(45.0, 0, False))
    assert (none.left, none.sessions, none.pay) == (0, 0, 0.0)


def test_the_dry_run_prices_the_crowd_beside_the_models(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    create_study(root, demo=True)
    text = (root / "study.yaml").read_text(encoding="utf-8")
    people = ("people:\n  tasks_per_person: 12\n  pay_per_hour: 9.0\n  seconds_per_task: 50\n"
              "  writers_per_item: 1\n  raters_per_pair: 2\n  check_every: 0\n")  # fmt: skip
    assert "\npeople:" not in text
    (root / "study.yaml").write_text(text + people, encoding="utf-8")
    out = heart("run", "--dry-run", "--study", root).stdout
    said = " ".join(out.split())
    rows = [line.split("│")[1:5] for line in out.splitlines() if line.startswith("│ ")]
    seats = {
        cells[0].strip(): [int(c) for c in cells[1:]]
        for cells in rows
        if len(cells) == 4 and cells[0].strip() in ("write", "judge", "label")
    }
    # 14 items (12 regular, 2 adversarial) x 1 writer; 38 pairs x 2 raters: 90 tasks
    assert seats["write"] == [14, 0, 14] and seats["judge"] == [76, 0, 76]
    assert "90 tasks left make 8 sessions of 12 tasks, 10 minutes each at 50 s a task" in said
    # 8 sessions x 12 tasks x 50 s = 1 h 20 min at £9: £12.00, and a third on top
    assert "The crowd: £12.00 pay + £4.00 platform fee (33%) = £16.00" in said
