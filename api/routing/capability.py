"""What the router knows about a model it may never have seen: its public per-benchmark figures.

Source: datasets/model_benchmarks.csv, one cited source per figure (data card in datasets/default_router/README.md).
Figures map onto three skill axes, each on the capability scale c = (accuracy % - 80) / 10 that the router uses:
- knowledge: MMLU; MMLU-Redux, MMLU-Pro, GPQA;
- maths: GSM8K, else MGSM (grade-school maths in eight languages); GSM8K-0shot (ZeroEval's zero-shot run), MATH,
  MATH-L5;
- code: HumanEval; CRUX (CRUXEval output prediction).
The axis' own benchmarks (first) are on the scale directly; each later one (a proxy) maps onto the axis by a
least-squares line fitted, when the figures load, on the models that have both it and the axis from the benchmarks
before it. A model's value on an axis is the mean of its own figure and its mapped proxies: one benchmark saturates
where another still separates models (every frontier model scores about 90 % on GSM8K and MGSM, 60-97 % on MATH).

Lookup of a candidate, per axis, the first that answers:
1. the exact (provider, model) rows;
2. the same name spelt otherwise, then another snapshot, then the base/chat sibling (api/routing/model_names.py
   levels), under any provider; several rows at one level are averaged;
3. maths or code with nothing found: a line from the model's knowledge, fitted on the models that have both
   (stored in the router's artefact), so a model known only by its MMLU still gets a full skill profile;
4. nothing at all: the uncertain prior, the UNCERTAIN_QUANTILE quantile of the known models' capability on that
   axis. Neither price nor size enters: an unknown model is assumed weaker than most known ones, so at
   cost_quality_tradeoff 0 a model with good published figures is preferred, until feedback or the caller's
   custom router says otherwise.
Each estimate carries its uncertainty, measured on the figures themselves: a figure borrowed from another snapshot
or from the base/chat sibling is off by the spread between such pairs in the figures file (level_sd), an imputed
one by its line's residual (imputation_sd). The profile is the lower bound, estimate - UNCERTAINTY_Z x that spread,
so at the quality end of the dial a model measured under its own name beats a look-alike with the same figures, and
a model the router trained on (measured under its own name) keeps its figures. UNCERTAINTY_Z = 0.5 was chosen on
half of the unseen pools of benchmarks/default_router_unseen_pools.py (docs/benchmarks.md, issue 21, uncertainty).
The source of a profile ('prior': exact or respelt; 'family': another snapshot or sibling; 'uncertain': nothing) is
what explain() reports.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from api.routing import model_names

MMLU_CENTRE = 80.0
MMLU_SCALE = 10.0
AXES = ("knowledge", "maths", "code")
# Which benchmarks give each axis, in order of preference.
AXIS_BENCHMARKS = {"knowledge": ("MMLU",), "maths": ("GSM8K", "MGSM"), "code": ("HumanEval",)}
# Other benchmarks, mapped onto an axis by a fitted line, in order of preference (module docstring).
PROXY_BENCHMARKS = {"knowledge": ("MMLU-Redux", "MMLU-Pro", "GPQA", "ECI"),
                    "maths": ("GSM8K-0shot", "MATH", "MATH-L5", "OTIS-Mock-AIME", "AIME-2024", "AIME-2025"),
                    "code": ("CRUX", "SWE-bench-Verified", "Aider-Polyglot", "LiveCodeBench")}
MIN_LINE_POINTS = 4
# The uncertain prior of an axis: this quantile of the known models' capabilities. Pessimistic on purpose: a model
# nobody measured should not displace one with good published figures at the quality end of the dial.
UNCERTAIN_QUANTILE = 0.25
# How many standard deviations of its uncertainty a profile found by a looser match (another snapshot, the base/chat
# sibling) or imputed from knowledge gives up: a lower confidence bound (module docstring).
UNCERTAINTY_Z = 0.5


def to_capability(score: float) -> float:
    return (float(score) - MMLU_CENTRE) / MMLU_SCALE


mmlu_to_capability = to_capability  # the knowledge axis is what "capability" meant before skills


def _norm(s: str) -> str:
    return s.strip().lower()


@dataclass(frozen=True)
class FallbackLine:
    """capability = intercept + per_log_output_price * ln(output $/M) + per_log_context * ln(context tokens): the
    price line earlier routers gave models without figures, still recorded by training (flows/default_router/
    figures.py) for comparison; no lookup uses it."""

    intercept: float
    per_log_output_price: float
    per_log_context: float
    lower: float  # clamp to the range seen when fitting: a line extrapolates badly
    upper: float

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
    """Knowledge capability (the IRT's c_m) and the full skill profile of any candidate.

    `fallback` is the price line earlier routers used for models without figures; training still records it in
    the artefact, nothing here consults it: price and size are no evidence of skill."""

    def __init__(self, rows: list[FigureRow], fallback: FallbackLine | None = None,
                 imputation: dict[str, tuple[float, float]] | None = None):
        self.fallback = fallback
        self.imputation = imputation or {}  # axis -> (intercept, slope) on knowledge
        self._exact = _figures_by(rows, lambda r: (r.provider, r.model))
        self._levels = [_figures_by(rows, lambda r, level=level: model_names.key(r.model, level))
                        for level in model_names.LEVELS]
        by_spelling = self._levels[model_names.LEVELS.index(model_names.SPELLING)]  # one entry per model
        self.lines = fit_proxy_lines(by_spelling)
        known = [self._axes_of(figures) for figures in by_spelling.values()]
        # Standard deviation (capability units) of a figure borrowed at each matching level, and of each
        # imputation line's residual, measured on the figures themselves.
        self.level_sd = {level: _borrowed_sd(rows, level) for level in model_names.LEVELS[1:]}
        self.imputation_sd = {axis: _residual_sd(known, line, axis) for axis, line in self.imputation.items()}
        self.uncertain = np.array([
            _quantile([k[a] for k in known if a in k], UNCERTAIN_QUANTILE) if any(a in k for k in known)
            else to_capability(MMLU_CENTRE) for a in AXES])
        self._cache: dict[tuple[str, str], tuple[np.ndarray, str, tuple[str, ...], np.ndarray]] = {}

    def _axes_of(self, figures: dict[str, float]) -> dict[str, float]:
        return axes_from(figures, self.lines)

    def lookup(self, provider: str, model: str, output_price: float | None = None,
               context_length: int | None = None) -> tuple[float, str]:
        """(knowledge capability, where it came from: 'prior' | 'family' | 'uncertain')."""
        skills, how, *_ = self.profile(provider, model)
        return float(skills[0]), how

    def skills(self, provider: str, model: str, output_price: float | None = None,
               context_length: int | None = None) -> tuple[np.ndarray, str]:
        """(capability per axis of AXES, where knowledge came from). Price and context are accepted for callers
        that pass a candidate's fields and ignored."""
        skills, how, *_ = self.profile(provider, model)
        return skills, how

    def profile(self, provider: str, model: str) -> tuple[np.ndarray, str, tuple[str, ...], np.ndarray]:
        """(capability per axis, source of knowledge, source per axis, uncertainty per axis) with sources 'prior' |
        'family' | 'imputed' (maths/code from knowledge) | 'uncertain'. The capability is the lower bound,
        estimate - UNCERTAINTY_Z x uncertainty (module docstring); the uncertainty is 0 for a model's own figures
        and for the uncertain prior (already a low quantile)."""
        cache_key = (_norm(provider), _norm(model))
        hit = self._cache.get(cache_key)
        if hit is not None:
            return hit
        candidates = [("prior", 0.0, self._axes_of(self._exact.get(cache_key, {})))]
        for level, index in zip(model_names.LEVELS, self._levels):
            name_key = model_names.key(model, level)
            if name_key:
                candidates.append(("prior" if level == model_names.SPELLING else "family",
                                   self.level_sd.get(level, 0.0), self._axes_of(index.get(name_key, {}))))
        values, sources, sds = [], [], []
        for axis in AXES:
            found = next(((axes[axis], how, sd) for how, sd, axes in candidates if axis in axes), None)
            if found is None and axis != AXES[0] and sources[0] != "uncertain":
                intercept, slope = self.imputation.get(axis, (0.0, 1.0))
                found = (intercept + slope * values[0], "imputed", self.imputation_sd.get(axis, 0.0))
            if found is None:
                found = (float(self.uncertain[AXES.index(axis)]), "uncertain", 0.0)
            values.append(found[0] - UNCERTAINTY_Z * found[2])
            sources.append(found[1])
            sds.append(found[2])
        result = (np.array(values), sources[0], tuple(sources), np.array(sds))
        if len(self._cache) < 100_000:  # custom models are caller-defined: keep memory bounded
            self._cache[cache_key] = result
        return result


def _borrowed_sd(rows: list[FigureRow], level: int) -> float:
    """How far a figure borrowed at `level` may be from the model's own: the models that meet at this level but not
    at the one before (two snapshots; a base model and its chat sibling) differ on a shared benchmark by this
    standard deviation (capability units; pairwise differences / sqrt 2)."""
    groups: dict = {}
    for r in rows:
        outer = model_names.key(r.model, level)
        if outer:
            groups.setdefault((outer, r.benchmark), {}).setdefault(model_names.key(r.model, level - 1), []).append(
                r.score)
    diffs = []
    for members in groups.values():
        means = [sum(v) / len(v) for v in members.values()]
        diffs += [a - b for i, a in enumerate(means) for b in means[i + 1:]]
    return float(np.sqrt(np.mean(np.square(diffs)) / 2)) / MMLU_SCALE if diffs else 0.0


def _residual_sd(known: list[dict[str, float]], line: tuple[float, float], axis: str) -> float:
    """Root mean square residual of an imputation line (axis from knowledge) over the models that have both."""
    intercept, slope = line
    residuals = [k[axis] - (intercept + slope * k[AXES[0]]) for k in known if axis in k and AXES[0] in k]
    return float(np.sqrt(np.mean(np.square(residuals)))) if residuals else 0.0


def _quantile(values: list[float], q: float) -> float:
    """numpy's default (linear) quantile; np.quantile's first call costs ~0.1 s of lazy imports at start-up."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def _figures_by(rows: list[FigureRow], key_of) -> dict:
    """key -> {benchmark: mean score} over the rows sharing the key (several snapshots or spellings of a model:
    their mean is the best guess)."""
    grouped: dict = {}
    for r in rows:
        k = key_of(r)
        if k:
            grouped.setdefault(k, {}).setdefault(r.benchmark, []).append(r.score)
    return {k: {b: sum(v) / len(v) for b, v in figures.items()} for k, figures in grouped.items()}


def axes_from(figures: dict[str, float], lines: dict[str, tuple[float, float, float, float]]) -> dict[str, float]:
    """{axis: capability} from one model's figures: the mean of every estimate it has for the axis, its own
    benchmark (the first of AXIS_BENCHMARKS it has) and each proxy with a line. One benchmark saturates where
    another still separates models (GSM8K and MGSM near 90 % for every frontier model, MATH from 60 to 97 %), and a
    mean of several protocols is less noisy than any one of them."""
    out = {}
    for axis, benchmarks in AXIS_BENCHMARKS.items():
        estimates = [to_capability(next(figures[b] for b in benchmarks if b in figures))] \
            if any(b in figures for b in benchmarks) else []
        estimates += [_on_line(figures[proxy], lines[proxy]) for proxy in PROXY_BENCHMARKS[axis]
                      if proxy in figures and proxy in lines]
        if estimates:
            out[axis] = sum(estimates) / len(estimates)
    return out


def _on_line(score: float, line: tuple[float, float, float, float]) -> float:
    intercept, slope, lower, upper = line
    return min(upper, max(lower, intercept + slope * score))


def _first_axes(figures: dict[str, float], lines: dict[str, tuple[float, float, float, float]]) -> dict[str, float]:
    """{axis: capability} from the axis' own benchmark, else the first proxy with a line: what a proxy's line is
    fitted against (a line fitted on means that include other proxies would tie the proxies to each other)."""
    out = {}
    for axis, benchmarks in AXIS_BENCHMARKS.items():
        own = next((figures[b] for b in benchmarks if b in figures), None)
        if own is not None:
            out[axis] = to_capability(own)
            continue
        proxy = next((b for b in PROXY_BENCHMARKS[axis] if b in figures and b in lines), None)
        if proxy is not None:
            out[axis] = _on_line(figures[proxy], lines[proxy])
    return out


def fit_proxy_lines(by_model: dict) -> dict[str, tuple[float, float, float, float]]:
    """proxy benchmark -> (intercept, slope, lower, upper): capability on its axis ~ proxy score, least squares over
    the models that have the proxy and the axis from the benchmarks before it (own, then earlier proxies), clamped
    to the capabilities seen in that fit (a line extrapolates badly). A proxy with fewer than MIN_LINE_POINTS such
    models gets no line and is not used."""
    lines: dict[str, tuple[float, float, float, float]] = {}
    for axis, proxies in PROXY_BENCHMARKS.items():
        for proxy in proxies:
            pairs = [(figures[proxy], axes[axis]) for figures in by_model.values()
                     if proxy in figures and axis in (axes := _first_axes(figures, lines))]
            if len(pairs) >= MIN_LINE_POINTS:
                x, y = np.array(pairs).T
                slope, intercept = np.polyfit(x, y, 1)
                lines[proxy] = (float(intercept), float(slope), float(y.min()), float(y.max()))
    return lines
