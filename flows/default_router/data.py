"""Loading the public RouteLLM evaluation data and splitting it deterministically.

Each benchmark becomes a `BenchmarkItems`: one routing prompt per item and one outcome per model (0/1 for MMLU and
GSM8K, the GPT-4 judge's 1-10 score averaged over both turns for MT-Bench). Rows RouteLLM marks `contaminated`
are dropped, which reproduces its evaluation sets (14,037 / 1,307 / 72).

Split (documented in datasets/default_router/README.md):
- MMLU and GSM8K: a prompt is held out when sha256(prompt) mod 5 == 0 (about 20 %), the rest train the router.
  Hashing the prompt text (not the row index) keeps a prompt on the same side however the files are re-ordered.
- MT-Bench: never used for training. All 72 clean questions are held out, so MT-Bench measures generalisation to
  open-ended chat that the router has not seen in kind.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

STRONG = "gpt-4-1106-preview"
WEAK = "mistralai/Mixtral-8x7B-Instruct-v0.1"
HELDOUT_MODULUS = 5

csv.field_size_limit(1 << 28)


@dataclass(frozen=True)
class BenchmarkItems:
    name: str
    prompts: list[str]  # the text the router sees (MT-Bench: turn 1 only, as RouteLLM routes)
    strong: np.ndarray  # outcome of gpt-4-1106-preview per item
    weak: np.ndarray  # outcome of Mixtral-8x7B per item
    domains: list[str]
    heldout: np.ndarray  # bool per item
    binary: bool  # True for 0/1 correctness, False for judge scores

    def subset(self, mask: np.ndarray) -> "BenchmarkItems":
        idx = np.flatnonzero(mask)
        return BenchmarkItems(
            name=self.name,
            prompts=[self.prompts[i] for i in idx],
            strong=self.strong[idx],
            weak=self.weak[idx],
            domains=[self.domains[i] for i in idx],
            heldout=self.heldout[idx],
            binary=self.binary,
        )


def fold_of(prompt: str) -> int:
    """A prompt's fifth of the split, from a hash of its text (0 is the held-out fifth)."""
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % HELDOUT_MODULUS


def is_heldout(prompt: str) -> bool:
    return fold_of(prompt) == 0


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _flag(value: str) -> bool:
    return value.strip().lower() == "true"


def load_mmlu(data_dir: Path) -> BenchmarkItems:
    rows = [r for r in _rows(data_dir / "mmlu_responses.csv") if not _flag(r["contaminated"])]
    prompts = [r["prompt"] for r in rows]
    return BenchmarkItems(
        name="mmlu",
        prompts=prompts,
        strong=np.array([_flag(r[STRONG]) for r in rows], dtype=float),
        weak=np.array([_flag(r[WEAK]) for r in rows], dtype=float),
        domains=[r["domain"] for r in rows],
        heldout=np.array([is_heldout(p) for p in prompts]),
        binary=True,
    )


def load_gsm8k(data_dir: Path) -> BenchmarkItems:
    rows = [r for r in _rows(data_dir / "gsm8k_responses.csv") if not _flag(r["contaminated"])]
    prompts = [r["prompt"] for r in rows]
    return BenchmarkItems(
        name="gsm8k",
        prompts=prompts,
        strong=np.array([_flag(r[STRONG]) for r in rows], dtype=float),
        weak=np.array([_flag(r[WEAK]) for r in rows], dtype=float),
        domains=["gsm8k"] * len(rows),
        heldout=np.array([is_heldout(p) for p in prompts]),
        binary=True,
    )


def load_mt_bench(data_dir: Path) -> BenchmarkItems:
    questions = [q for q in _rows(data_dir / "mt_bench_questions.csv") if not _flag(q["contaminated"])]
    scores: dict[tuple[str, str], list[float]] = {}
    for j in _rows(data_dir / "mt_bench_judgements.csv"):
        scores.setdefault((j["question_id"], j["model"]), []).append(float(j["score"]))
    # RouteLLM averages the judge score over all judgement rows of the routed model (both turns).
    strong = [float(np.mean(scores[(q["question_id"], STRONG)])) for q in questions]
    weak = [float(np.mean(scores[(q["question_id"], WEAK)])) for q in questions]
    return BenchmarkItems(
        name="mt_bench",
        prompts=[q["turn1"] for q in questions],
        strong=np.array(strong),
        weak=np.array(weak),
        domains=[q["category"] for q in questions],
        heldout=np.ones(len(questions), dtype=bool),
        binary=False,
    )


def load_all(data_dir: Path) -> dict[str, BenchmarkItems]:
    data_dir = Path(data_dir)
    return {"mmlu": load_mmlu(data_dir), "gsm8k": load_gsm8k(data_dir), "mt_bench": load_mt_bench(data_dir)}
