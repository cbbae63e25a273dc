"""Minimal store rows for tests that need a few items, systems and completions."""

from __future__ import annotations

from collections.abc import Iterable

from heart.store import CompletionRow, ConversationRow, ItemRow, JudgeRow, Store, SystemRow


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
