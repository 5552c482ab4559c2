"""Whether a rebuilt encoder file (encoder.json, static_embedding.npy) reproduces a committed one. The rebuild is
deterministic on one machine, but another CPU's floating point (other SIMD paths in BLAS and numpy) moves numbers
in the last digits, so files are compared by meaning: JSON structure and text exactly, numbers within a relative
tolerance, arrays with numpy's allclose. The router itself (router.json) is compared by what it decides:
flows/default_router/reproduction.py."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

RTOL, ATOL = 1e-4, 1e-6  # far above the 1e-6-level drift seen across CPUs, far below any change that matters


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        both_nan = math.isnan(a) and math.isnan(b)  # an undefined metric (e.g. APGR on tiny data) stays undefined
        return both_nan or math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def equivalent(a: Path, b: Path) -> bool:
    if not a.exists() or not b.exists():
        return False
    if a.suffix == ".json":
        return _close(json.loads(a.read_text(encoding="utf-8")), json.loads(b.read_text(encoding="utf-8")))
    if a.suffix == ".npy":
        x, y = np.load(a), np.load(b)
        return x.shape == y.shape and x.dtype == y.dtype and bool(np.allclose(x, y, rtol=RTOL, atol=ATOL,
                                                                              equal_nan=True))
    return a.read_bytes() == b.read_bytes()
