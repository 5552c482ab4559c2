"""Running the `train-default-router` flow in a child process under a chosen BLAS and SIMD configuration, to prove
that what the flow calls "reproduces" (flows/default_router/reproduction.py) holds whatever the floating point.

    python -m tests.support.blas_configurations <artefact dir> <data dir> <result.json>

The child runs the flow against the Prefect server named by PREFECT_API_URL and writes the flow's result, the BLAS
libraries it ran with and a fingerprint of a few floating-point kernels (to show that two configurations round
differently) to result.json.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

from flows.train_default_router import train_default_router_flow

# Each configuration forces kernels other than this machine's native ones, the same code on any x86-64 CPU with
# AVX2: OpenBLAS's kernel family (OPENBLAS_CORETYPE) and the widest SIMD numpy's own loops (exp, tanh, sums) may
# use (NPY_DISABLE_CPU_FEATURES; naming a feature a CPU lacks is harmless). Training pins one BLAS thread itself;
# the thread counts differ for everything around it (featurising, evaluation, the probe set).
AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"
CONFIGURATIONS = {
    "haswell-1-thread-numpy-avx2": {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1",
                                    "NPY_DISABLE_CPU_FEATURES": AVX512},
    "sandybridge-2-threads-numpy-baseline": {"OPENBLAS_CORETYPE": "SandyBridge", "OPENBLAS_NUM_THREADS": "2",
                                             "NPY_DISABLE_CPU_FEATURES": f"{AVX512} X86_V3"},
}


def fingerprint() -> str:
    """A digest of BLAS products and numpy transcendentals on fixed inputs: differs between configurations that
    round differently."""
    x = np.random.default_rng(0).normal(size=(3000, 141))
    parts = [x @ x[0], x.T @ x[:, :3], np.tanh(x), np.exp(x[:, :20])]
    return hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest()[:16]


def main(artefact_dir: str, data_dir: str, result_path: str) -> None:
    # The familiarity floor (four more trainings) is learned and checked by the flow's other test; this one is
    # about router.json, and keeps the committed floor.
    result = train_default_router_flow(data_dir=data_dir, artefact_dir=artefact_dir, publish=True,
                                       learn_familiarity=False)
    Path(result_path).write_text(json.dumps({
        "result": result, "fingerprint": fingerprint(),
        "blas": sorted({f"{i['internal_api']}:{i.get('architecture')}" for i in threadpool_info()}),
    }), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:4])
