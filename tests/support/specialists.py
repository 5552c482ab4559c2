"""Uploads for the custom-router tests where no single model is best: a generalist right on most prompts of every
kind, and specialists each right on nearly every prompt of one kind and few of the others. Prompts in Chinese,
Spanish and English, so the same data also checks that routing needs no e5 and no English vocabulary."""

from __future__ import annotations

import csv
import io
import json
import random

GENERALIST = ("openai", "gpt-4o")
SPECIALISTS = {"maths_zh": ("anthropic", "claude-haiku-4-5"), "cooking_es": ("openai", "gpt-4o-mini"),
               "code_en": ("google", "gemini-2.5-flash")}
MODELS = [GENERALIST, *SPECIALISTS.values()]
LLM_PROVIDERS = json.dumps([{"provider": p, "model": m} for p, m in MODELS])

_TEMPLATES = {
    "maths_zh": ["计算 {a} 乘以 {b} 再加上 {c}，结果是多少？", "一个长方形的长是{a}厘米，宽是{b}厘米，它的面积是多少平方厘米？",
                 "小明有{a}个苹果，吃掉了{b}个，又买了{c}个，现在有几个苹果？"],
    "cooking_es": ["¿Cómo se prepara una {dish} tradicional para {n} personas?",
                   "¿Cuánto tiempo hay que hornear una {dish} casera a {t} grados?",
                   "Dame una receta sencilla de {dish} con ingredientes de temporada."],
    "code_en": ["Write a Python function that returns the {k} largest values of a list of {n} integers.",
                "Fix the bug in this loop: for i in range({n}): total += values[i + {k}]",
                "Implement a binary search in Python over a sorted list of length {n} and explain it."],
}
_DISHES = ["paella", "tortilla", "sopa", "empanada", "ensalada", "tarta", "salsa", "croqueta"]


def specialist_prompts(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """n (kind, prompt) pairs, the kinds in turn."""
    rng = random.Random(seed)
    kinds = list(_TEMPLATES)
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        text = rng.choice(_TEMPLATES[kind]).format(a=rng.randint(2, 99), b=rng.randint(2, 99), c=rng.randint(2, 99),
                                                   n=rng.randint(3, 50), k=rng.randint(2, 9), t=rng.randint(150, 250),
                                                   dish=rng.choice(_DISHES))
        out.append((kind, text))
    return out


def specialist_csv(n: int = 240, seed: int = 0) -> bytes:
    """0/1 scores drawn at random: the generalist is right on 70 % of every kind, a specialist on 95 % of its own
    kind and 30 % of the others, so on average the generalist is best (70 % against 52 %)."""
    rng = random.Random(seed + 1)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["prompt"] + [f"{p}/{m}/{kind}" for p, m in MODELS for kind in ("score", "response")])
    for kind, text in specialist_prompts(n, seed):
        rates = [0.7] + [0.95 if k == kind else 0.3 for k in SPECIALISTS]
        writer.writerow([text] + [v for r in rates for v in (int(rng.random() < r), "answer")])
    return buf.getvalue().encode()
