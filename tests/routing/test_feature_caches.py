"""The featuriser's shortcuts (api/routing/features.py) change no feature: WordPiece's chunk cache splits every
text into the words the pattern finds over the whole text, and the vectors are those of the plain computation."""

import random
from itertools import chain

import numpy as np

from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import Featurizer, WordPiece, embedding_window, hand_features

PIECES = ["the", "The", "model's", "x=1;", "(a)", "don't", "e.g.,", "café", "naïve", "日本語", "ÉCOLE", "42", "3.14",
          "foo_bar", "__init__", "```", "def", "f(x):", "\\frac{1}{2}", "$x$", "😀", "a" * 120, "x" * 99]
SPACES = [" ", "  ", "\n", "\t", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\u00a0", "\u2003", "\u3000", "\x85", ""]


def reference_ids(tokenizer: WordPiece, text: str) -> list[int]:
    """The encoding as it was: the pattern over the whole (lowered, accent-stripped) text, word by word."""
    import unicodedata

    text = text.lower()
    if not text.isascii():
        text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")
    return list(chain.from_iterable(tokenizer._word_ids(w) for w in tokenizer._SPLIT.findall(text)))


def texts(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) + rng.choice(SPACES) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def test_chunked_encoding_finds_the_patterns_words():
    fz = Featurizer.load(DEFAULT_ARTEFACT_DIR)
    tokenizer = fz.embedding.tokenizer
    for text in texts(600) * 2:  # the second round from the caches
        assert tokenizer.encode(text) == reference_ids(tokenizer, text), repr(text)


def test_vectors_are_the_plain_computations():
    fz = Featurizer.load(DEFAULT_ARTEFACT_DIR)
    for text in texts(200, seed=5) + ["", "   ", "word " * 3000]:
        ids = reference_ids(fz.embedding.tokenizer, embedding_window(text))
        if ids:
            v = fz.embedding.matrix[ids].mean(axis=0)
            v = v / np.sqrt(v @ v) if float(np.sqrt(v @ v)) > 0 else v
        else:
            v = np.zeros(fz.embedding.dim, np.float32)
        got = fz.featurize(text, n_messages=2).vector
        assert np.allclose(got[: fz.embedding.dim], v, rtol=1e-6, atol=1e-7), repr(text)
        assert np.array_equal(got[fz.embedding.dim:], hand_features(text, n_messages=2))


def test_marker_counts_skip_only_tokens_that_cannot_occur():
    from api.routing.features import _CODE_GROUPS, _CODE_TOKENS, _LATEX_GROUPS, _LATEX_TOKENS, _occurrences

    samples = texts(300, seed=9) + ["```py\nprint(x)\n```", "a => b; f(); };", "#include <x>", "$\\frac{1}{2}$ \\sum"]
    for text in samples:
        for tokens, groups in ((_CODE_TOKENS, _CODE_GROUPS), (_LATEX_TOKENS, _LATEX_GROUPS)):
            assert _occurrences(text, groups) == sum(text.count(t) for t in tokens), repr(text)
