"""The Router interface: score every candidate model for one query.

A router only predicts quality (the probability that the model answers this query well, 0..1). Turning quality,
price and latency into one choice is the policy's job (api.routing.policy), so the same decision rule serves the
default router, custom routers and personalised ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np

from api.routing.features import QueryFeatures


@dataclass(frozen=True)
class Candidate:
    """One eligible model, with what the policy needs to know about it.

    Prices are USD per million tokens, as in the catalogue. `latency_s` is the caller's figure for custom models
    (None for catalogue models: the catalogue carries none). `context_length` is informational here: eligibility
    (context window, tools) is decided before routing.
    """

    provider: str
    model: str
    input_price: float
    output_price: float
    context_length: int | None = None
    latency_s: float | None = None
    supports_function_calling: bool | None = None

    @cached_property  # read several times a decision; candidate lists are memoised (api/selection/candidates.py)
    def key(self) -> str:
        return f"{self.provider}/{self.model}"


@runtime_checkable
class Router(Protocol):
    """Anything that predicts per-candidate quality for a query."""

    def predict_quality(self, features: QueryFeatures, candidates: Sequence[Candidate]) -> np.ndarray:
        """float array aligned with `candidates`: P(the model answers this query well), in [0, 1]."""
        ...
