"""Models of the shared evaluation data, played by their real per-question outcomes on the calibration suite's
benchmarks (datasets/calibration/): asked a suite question, a played model gives the right answer where it really
answered it right, a wrong one where it did not, and refuses (None) where the data has no result of it (RouterDC's
files carry no answer keys, so they play no part). Used by the onboarding tests (tests/flows/test_onboard_model.py)
and benchmarks/onboarding_pool.py; `players` plugs them into the fake OpenAI server (tests/support/fakes/)."""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from flows.model_figures.build_suite import SHARED, SOURCES
from flows.model_figures.suite import Item, load_suite

FIRST_MODEL_COLUMN = {"MMLU-Pro": 6, "MATH-L5": 3, "CRUX": 3}


def canonical(name: str) -> str:
    """One spelling per model across the files (MMLU-Pro writes Meta-Llama-3_1-70B-Instruct, ZeroEval
    Meta-Llama-3.1-70B-Instruct)."""
    return name.replace("_", ".")


@lru_cache(maxsize=1)
def outcomes(shared: Path = SHARED) -> dict[str, dict[str, dict[str, int]]]:
    """model -> item id ('<benchmark>:<source id>') -> 0/1, for every row of the three source files."""
    csv.field_size_limit(sys.maxsize)
    found: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for benchmark, (name, id_column) in SOURCES.items():
        with (shared / name).open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader)
            models = header[FIRST_MODEL_COLUMN[benchmark]:]
            id_at = header.index(id_column)
            for row in reader:
                item_id = f"{benchmark}:{row[id_at]}"
                for model, cell in zip(models, row[FIRST_MODEL_COLUMN[benchmark]:]):
                    if cell.strip() != "":
                        found[canonical(model)].setdefault(benchmark, {})[item_id] = int(float(cell))
    return dict(found)


def true_accuracy(model: str, benchmark: str, exclude: frozenset[str] = frozenset()) -> float | None:
    """The model's accuracy over every question of the benchmark's file it has a result for (its figure)."""
    rows = {k: v for k, v in outcomes()[model].get(benchmark, {}).items() if k not in exclude}
    return sum(rows.values()) / len(rows) if rows else None


def reply(model: str, item: Item) -> str | None:
    """What the model answers to a suite item: right, wrong, or None where the data has no result of it."""
    outcome = outcomes()[model].get(item.benchmark, {}).get(item.item_id)
    if outcome is None:
        return None
    if item.benchmark == "MMLU-Pro":
        letter = item.answer.strip().upper()
        given = letter if outcome else "ABCDEFGHIJ"[("ABCDEFGHIJ".index(letter) + 1) % 4]
        return f"Let me think step by step.\nThe answer is ({given})."
    given = item.answer if outcome else ("987654321.5" if item.benchmark == "MATH-L5" else "'not-the-answer'")
    return f"Working it out.\nAnswer: {given}"


@lru_cache(maxsize=1)
def _by_prompt() -> dict[str, Item]:
    return {item.prompt: item for item in load_suite()}


def player(model: str):
    """A (system, user) -> reply function for the fake OpenAI server's `players`."""
    def play(system: str, user: str) -> str | None:
        item = _by_prompt().get(user)
        return None if item is None else reply(model, item)

    return play
