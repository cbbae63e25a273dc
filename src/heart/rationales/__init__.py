"""Rationale coding: the codebook, the rule-based coder, and how coders are named (the stage and
the LLM coder live in ``heart.rationales.code`` and ``heart.rationales.llm_coder``)."""

from heart.rationales._codebook import (
    Codebook,
    Theme,
    UnsafePattern,
    compile_pattern,
    load_codebook,
    parse_codebook,
)
from heart.rationales._identity import RULE_CODER, llm_coder_id
from heart.rationales._rules import Code, code_rationale
from heart.rationales._sides import Clause, read_clauses

__all__ = [
    "RULE_CODER",
    "Clause",
    "Code",
    "Codebook",
    "Theme",
    "UnsafePattern",
    "code_rationale",
    "compile_pattern",
    "llm_coder_id",
    "load_codebook",
    "parse_codebook",
    "read_clauses",
]
