"""Rationale coding: the codebook, and the rule-based and LLM coders."""

from heart.rationales._codebook import (
    Codebook,
    Theme,
    UnsafePattern,
    compile_pattern,
    load_codebook,
)

__all__ = ["Codebook", "Theme", "UnsafePattern", "compile_pattern", "load_codebook"]
