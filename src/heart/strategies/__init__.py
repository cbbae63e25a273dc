"""Support strategies: the taxonomy, the LLM classifier, human labels and their consensus."""

from heart.strategies._consensus import Consensus, consensus
from heart.strategies._identity import DEFAULT_CLASSIFIER, classifier_id
from heart.strategies._taxonomy import Strategy, Taxonomy, load_taxonomy

__all__ = [
    "DEFAULT_CLASSIFIER",
    "Consensus",
    "Strategy",
    "Taxonomy",
    "classifier_id",
    "consensus",
    "load_taxonomy",
]
