"""Per-query outcomes of several models on one benchmark, from every public source the default router trains or
is measured on, in one shape: prompts × models, scores in 0..1 (NaN where a model was not run).

- RouteLLM (../shared/data/routellm): gpt-4-1106-preview and Mixtral-8x7B on MMLU, GSM8K (0/1) and MT-Bench (the
  GPT-4 judge's 1-10 score, rescaled to 0..1); flows/default_router/data.py reads the files.
- RouterDC (../shared/data/routerdc, github.com/shuhao02/RouterDC at 0e63989): 7 open 7-8B models on the training
  splits of MMLU, GSM8K, CMMLU, ARC-Challenge and HumanEval (0/1, or a probability / pass rate).
- AlpacaEval (../shared/data/alpaca_eval): 58 models' win probability against gpt4_1106_preview's answers, judged
  by GPT-4 Turbo (measure only: CC BY-NC).

The split is the router's: a prompt is held out when fold_of(prompt) == 0 (flows/default_router/data.py). A
question that two sources carry keeps one side: 1,416 of RouterDC's MMLU questions are RouteLLM MMLU questions
formatted without the trailing "Answer:", and they take the RouteLLM prompt's fold, so the 7 models' outcomes on
a question held out of the pair's training never train the router either.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from flows.default_router.data import STRONG, WEAK, fold_of, load_all

ROUTERDC_FILES = {"mmlu": "mmlu_train.json", "gsm8k": "gsm8k-train.json", "cmmlu": "cmmlu_train.json",
                  "arc": "arc_challenge_train.json", "humaneval": "humaneval_train.json"}
ROUTERDC_MODELS = ("mistralai/Mistral-7B-v0.1", "meta-math/MetaMath-Mistral-7B", "itpossible/Chinese-Mistral-7B-v0.1",
                   "HuggingFaceH4/zephyr-7b-beta", "cognitivecomputations/dolphin-2.6-mistral-7b",
                   "meta-llama/Meta-Llama-3-8B", "cognitivecomputations/dolphin-2.9-llama3-8b")
# Licences (data cards): CMMLU is CC BY-NC-SA and AlpacaEval CC BY-NC: measured, never in a shipped artefact.
SHIPPABLE = {"routellm/mmlu", "routellm/gsm8k", "routerdc/mmlu", "routerdc/gsm8k", "routerdc/arc",
             "routerdc/humaneval"}


@dataclass(frozen=True)
class Outcomes:
    source: str  # "routellm" | "routerdc" | "alpaca_eval"
    name: str  # the benchmark
    prompts: list[str]
    models: tuple[str, ...]
    scores: np.ndarray  # (prompts, models) in 0..1, NaN where unknown
    folds: np.ndarray = field(default=None)  # type: ignore[assignment]  # fold of each prompt; default fold_of

    def __post_init__(self) -> None:
        if self.folds is None:
            object.__setattr__(self, "folds", np.array([fold_of(p) for p in self.prompts], dtype=np.int64))

    @property
    def key(self) -> str:
        return f"{self.source}/{self.name}"

    @property
    def heldout(self) -> np.ndarray:
        return self.folds == 0

    def in_folds(self, folds: set[int]) -> np.ndarray:
        return np.isin(self.folds, sorted(folds))

    def subset(self, mask: np.ndarray) -> "Outcomes":
        idx = np.flatnonzero(mask)
        return Outcomes(self.source, self.name, [self.prompts[i] for i in idx], self.models, self.scores[idx],
                        self.folds[idx])


_SPACES = re.compile(r"\s+")


def question_key(prompt: str) -> str:
    """The same question under two sources' formatting: case, spacing and a trailing 'Answer:' cue ignored."""
    text = _SPACES.sub(" ", prompt).strip().lower()
    return text.removesuffix("answer:").strip()


def routellm(data_dir: Path) -> list[Outcomes]:
    out = []
    for name, items in load_all(data_dir).items():
        scores = np.stack([items.strong, items.weak], axis=1)
        if not items.binary:
            scores = (scores - 1.0) / 9.0  # the judge's 1..10 onto 0..1
        out.append(Outcomes("routellm", name, list(items.prompts), (STRONG, WEAK), scores.astype(np.float64)))
    return out


def routerdc(data_dir: Path, known_folds: dict[str, int] | None = None) -> list[Outcomes]:
    """known_folds: question_key -> fold of questions another source already split (see the module's note)."""
    known = known_folds or {}
    out = []
    for name, file in ROUTERDC_FILES.items():
        rows = json.loads((Path(data_dir) / file).read_text(encoding="utf-8"))
        prompts = [r["question"] for r in rows]
        scores = np.array([[float(r["scores"].get(m, np.nan)) for m in ROUTERDC_MODELS] for r in rows])
        folds = np.array([known.get(question_key(p), fold_of(p)) for p in prompts], dtype=np.int64)
        out.append(Outcomes("routerdc", name, prompts, ROUTERDC_MODELS, scores, folds))
    return out


def split_keys(sets: list[Outcomes]) -> dict[str, int]:
    """question_key -> fold of every prompt of these sets."""
    return {question_key(p): int(f) for o in sets for p, f in zip(o.prompts, o.folds)}


def alpaca_eval(data_dir: Path) -> Outcomes:
    """Win probability of each model's answer against gpt4_1106_preview's, per instruction."""
    data_dir = Path(data_dir)
    with (data_dir / "instructions.csv").open(newline="", encoding="utf-8") as f:
        instructions = {r["instruction_id"]: r["instruction"] for r in csv.DictReader(f)}
    by_pair: dict[tuple[str, str], float] = {}
    models: dict[str, None] = {}
    with (data_dir / "weighted_gpt4turbo_preferences_long.csv").open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["model"] in ("NullModel", "gpt4_gamed"):  # deliberate judge exploits (data card)
                continue
            by_pair[(r["instruction_id"], r["model"])] = float(r["preference"]) - 1.0  # [1, 2] -> win probability
            models.setdefault(r["model"])
    ids = sorted(instructions)
    names = tuple(models)
    scores = np.array([[by_pair.get((i, m), np.nan) for m in names] for i in ids])
    return Outcomes("alpaca_eval", "alpaca_eval", [instructions[i] for i in ids], names, scores)
