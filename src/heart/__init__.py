"""heart-bench: the HEART benchmark for emotional-support dialogue, end to end."""

__version__ = "0.1.0"
