"""The rationale coding stage: the rule-based coder on every counted judgment with a rationale
that it has not coded under the codebook in use (cheap, so `heart run` always does it), then the
optional LLM coder (``rationales.coder``) through the engine."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert

from heart.engine import ProgressFn
from heart.rationales._codebook import Codebook, load_codebook
from heart.rationales._identity import RULE_CODER
from heart.rationales._rules import code_rationale
from heart.rationales._store import code_values, coding_id, rationales_to_code
from heart.rationales.llm_coder import LlmCodingSummary, code_with_llm
from heart.store import RationaleCodeRow, RationaleCodingRow, Store, now_iso
from heart.study import Study
from heart.types import Status

BATCH = 500  # judgments coded per transaction


@dataclass(frozen=True)
class RuleCodingSummary:
    """What the rule-based coder did: judgments coded now, codes found, and those coded before."""

    coder: str
    codebook: str  # version
    coded: int
    codes: int
    already_done: int


@dataclass(frozen=True)
class RationaleCodingSummary:
    rules: RuleCodingSummary
    llm: LlmCodingSummary | None  # None when no LLM coder is set


def code_with_rules(store: Store, codebook: Codebook) -> RuleCodingSummary:
    """Code every counted rationale the rule coder has not coded under ``codebook``."""
    todo, already = rationales_to_code(store, RULE_CODER, codebook.hash)
    found = 0
    for start in range(0, len(todo), BATCH):
        codings, codes = [], []
        for rationale in todo[start : start + BATCH]:
            read = code_rationale(rationale.text, codebook, rationale.first, rationale.second)
            found += len(read)
            codings.append(
                {"id": coding_id(rationale.judgment_id, RULE_CODER, codebook.hash),
                 "judgment_id": rationale.judgment_id, "coder": RULE_CODER,
                 "codebook_hash": codebook.hash, "status": Status.OK.value, "refused": [],
                 "created_at": now_iso()}
            )  # fmt: skip
            codes += code_values(rationale, RULE_CODER, codebook.hash, read)
        with store.session() as session:  # new codings only: one insert of each kind
            session.execute(insert(RationaleCodingRow), codings)
            if codes:
                session.execute(insert(RationaleCodeRow), codes)
    return RuleCodingSummary(RULE_CODER, codebook.version, len(todo), found, already)


def code_rationales(study: Study, progress: ProgressFn | None = None) -> RationaleCodingSummary:
    """The rule-based coder, then the LLM coder when ``rationales.coder`` is set."""
    config = study.config.rationales
    codebook = load_codebook(config.codebook)
    rules = code_with_rules(study.store, codebook)
    llm = code_with_llm(study, config.coder, progress) if config.coder is not None else None
    return RationaleCodingSummary(rules, llm)
