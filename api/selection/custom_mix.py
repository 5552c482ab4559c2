"""Scoring a request's candidates with a preference's custom router, and the rest as the default router would.

A custom router knows only the models it was trained on. For a request whose candidates it knows only partly:
- known candidates get the custom router's quality (calibrated on the team's own scores);
- unknown candidates get the default router's quality moved onto the custom scale by the known candidates:
      logit q_u = logit q_default(u) + mean over known k of (logit q_custom(k) - logit q_default(k)),
  i.e. an unknown model is predicted to stand as far above or below the known ones as the default router says it
  does, anchored where the custom router puts the known ones. With no known candidate the default router decides
  alone (quality and schedule), as if the preference had no custom router.
- the trade-off schedule is the custom router's (calibrated on its training data) whenever it scores any candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from api.routing.features import QueryFeatures
from api.routing.router import Candidate

_EPS = 1e-4


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EPS, 1 - _EPS)
    return np.log(p / (1 - p))


def mixed_quality(custom: Any, default: Any, features: QueryFeatures, candidates: Sequence[Candidate],
                  text: str) -> tuple[np.ndarray, Any, str]:
    """(quality per candidate, the router whose schedule applies, a name for the session log)."""
    known = custom.known(candidates)
    if not known.any():
        return default.predict_quality(features, candidates), default, f"{default.name} ({custom.name} knows none)"
    q = custom.predict_quality(features, candidates, text=text)
    if known.all():
        return q, custom, custom.name
    base = default.predict_quality(features, candidates)
    shift = float(np.mean(_logit(q[known]) - _logit(base[known])))
    out = q.copy()
    out[~known] = 1.0 / (1.0 + np.exp(-(_logit(base[~known]) + shift)))
    return out, custom, f"{custom.name}+{default.name}"
