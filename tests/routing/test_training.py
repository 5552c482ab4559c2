"""The training entry point the `train-default-router` flow calls: runs on small data, is deterministic, and its
artefact loads in the serving code."""

import csv
import random
import shutil

from api.routing.default_router import DEFAULT_ARTEFACT_DIR, load_default_router
from flows.default_router.data import STRONG, WEAK
from flows.default_router.train import train_default_router


def _write(path, header, rows):
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _tiny_routellm(folder):
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


def test_train_is_deterministic_and_loads(tmp_path):
    data = tmp_path / "routellm"
    data.mkdir()
    _tiny_routellm(data)
    out = tmp_path / "artefact"
    out.mkdir()
    for name in ("encoder.json", "static_embedding.npy", "tokenizer.json"):
        shutil.copy(DEFAULT_ARTEFACT_DIR / name, out / name)

    first = train_default_router(data, out, seed=0)
    text = (out / "router.json").read_bytes()
    second = train_default_router(data, out, seed=0)
    assert (out / "router.json").read_bytes() == text
    assert first.router_json_sha256 == second.router_json_sha256
    assert set(first.heldout) == {"mmlu", "gsm8k", "mt_bench"}
    assert first.train_rows > 100
    schedule = first.schedule
    assert len(schedule) == 10 and schedule[0] == 0 and schedule == sorted(schedule)

    router = load_default_router(out)
    f = router.featurizer.featurize("Question about law: which option?\nA. x\nB. y\nC. z\nD. w\nAnswer:")
    from api.routing.router import Candidate

    q = router.predict_quality(f, [Candidate("openai", "gpt-4-1106-preview", 10, 30, 128000),
                                   Candidate("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1", 0.6, 0.6, 32768)])
    assert q[0] > q[1]
