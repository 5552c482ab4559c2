"""A tiny RouteLLM-shaped data folder (MMLU, GSM8K, MT-Bench CSVs) for training tests that must run in seconds."""

from __future__ import annotations

import csv
import random

from flows.default_router.data import STRONG, WEAK


def _write(path, header, rows):
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def tiny_routellm(folder):
    rng = random.Random(0)
    subjects = ["algebra", "history", "law", "biology"]
    mmlu = []
    for i in range(160):
        s = subjects[i % 4]
        prompt = f"Question {i} about {s}: which option is right?\nA. one\nB. two\nC. three\nD. four\nAnswer:"
        hard = s in ("law", "algebra")
        strong = rng.random() < (0.7 if hard else 0.9)
        weak = rng.random() < (0.4 if hard else 0.85)
        mmlu.append([s, prompt, strong, weak, i == 0])
    _write(folder / "mmlu_responses.csv", ["domain", "prompt", STRONG, WEAK, "contaminated"], mmlu)
    gsm = []
    for i in range(60):
        steps = 1 + i % 5
        prompt = f"Tom has {i} apples and buys {steps} bags of {i + 3} apples. " * steps + "How many apples now?"
        gsm.append([prompt, rng.random() < 0.8 - 0.1 * steps, rng.random() < 0.9, "r", "r", False])
    _write(folder / "gsm8k_responses.csv", ["prompt", WEAK, STRONG, WEAK + "_response", STRONG + "_response",
                                            "contaminated"], gsm)
    questions, judgements = [], []
    for q in range(10):
        questions.append([q, "writing" if q % 2 else "math", f"Write item {q}", "Now shorter.", "", False])
        for turn in (1, 2):
            judgements.append([q, turn, STRONG, 9.0, "gpt-4", 0, "a", False])
            judgements.append([q, turn, WEAK, 8.0 if q % 2 else 5.0, "gpt-4", 0, "a", False])
    _write(folder / "mt_bench_questions.csv", ["question_id", "category", "turn1", "turn2", "reference",
                                               "contaminated"], questions)
    _write(folder / "mt_bench_judgements.csv", ["question_id", "turn", "model", "score", "judge", "tstamp",
                                                "answer", "contaminated"], judgements)
