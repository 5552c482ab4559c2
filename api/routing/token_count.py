"""Exact cl100k_base token counts of ASCII text without tiktoken's per-call cost (api/routing/text.py's count_tokens).

tiktoken counts in two steps: its pattern splits the text into pieces, then each piece is byte-pair encoded on its
own (`encode_ordinary`: for every match, one token if the piece is in the vocabulary, else BPE of its bytes).
tiktoken's own `_encode_only_native_bpe` does exactly this split in Python. So a count is the sum of the pieces'
counts, and a piece's count never changes: we keep them in a dict, as the WordPiece tokenizer keeps its words
(api/routing/features.py). Prompts repeat their words, so almost every piece is a look-up.

Only ASCII text takes this path. On ASCII, cl100k's `\\p{L}` and `\\p{N}` are `[A-Za-z]` and `[0-9]`, Unicode's
White_Space is `[ \\t\\n\\v\\f\\r]` (what `re.ASCII` makes `\\s`), and `$` (end of text in Rust's regex) is `\\Z`;
Python 3.11's `re` has the possessive quantifiers the pattern uses. On a 2,000-character prompt this costs about
what `encode_ordinary` costs in thread CPU (31-34 us against 37), but it keeps the interpreter lock: tiktoken
releases it for every call, and on a busy worker getting it back meant waiting behind the session log's and the
log listener's threads (docs/benchmarks.md, issue 36). `tests/routing/test_token_count.py` compares it with tiktoken on many texts.
"""

from __future__ import annotations

import re
from typing import Any, Callable

# tiktoken's cl100k_base pattern, as `Encoding._pat_str` carries it; the ASCII form is used only when they match.
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                  r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_ASCII_PIECES = re.compile(
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{1,3}+| ?[^\sA-Za-z0-9]++[\r\n]*+"""
    r"""|\s++\Z|\s*[\r\n]|\s+(?!\S)|\s""", re.ASCII)
MAX_CACHE = 200_000  # pieces; about 30 MB at most, cleared when full (the common pieces come straight back)


class PieceCounter:
    """Token counts of ASCII texts, summed from cached per-piece counts; None for a text it does not handle."""

    def __init__(self, encode_piece: Callable[[bytes], list[int]]) -> None:
        self._encode_piece = encode_piece
        self._counts: dict[str, int] = {}

    @classmethod
    def for_encoding(cls, encoding: Any) -> "PieceCounter | None":
        """A counter for a tiktoken Encoding whose pattern is cl100k_base's, else None (tiktoken counts alone)."""
        encode_piece = getattr(encoding, "_encode_single_piece", None)
        if getattr(encoding, "_pat_str", None) != CL100K_PATTERN or encode_piece is None:
            return None
        return cls(encode_piece)

    def count(self, text: str) -> int | None:
        if not text.isascii():
            return None
        counts = self._counts
        pieces = _ASCII_PIECES.findall(text)
        found = list(map(counts.get, pieces))  # in C: a loop in Python over ~450 pieces cost twice as much
        if None in found:
            if len(counts) >= MAX_CACHE:
                counts.clear()
            for i, n in enumerate(found):
                if n is None:
                    piece = pieces[i]
                    n = counts.get(piece)
                    if n is None:
                        n = counts[piece] = len(self._encode_piece(piece.encode("ascii")))
                    found[i] = n
        return sum(found)
