"""The e5 teacher spreads over worker processes at training time (the native model gains nothing from a second
thread); the vectors are the ones one process computes."""

from __future__ import annotations

import numpy as np

from flows.custom_router.teacher import E5Model
from tests.support.processes import alive


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
        spread.close_workers()
    assert spread._pool is None


def test_workers_end_with_their_parent(tmp_path):
    """A flow run killed while embedding (cancelled, crashed) leaves no e5 worker behind."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    script = tmp_path / "embed_then_wait.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from flows.custom_router.teacher import E5Model\n"
        "if __name__ == '__main__':\n"
        "    m = E5Model(processes=2)\n"
        "    m.embed([f'text {i}' for i in range(200)])\n"
        "    print(' '.join(str(p) for p in m._pool._processes), flush=True)\n"
        "    time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(alive(p) for p in workers)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(p) for p in workers)
    finally:
        parent.kill()

