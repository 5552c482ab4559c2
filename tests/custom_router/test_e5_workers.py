"""Training spreads e5 over worker processes (the native model gains nothing from a second thread); the vectors are
the ones the serving process computes itself."""

from __future__ import annotations

import numpy as np

from api.custom_router.encoders import E5Model


def test_worker_processes_give_the_vectors_of_one_process_in_order():
    texts = [f"Question {i}: what is {i} + {i * 7}? Explain step by step." for i in range(140)]
    here = E5Model(processes=1)
    spread = E5Model(processes=2)
    try:
        alone = here.embed(texts)
        split = spread.embed(texts)  # 140 >= 4 batches of 32: split over the 2 workers
        assert spread._pool is not None and here._pool is None
        np.testing.assert_array_equal(split, alone)
        np.testing.assert_array_equal(spread.embed(texts[:5]), alone[:5])  # small inputs stay in-process
    finally:
        if spread._pool is not None:
            spread._pool.shutdown()
