"""The cached per-piece count (api/routing/token_count.py) is tiktoken's count, exactly, on every ASCII text."""

import random
import string

from api.routing.text import count_tokens, get_encoding
from api.routing.token_count import PieceCounter

ALPHABET = string.printable + "\x00\x01\x1c\x1d\x1e\x1f\x7f" + "'" * 5 + " " * 20 + "\n" * 5
SAMPLES = [
    "hello world", "  leading and trailing  ", "trailing newline\n", "\n\n\n", "   ", "x\r\ny", "\t\tindented\n",
    "I'm sure they'll've said it's 'quoted' and we're 'RE' and 'LL'", "1234567 12 1 000000000", "a1b2c3 99bottles",
    "def f(x):\n    return x ** 2  # comment\n\n\n", "!!!??? ... --- +++ === \n\n", "<|endoftext|> is plain text",
    "$\\frac{1}{2}$ and \\sqrt{x}", "word\x1cword\x1fword \x0b \x0c end", "ends with spaces   ",
    "ends with mixed \n \n ",
]


def reference(text: str) -> int:
    return len(get_encoding().encode_ordinary(text))


def test_the_cached_count_is_tiktokens_on_tricky_ascii():
    for text in SAMPLES:
        assert count_tokens(text) == reference(text), text


def test_the_cached_count_is_tiktokens_on_random_ascii():
    rng = random.Random(7)
    words = ["the", "The", "model", "routing", "don't", "x1", "42", "  ", "\n", "\t", "?", "...", "'s", "''", "==>"]
    for _ in range(400):
        if rng.random() < 0.5:
            text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 200)))
        else:
            text = "".join(rng.choice(words) + rng.choice(["", " ", "\n", "  "]) for _ in range(rng.randint(1, 80)))
        assert count_tokens(text) == reference(text), repr(text)
        assert count_tokens(text) == reference(text), repr(text)  # again, from the cache


def test_non_ascii_text_is_left_to_tiktoken():
    counter = PieceCounter.for_encoding(get_encoding())
    assert counter is not None and counter.count("café au lait") is None
    for text in ("café au lait", "日本語のテキスト and English", "emoji 🙂🙂 done"):
        assert count_tokens(text) == reference(text)


def test_another_pattern_is_left_to_tiktoken():
    assert PieceCounter.for_encoding(get_encoding("o200k_base")) is None
    assert count_tokens("hello world, it's o200k", encoding="o200k_base") == len(
        get_encoding("o200k_base").encode_ordinary("hello world, it's o200k"))


def test_a_full_cache_starts_again_and_still_counts_right(monkeypatch):
    monkeypatch.setattr("api.routing.token_count.MAX_CACHE", 5)
    counter = PieceCounter.for_encoding(get_encoding())
    text = "many different words in one sentence here"
    assert counter.count(text) == reference(text) == counter.count(text)
