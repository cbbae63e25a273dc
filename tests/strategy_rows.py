"""Store rows for the strategy analyses: items with ESConv annotations, classified replies,
people's labels; and one crafted study whose figures are worked out by hand in the tests."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from heart.store import (
    ClassificationRow,
    CompletionRow,
    ConversationRow,
    ItemRow,
    LabelRow,
    RaterRow,
    Store,
    SystemRow,
    add_if_missing,
)
from heart.strategies import DEFAULT_CLASSIFIER, classifier_id, load_taxonomy

TAXONOMY = load_taxonomy()
CLASSIFIER = classifier_id(DEFAULT_CLASSIFIER)
KINDS = {"human": "human", "esconv-original": "dataset", "warm": "control"}
FAMILIES = {"human": "human", "m1": "fa", "m2": "fa", "m3": "fb", "esconv-original": "dataset",
            "warm": "control"}  # fmt: skip

AF, CL, EV, RS = "Affirmation", "Clarification", "Emotional Validation", "Reflective Statements"
OH, SO, SI, CC = "Offer Hope", "Suggest Options", "Share Information", "Chit Chat"


def add_item(
    store: Store, item: str, conversation: str, subset: str = "regular",
    esconv: Iterable[str] = (),
) -> None:  # fmt: skip
    """An item of ``subset`` in ``conversation`` whose original reply ESConv annotated with the
    ``esconv`` strategies."""
    with store.session() as s:
        add_if_missing(
            s, ConversationRow, id=conversation, problem_type="p", emotion_type="e",
            experience_type="", situation="", survey={}, turns=[], origin={},
        )  # fmt: skip
        s.flush()
        s.add(
            ItemRow(
                id=item, content_hash=f"h-{item}", subset=subset, conversation_id=conversation,
                turn_index=3, context=[], reference="r", problem_type="p", emotion_type="e",
                situation="", meta={"reference_strategies": list(esconv)},
            )
        )  # fmt: skip


def add_reply(
    store: Store, item: str, system: str, contributor: str = "", *,
    present: Iterable[str] = (), uncertain: Iterable[str] = (), classifier: str = CLASSIFIER,
    taxonomy_hash: str = TAXONOMY.hash, status: str = "ok",
) -> str:  # fmt: skip
    """A reply by ``system`` (kind and family from KINDS and FAMILIES, default model and the
    name) to ``item``, classified with ``present`` and ``uncertain`` strategies (the rest
    absent); returns its completion id ``cp-{item}-{system}[-{contributor}]``."""
    cid = f"cp-{item}-{system}" + (f"-{contributor}" if contributor else "")
    present, uncertain = set(present), set(uncertain)
    labels = {
        name: {
            "status": "present" if name in present else "uncertain" if name in uncertain
            else "absent",
            "probability": 0.9 if name in present else 0.5 if name in uncertain else 0.1,
            "evidence": "",
        }
        for name in TAXONOMY.names
    }  # fmt: skip
    with store.session() as s:
        add_if_missing(s, SystemRow, name=system, kind=KINDS.get(system, "model"),
                       family=FAMILIES.get(system, system), spec={})  # fmt: skip
        s.flush()
        if s.get(CompletionRow, cid) is None:
            s.add(CompletionRow(id=cid, item_id=item, system=system, contributor=contributor,
                                status="ok", text=f"reply {cid}", created_at="x"))  # fmt: skip
            s.flush()
        s.add(
            ClassificationRow(
                id=hashlib.sha256(f"{cid} {classifier} {taxonomy_hash}".encode()).hexdigest()[:40],
                completion_id=cid,
                classifier=classifier, taxonomy_hash=taxonomy_hash, status=status,
                labels=labels if status == "ok" else {}, created_at="x",
            )
        )  # fmt: skip
    return cid


def add_label(
    store: Store, completion: str, rater: str, strategies: Iterable[str], *,
    excluded: str | None = None, taxonomy_hash: str | None = TAXONOMY.hash,
) -> None:  # fmt: skip
    """``rater``'s strategy labels of ``completion`` (the rater excluded with ``excluded``)."""
    with store.session() as s:
        if s.get(RaterRow, rater) is None:
            s.add(RaterRow(id=rater, meta={}, excluded_reason=excluded, created_at="x"))
            s.flush()
        s.add(
            LabelRow(
                id=f"lb-{completion}-{rater}", completion_id=completion, rater_id=rater,
                strategies=sorted(strategies), taxonomy_hash=taxonomy_hash, created_at="x",
            )
        )  # fmt: skip


