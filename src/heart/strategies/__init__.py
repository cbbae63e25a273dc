"""Support strategies: the taxonomy, the LLM classifier, human labels and their consensus."""

from heart.strategies._taxonomy import Strategy, Taxonomy, load_taxonomy

__all__ = ["Strategy", "Taxonomy", "load_taxonomy"]
