"""ESConv readers: any of the three layouts (upstream, hf, failed) as normalised conversations.

ESConv (Liu et al., ACL 2021) is CC BY-NC 4.0, for non-commercial academic research only; cite
the paper when you use it. These readers load a copy you provide; no data ships with them.
"""

from heart.corpus._corpus import Corpus, corpus_files, load_corpus
from heart.corpus._layouts import Layout, Origin, detect_layout, read_file
from heart.corpus._normalise import STRATEGIES, collapse_whitespace, normalise_strategy

__all__ = [
    "STRATEGIES",
    "Corpus",
    "Layout",
    "Origin",
    "collapse_whitespace",
    "corpus_files",
    "detect_layout",
    "load_corpus",
    "normalise_strategy",
    "read_file",
]
