"""The one rule both familiarity floors learn their threshold by (flows/custom_router/familiarity.py,
flows/default_router/familiarity.py): a fallback for unfamiliar prompts is kept only if it gains on the kinds of
prompt left out of training by more than SIGNIFICANCE standard errors of its per-kind gains. The kinds, not the
rows, are the sample an unseen kind comes from: a gain on one kind alone (RouterDC without GSM8K: +3.2 points on one
k-means kind) cost 20 points on the real unseen one (docs/benchmarks.md, "custom routers: prompts unlike the upload")."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SIGNIFICANCE = 2.0  # standard errors over the kinds left out (about a one-sided 95 % test with 5 kinds)


def holds_across_kinds(gains: Sequence[float]) -> bool:
    """Whether per-kind gains over routing without a fallback are significantly positive; never with one kind."""
    values = np.asarray(gains, dtype=float)
    if len(values) < 2:
        return False
    return float(values.mean()) > SIGNIFICANCE * float(values.std(ddof=1)) / np.sqrt(len(values))
