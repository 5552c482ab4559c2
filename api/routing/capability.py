"""Capability prior: one number per model saying how strong it is, so the router can score models it never saw.

Source: datasets/capability_prior.csv, public MMLU figures with a URL per row (data card in
datasets/default_router/README.md). The IRT router works on the scale  c = (MMLU% - 80) / 10.

Lookup order for a candidate:
1. the exact (provider, model) row;
2. the same model id with a date/version suffix removed or added (gpt-4o-2024-08-06 <-> gpt-4o) under any provider,
   and the bare id behind an aggregator-style 'org/model' name (so togetherai's copy of a model finds its score);
3. the fallback: a least-squares line of capability on log output price and log context length, fitted on the
   scored models that the catalogue prices (coefficients stored in the default router's artefact). Price is the
   market's own estimate of capability; it is a weak one, which is why it comes last.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

MMLU_CENTRE = 80.0
MMLU_SCALE = 10.0

_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|preview|v\d+(?:\.\d+)*)$")


def mmlu_to_capability(score: float) -> float:
    return (float(score) - MMLU_CENTRE) / MMLU_SCALE


def _norm(s: str) -> str:
    return s.strip().lower()


def base_id(model: str) -> str:
    """Model id without provider prefix and trailing date/version tags: 'openai/gpt-4o-2024-08-06' -> 'gpt-4o'."""
    m = _norm(model).rsplit("/", 1)[-1]
    while True:
        stripped = _DATE_SUFFIX.sub("", m)
        if stripped == m:
            return m
        m = stripped


@dataclass(frozen=True)
class FallbackLine:
    """capability = intercept + per_log_output_price * ln(output $/M) + per_log_context * ln(context tokens)."""

    intercept: float
    per_log_output_price: float
    per_log_context: float
    lower: float  # clamp to the range seen when fitting: a line extrapolates badly
    upper: float

    def predict(self, output_price: float, context_length: int | None) -> float:
        lp = math.log(max(output_price, 0.01))
        lc = math.log(max(context_length or 8192, 1024))
        value = self.intercept + self.per_log_output_price * lp + self.per_log_context * lc
        return min(self.upper, max(self.lower, value))

    def as_dict(self) -> dict[str, float]:
        return dict(
            intercept=self.intercept,
            per_log_output_price=self.per_log_output_price,
            per_log_context=self.per_log_context,
            lower=self.lower,
            upper=self.upper,
        )


@dataclass(frozen=True)
class PriorRow:
    provider: str
    model: str
    score: float
    source_url: str


def read_prior(path: Path) -> list[PriorRow]:
    with path.open(newline="", encoding="utf-8") as f:
        return [
            PriorRow(_norm(r["provider"]), _norm(r["model"]), float(r["score"]), r["source_url"])
            for r in csv.DictReader(f)
        ]


class CapabilityPrior:
    def __init__(self, rows: list[PriorRow], fallback: FallbackLine):
        self.fallback = fallback
        self._exact = {(r.provider, r.model): mmlu_to_capability(r.score) for r in rows}
        by_base: dict[str, list[float]] = {}
        for r in rows:
            by_base.setdefault(base_id(r.model), []).append(mmlu_to_capability(r.score))
        # Several snapshots share a base id (gpt-4o-*): their mean is the best guess for an unknown snapshot.
        self._by_base = {k: sum(v) / len(v) for k, v in by_base.items()}
        self._cache: dict[tuple[str, str, float, int | None], tuple[float, str]] = {}

    def lookup(
        self, provider: str, model: str, output_price: float, context_length: int | None
    ) -> tuple[float, str]:
        """(capability, how it was found: 'prior' | 'family' | 'fallback')."""
        key = (_norm(provider), _norm(model), float(output_price), context_length)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        exact = self._exact.get((key[0], key[1]))
        if exact is not None:
            result = (exact, "prior")
        else:
            family = self._by_base.get(base_id(model))
            if family is not None:
                result = (family, "family")
            else:
                result = (self.fallback.predict(output_price, context_length), "fallback")
        if len(self._cache) < 100_000:
            self._cache[key] = result
        return result