REGULAR = {  # item -> conversation, ESConv's annotation of the original reply
    "i0": ("c0", ["Question"]),
    "i1": ("c1", ["Affirmation and Reassurance", "Providing Suggestions"]),
    "i2": ("c2", ["Reflection of feelings"]),
    "i3": ("c3", ["Restatement or Paraphrasing", "Reflection of feelings"]),
}
ADVERSARIAL = {"a0": "c0", "a1": "c2"}
ESCONV_REPLIES = {"i0": [CL], "i1": [AF], "i2": [RS, EV], "i3": [SI]}


def crafted_study(store: Store) -> None:
    """Six items (four regular in c0–c3, two adversarial in c0 and c2); two human replies
    (x: CL, EV; y: RS, OH on regular items and CL on adversarial ones), m1 (EV, SO), m2 (EV,
    SO uncertain), m3 (AF, EV, SO; its a1 classification failed), the control warm (EV) on
    every item, the ESConv original on the regular ones; answers of another classifier and
    another taxonomy that must be ignored; and people's labels on seven completions, one of
    them a disagreement, with an excluded rater and a label of another taxonomy."""
    for item, (conversation, esconv) in REGULAR.items():
        add_item(store, item, conversation, "regular", esconv)
    for item, conversation in ADVERSARIAL.items():
        add_item(store, item, conversation, "adversarial")
    for item in [*REGULAR, *ADVERSARIAL]:
        regular = item in REGULAR
        add_reply(store, item, "human", "x", present=[CL, EV])
        add_reply(store, item, "human", "y", present=[RS, OH] if regular else [CL])
        add_reply(store, item, "m1", present=[EV, SO])
        add_reply(store, item, "m2", present=[EV], uncertain=[SO])
        add_reply(store, item, "m3", present=[AF, EV, SO], status="ok" if item != "a1" else
                  "failed")  # fmt: skip
        add_reply(store, item, "warm", present=[EV])
        if regular:
            add_reply(store, item, "esconv-original", present=ESCONV_REPLIES[item])
    # ignored: another classifier, another taxonomy
    add_reply(store, "i0", "m1", present=[CC], classifier="openai:gpt-4o@https://x")
    add_reply(store, "i0", "m2", present=[CC], taxonomy_hash="0" * 64)

    add_label(store, "cp-i0-m1", "r1", [EV, SO])
    add_label(store, "cp-i0-m1", "r2", [EV])  # SO chosen by exactly half: a disagreement
    add_label(store, "cp-i0-m2", "r1", [EV])
    add_label(store, "cp-i0-m2", "r2", [EV])
    add_label(store, "cp-i0-m2", "r3", [AF], excluded="failed 2 of 2 quality checks")
    add_label(store, "cp-i1-human-x", "r1", [CL, EV])
    add_label(store, "cp-i1-human-x", "r2", [CL, EV])
    add_label(store, "cp-i1-m3", "r1", [AF, SO])
    add_label(store, "cp-i1-m3", "r3", [EV])  # excluded: r1 alone decides
    add_label(store, "cp-i2-m2", "r2", [EV, SO])
    add_label(store, "cp-i3-warm", "r1", [EV])
    add_label(store, "cp-i3-warm", "r2", [SO], taxonomy_hash="f" * 64)  # another taxonomy
    add_label(store, "cp-i3-m1", "r2", [EV, SO], taxonomy_hash=None)  # stored before hashes
