"""What the router knows about a model it may never have seen: its public per-benchmark figures.

Source: datasets/model_benchmarks.csv, one cited source per figure (data card in datasets/default_router/README.md).
Figures map onto three skill axes, each on the capability scale c = (accuracy % - 80) / 10 that the router uses:
- knowledge: MMLU;
- maths: GSM8K, else MGSM (grade-school maths in eight languages, the same kind of problem);
- code: HumanEval.

Lookup order for a candidate, per axis:
1. the exact (provider, model) rows;
2. the same model id with a date/version suffix removed or added (gpt-4o-2024-08-06 <-> gpt-4o) under any provider,
   and the bare id behind an aggregator-style 'org/model' name (so togetherai's copy of a model finds its figures);
3. knowledge without any figure: a least-squares line of capability on log output price and log context length,
   fitted on the scored models the catalogue prices (stored in the router's artefact). Price is the market's own
   estimate of capability; it is a weak one, which is why it comes last;
4. maths or code without a figure: a line from the model's knowledge, fitted on the models that have both (also
   stored in the artefact), so a model known only by its MMLU still gets a full skill profile.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MMLU_CENTRE = 80.0
MMLU_SCALE = 10.0
AXES = ("knowledge", "maths", "code")
# Which benchmarks give each axis, in order of preference.
AXIS_BENCHMARKS = {"knowledge": ("MMLU",), "maths": ("GSM8K", "MGSM"), "code": ("HumanEval",)}

_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|preview|v\d+(?:\.\d+)*)$")


def to_capability(score: float) -> float:
    return (float(score) - MMLU_CENTRE) / MMLU_SCALE


mmlu_to_capability = to_capability  # the knowledge axis is what "capability" meant before skills


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
        return dict(intercept=self.intercept, per_log_output_price=self.per_log_output_price,
                    per_log_context=self.per_log_context, lower=self.lower, upper=self.upper)


@dataclass(frozen=True)
class FigureRow:
    provider: str
    model: str
    benchmark: str
    score: float
    source_url: str


def read_figures(path: Path) -> list[FigureRow]:
    with path.open(newline="", encoding="utf-8") as f:
        return [FigureRow(_norm(r["provider"]), _norm(r["model"]), r["benchmark"], float(r["score"]), r["source_url"])
                for r in csv.DictReader(f)]


def axis_scores(rows: list[FigureRow]) -> dict[tuple[str, str], dict[str, float]]:
    """(provider, model) -> {axis: capability} from the preferred benchmark of each axis that has a figure."""
    by_model: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        by_model.setdefault((r.provider, r.model), {})[r.benchmark] = r.score
    out: dict[tuple[str, str], dict[str, float]] = {}
    for key, figures in by_model.items():
        axes = {}
        for axis, benchmarks in AXIS_BENCHMARKS.items():
            found = next((figures[b] for b in benchmarks if b in figures), None)
            if found is not None:
                axes[axis] = to_capability(found)
        out[key] = axes
    return out


class CapabilityPrior:
    """Knowledge capability (the IRT's c_m) and the full skill profile of any candidate."""

    def __init__(self, rows: list[FigureRow], fallback: FallbackLine,
                 imputation: dict[str, tuple[float, float]] | None = None):
        self.fallback = fallback
        self.imputation = imputation or {}  # axis -> (intercept, slope) on knowledge
        self._exact = axis_scores(rows)
        by_base: dict[str, dict[str, list[float]]] = {}
        for (_, model), axes in self._exact.items():
            for axis, value in axes.items():
                by_base.setdefault(base_id(model), {}).setdefault(axis, []).append(value)
        # Several snapshots share a base id (gpt-4o-*): their mean is the best guess for an unknown snapshot.
        self._by_base = {k: {a: sum(v) / len(v) for a, v in axes.items()} for k, axes in by_base.items()}
        self._cache: dict[tuple[str, str, float, int | None], tuple[np.ndarray, str]] = {}

    def lookup(self, provider: str, model: str, output_price: float, context_length: int | None) -> tuple[float, str]:
        """(knowledge capability, how it was found: 'prior' | 'family' | 'fallback')."""
        skills, how = self.skills(provider, model, output_price, context_length)
        return float(skills[0]), how

    def skills(self, provider: str, model: str, output_price: float,
               context_length: int | None) -> tuple[np.ndarray, str]:
        """(capability per axis of AXES, how knowledge was found)."""
        key = (_norm(provider), _norm(model), float(output_price), context_length)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        exact = self._exact.get((key[0], key[1]), {})
        family = self._by_base.get(base_id(model), {})
        if "knowledge" in exact:
            knowledge, how = exact["knowledge"], "prior"
        elif "knowledge" in family:
            knowledge, how = family["knowledge"], "family"
        else:
            knowledge, how = self.fallback.predict(output_price, context_length), "fallback"
        values = [knowledge]
        for axis in AXES[1:]:
            found = exact.get(axis, family.get(axis))
            if found is None:
                intercept, slope = self.imputation.get(axis, (0.0, 1.0))
                found = intercept + slope * knowledge
            values.append(found)
        result = (np.array(values), how)
        if len(self._cache) < 100_000:  # custom models are caller-defined: keep memory bounded
            self._cache[key] = result
        return result
