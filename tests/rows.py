"""Minimal store rows for tests that need a few items, systems and completions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, select

from heart.errors import ImportRefused
from heart.release import import_bundle
from heart.store import (
    Base,
    CompletionRow,
    ConversationRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    Store,
    SystemRow,
    open_store,
)


def seed_study(
    store: Store,
    systems: Iterable[str],
    *,
    items: int = 1,
    completions: bool = False,
    judges: Iterable[str] = (),
) -> None:
    """Conversation ``c1``; the systems (family = name); items ``i0``…; with ``completions``, an ok
    completion ``cp-{i}-{system}`` per item and system; LLM judges by name. Idempotent."""
    systems = list(systems)
    with store.session() as s:
        s.merge(
            ConversationRow(
                id="c1", problem_type="p", emotion_type="e", experience_type="",
                situation="", survey={}, turns=[], origin={},
            )
        )  # fmt: skip
        for name in systems:
            s.merge(SystemRow(name=name, kind="model", family=name, spec={}))
        for name in judges:
            s.merge(JudgeRow(name=name, source="llm", family=name, spec={}))
        s.flush()
        for i in range(items):
            s.merge(
                ItemRow(
                    id=f"i{i}", content_hash=f"h{i}", subset="regular", conversation_id="c1",
                    turn_index=3, context=[], reference="r", problem_type="p",
                    emotion_type="e", situation="", meta={},
                )
            )  # fmt: skip
        s.flush()
        if completions:
            for i in range(items):
                for name in systems:
                    s.merge(
                        CompletionRow(
                            id=f"cp-{i}-{name}", item_id=f"i{i}", system=name, contributor="",
                            status="ok", text="t", created_at="x",
                        )
                    )  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    """One judgment to store: ``a`` and ``b`` name completions as ``system`` or
    ``system/contributor``; ``winner`` is a, b or tie in those terms."""

    item: int
    a: str
    b: str
    judge: str
    winner: str
    strength: int = 1
    order: str = "ab"
    axes: dict[str, Any] = field(default_factory=dict)


def seed_verdicts(
    store: Store,
    verdicts: Iterable[Verdict],
    *,
    kinds: dict[str, str] | None = None,
    sources: dict[str, str] | None = None,
    adversarial: Iterable[int] = (),
) -> None:
    """Items (item i in conversation ``c{i}``; ``adversarial`` ones in that subset), systems
    (kind from ``kinds``, default model; family = name), judges (source from ``sources``,
    default llm), completions and pairs, and the verdicts as ok judgments."""
    verdicts = list(verdicts)
    kinds, sources, adversarial = kinds or {}, sources or {}, set(adversarial)
    items = sorted({v.item for v in verdicts})
    completions = {(v.item, c) for v in verdicts for c in (v.a, v.b)}
    with store.session() as s:
        for i in items:
            s.merge(
                ConversationRow(
                    id=f"c{i}", problem_type="p", emotion_type="e", experience_type="",
                    situation="", survey={}, turns=[], origin={},
                )
            )  # fmt: skip
        for name in sorted({c.split("/")[0] for _, c in completions}):
            s.merge(SystemRow(name=name, kind=kinds.get(name, "model"), family=name, spec={}))
        for judge in sorted({v.judge for v in verdicts}):
            source = sources.get(judge, "llm")
            family = "human" if source == "human" else judge
            s.merge(JudgeRow(name=judge, source=source, family=family, spec={}))
        s.flush()
        for i in items:
            s.merge(
                ItemRow(
                    id=f"i{i}", content_hash=f"h{i}",
                    subset="adversarial" if i in adversarial else "regular",
                    conversation_id=f"c{i}", turn_index=3, context=[], reference="r",
                    problem_type="p", emotion_type="e", situation="", meta={},
                )
            )  # fmt: skip
        s.flush()
        for i, name in sorted(completions):
            system, _, contributor = name.partition("/")
            s.merge(
                CompletionRow(
                    id=f"cp-{i}-{name}", item_id=f"i{i}", system=system,
                    contributor=contributor, status="ok", text=f"reply {name}", created_at="x",
                )
            )  # fmt: skip
        s.flush()
        for v in verdicts:
            pid = f"p-{v.item}-{v.a}-{v.b}"
            s.merge(
                PairRow(id=pid, item_id=f"i{v.item}", a_id=f"cp-{v.item}-{v.a}",
                        b_id=f"cp-{v.item}-{v.b}", design="all")
            )  # fmt: skip
            s.flush()
            s.add(
                JudgmentRow(
                    id=f"{pid}-{v.judge}-{v.order}", pair_id=pid, judge=v.judge, order=v.order,
                    status="ok", winner=v.winner, strength=v.strength, axes=v.axes,
                    rationale="", created_at="x",
                )
            )  # fmt: skip


def snapshot(store: Store) -> dict[str, list[str]]:
    """Every row of every table, in a form that compares equal exactly when nothing changed."""
    out: dict[str, list[str]] = {}
    with store.session() as s:
        for model in Base.__subclasses__():
            columns = [c.key for c in inspect(model).columns]
            rows = s.execute(select(*(getattr(model, c) for c in columns))).all()
            out[model.__tablename__] = sorted(repr(tuple(r)) for r in rows)
    return out


def refused_bundle(bundle: Path, fresh_db: Path) -> str:
    """Import ``bundle`` into a new SQLite store at ``fresh_db``: the refusal, after checking
    that the store is left as it was."""
    fresh = open_store(f"sqlite:///{fresh_db}")
    before = snapshot(fresh)
    with pytest.raises(ImportRefused) as refused:
        import_bundle(fresh, bundle)
    assert snapshot(fresh) == before
    fresh.close()
    return str(refused.value)
