"""Build datasets/calibration/suite.jsonl from the shared evaluation data (data card: datasets/calibration/README.md):
`python -m flows.model_figures.build_suite [--per-benchmark 100]`. Deterministic (a fixed seed): the same data
gives the same suite. Only benchmark files whose per-question results are public and whose answers can be graded
automatically: MMLU-Pro's non-MMLU questions (no revised items), ZeroEval's MATH level 5 and CRUX. RouterDC's train
files carry no answer keys (only each model's score), so they cannot be graded; its test and OOD files are never
read."""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
SEED = 20261127
SOURCES = {  # benchmark -> (file, id column)
    "MMLU-Pro": ("mmlu_pro/mmlu_pro_nonmmlu.csv", "question_id"),
    "MATH-L5": ("zeroeval/math_l5.csv", "id"),
    "CRUX": ("zeroeval/crux.csv", "id"),
}


def sample(shared: Path, per_benchmark: int) -> dict[str, list[dict]]:
    csv.field_size_limit(sys.maxsize)
    rng = random.Random(SEED)
    out = {}
    for benchmark, (name, id_column) in SOURCES.items():
        with (shared / name).open(newline="", encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if r.get("revised", "0") in ("0", "")]
        picked = sorted(rng.sample(range(len(rows)), per_benchmark))
        out[benchmark] = [{"id": f"{benchmark}:{rows[i][id_column]}", "benchmark": benchmark,
                           "prompt": rows[i]["prompt"], "answer": rows[i]["answer"]} for i in picked]
    return out


def interleave(by_benchmark: dict[str, list[dict]]) -> list[dict]:
    """knowledge, maths, code, knowledge, ...: a run cut short by its cap has asked every benchmark alike."""
    rng = random.Random(SEED + 1)
    queues = {b: rng.sample(items, len(items)) for b, items in by_benchmark.items()}
    out = []
    while any(queues.values()):
        for benchmark in SOURCES:
            if queues[benchmark]:
                out.append(queues[benchmark].pop())
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--per-benchmark", type=int, default=100)
    parser.add_argument("--out", type=Path, default=REPO / "datasets" / "calibration" / "suite.jsonl")
    args = parser.parse_args(argv)
    items = interleave(sample(args.shared, args.per_benchmark))
    with args.out.open("w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(items)} items -> {args.out}")


if __name__ == "__main__":
    main()
