"""A small, honest-by-construction evaluation table for tests: two kinds of prompt, and which model gets each
kind right. Not a benchmark; it only has to make the right answer learnable."""

from __future__ import annotations

import csv
import io
import json
import random

STRONG = ("openai", "gpt-4o")  # dear, right on arithmetic
CHEAP = ("openai", "gpt-4o-mini")  # cheap, right on trivia
MODELS = [STRONG, CHEAP]
LLM_PROVIDERS = json.dumps([{"provider": p, "model": m} for p, m in MODELS])

MATH = "Compute {a} * {b} + {c} and then divide the result by {d}. Show the arithmetic step by step."
TRIVIA = "Which {thing} is famous for being {adj}? Answer with one short sentence about {place}."
THINGS = ["river", "mountain", "painter", "novel", "city", "composer", "bridge", "festival"]
ADJS = ["old", "beautiful", "long", "popular", "quiet", "historic"]
PLACES = ["France", "Japan", "Peru", "Kenya", "Norway", "Chile", "Egypt", "Canada"]


def prompts(n: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(("math", MATH.format(a=rng.randint(10, 99), b=rng.randint(10, 99), c=rng.randint(1, 999),
                                            d=rng.randint(2, 9))))
        else:
            out.append(("trivia", TRIVIA.format(thing=rng.choice(THINGS), adj=rng.choice(ADJS),
                                                place=rng.choice(PLACES))))
    return out


def csv_bytes(n: int = 60, seed: int = 0, prompt_column: str = "prompt", extra: dict | None = None) -> bytes:
    buf = io.StringIO()
    header = [prompt_column] + [f"{p}/{m}/{kind}" for p, m in MODELS for kind in ("score", "response")]
    header += list((extra or {}).keys())
    writer = csv.writer(buf)
    writer.writerow(header)
    for kind, text in prompts(n, seed):
        strong_ok = 1 if kind == "math" else 0
        row = [text, strong_ok, "answer", 1 - strong_ok, "answer"] + list((extra or {}).values())
        writer.writerow(row)
    return buf.getvalue().encode()
