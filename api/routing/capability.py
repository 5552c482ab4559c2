"""What the router knows about a model it may never have seen: its public per-benchmark figures, or where its name and
price place it.

Source: datasets/model_benchmarks.csv, one cited source per figure (data card in datasets/default_router/README.md;
docs/routing.md, "Where figures come from"). Figures map onto three skill axes on the capability scale
c = (accuracy % - 80) / 10, each axis' own benchmark directly and the others by fitted lines (api/routing/axes.py).

Lookup of a candidate, per axis, the first that answers:
1. the exact (provider, model) rows; then the same name spelt otherwise, the same model's other snapshots added
   where its own rows read the axis from proxies alone, then the base/chat sibling (api/routing/model_names.py
   levels), under any provider; then an alias of datasets/model_aliases.csv (the cited base model's figures);
2. no knowledge figure at all: its family and tier words, then its vendor's price ladder within a generation
   (api/routing/placement.py);
3. maths or code with nothing found: a line from the model's knowledge, fitted on the models that have both
   (stored in the router's artefact), so a model known only by its MMLU still gets a full skill profile;
4. nothing at all: the uncertain prior, the UNCERTAIN_QUANTILE quantile of the known models' capability on that
   axis (each model counted once, not once per reasoning setting), whatever its price or size.
Each estimate carries its uncertainty, measured on the figures themselves: a figure borrowed from another snapshot
or from the base/chat sibling is off by the robust spread between such pairs in the figures file (level_sd), a
placed one by the placer's masked error, an imputed one by its line's residual (imputation_sd). The profile is the
lower bound, estimate - UNCERTAINTY_Z x that spread, so at the quality end of the dial a model measured under its
own name beats a look-alike with the same figures, and a model the router trained on (measured under its own name)
keeps its figures. UNCERTAINTY_Z = 0.5 was chosen on half of the unseen pools of
benchmarks/default_router_unseen_pools.py (docs/benchmarks.md, issue 21, uncertainty). The source of each axis
('prior': its own rows; 'family': another snapshot, sibling or alias; 'tier' / 'price': placed; 'imputed';
'uncertain') is what explain() reports.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from api.routing import model_names
from api.routing.axes import (  # noqa: F401 (AXIS_BENCHMARKS, PROXY_BENCHMARKS: re-exported)
    AXES,
    AXIS_BENCHMARKS,
    MMLU_CENTRE,
    MMLU_SCALE,
    PROXY_BENCHMARKS,
    axes_from,
    fit_proxy_lines,
    to_capability,
)
from api.routing.placement import Known, Placer, parse

# The uncertain prior of an axis: this quantile of the known models' capabilities. Pessimistic on purpose: a model
# nobody measured should not displace one with good published figures at the quality end of the dial.
UNCERTAIN_QUANTILE = 0.25
SETTING_SEPARATOR = ":"  # '<id>:<setting>': a model's figures at a reasoning effort other than its API default
# How many standard deviations of its uncertainty a profile found by a looser match (another snapshot, the base/chat
# sibling) or imputed from knowledge gives up: a lower confidence bound (module docstring).
UNCERTAINTY_Z = 0.5


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


def prior_with(rows: list[FigureRow], extra: list[FigureRow], like: CapabilityPrior) -> CapabilityPrior:
    """A prior over `rows` plus `extra`, with `like`'s fallback line and imputation (the artefact's): how refreshed
    figures and an onboarded model's measured figures join the public ones (api/model_figures/live.py). An extra
    row replaces the rows of its (provider, model, benchmark): a measurement of a model beats a copy of it."""
    return CapabilityPrior(overlaid(rows, extra), like.fallback, like.imputation, like.prices, like.aliases,
                           line_rows=anchored(like.line_rows, rows))


def anchored(anchors: Iterable[FigureRow], rows: list[FigureRow]) -> list[FigureRow]:
    """The rows a prior over `rows` fits its lines on: `rows` over `anchors` (the shipped file's), on the benchmarks
    `rows` has. A file that leaves models out keeps the lines' anchors; one that leaves a benchmark out (a
    benchmark held out, or one the operator does not trust) leaves it out of the lines too."""
    benchmarks = {r.benchmark for r in rows}
    return overlaid((r for r in anchors if r.benchmark in benchmarks), rows)


def overlaid(rows: Iterable[FigureRow], extra: Iterable[FigureRow]) -> list[FigureRow]:
    """`rows` with `extra` on top: an extra row replaces the rows of its (provider, model, benchmark)."""
    extra = list(extra)
    replaced = {(r.provider, r.model, r.benchmark) for r in extra}
    return [r for r in rows if (r.provider, r.model, r.benchmark) not in replaced] + extra


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
                 imputation: dict[str, tuple[float, float]] | None = None,
                 prices: Mapping[tuple[str, str], float] | None = None,
                 aliases: Mapping[tuple[str, str], str] | None = None,
                 line_rows: Iterable[FigureRow] | None = None):
        self.rows = list(rows)
        # The rows the proxy lines are fitted on (default: `rows`): a file that leaves the anchoring models out, or
        # measured rows (no anchor of their own), must not refit a line on the few models left (`anchored`).
        self.line_rows = self.rows if line_rows is None else list(line_rows)
        # (provider, model) -> the model whose figures stand for it, where the name rules cannot see it
        # (datasets/model_aliases.csv: gemini-pro-latest, provider-hosted copies), each cited by the vendor
        self.aliases = {(_norm(p), _norm(m)): base for (p, m), base in (aliases or {}).items()}
        self.fallback = fallback
        self.imputation = imputation or {}  # axis -> (intercept, slope) on knowledge
        self.prices = dict(prices or {})  # (provider, model) -> output $/M: the vendors' price ladders (placement)
        self._exact = _figures_by(rows, lambda r: (r.provider, r.model))
        self._levels = [_figures_by(rows, lambda r, level=level: model_names.key(r.model, level))
                        for level in model_names.LEVELS]
        by_spelling = self._levels[model_names.LEVELS.index(model_names.SPELLING)]  # one entry per model
        self.lines = fit_proxy_lines(by_spelling if line_rows is None else _figures_by(
            self.line_rows, lambda r: model_names.key(r.model, model_names.SPELLING)))
        known = [self._axes_of(figures) for figures in by_spelling.values()]
        # Standard deviation (capability units) of a figure borrowed at each matching level, and of each
        # imputation line's residual, measured on the figures themselves.
        self.level_sd = {level: _borrowed_sd(rows, level) for level in model_names.LEVELS[1:]}
        self.imputation_sd = {axis: _residual_sd(known, line, axis) for axis, line in self.imputation.items()}
        # The uncertain prior counts each model once: a '<id>:<setting>' row (the same model at another reasoning
        # effort or thinking budget) is not another model.
        settings = {model_names.key(r.model, model_names.SPELLING) for r in rows if SETTING_SEPARATOR in r.model}
        models = [self._axes_of(figures) for key, figures in by_spelling.items() if key not in settings]
        self.uncertain = np.array([
            _quantile([k[a] for k in models if a in k], UNCERTAIN_QUANTILE) if any(a in k for k in models)
            else to_capability(MMLU_CENTRE) for a in AXES])
        self.placer = Placer(_known_models(rows, by_spelling, self.lines, self.prices))
        self._cache: dict[tuple, tuple[np.ndarray, str, tuple[str, ...], np.ndarray]] = {}

    def with_rows(self, extra: Iterable[FigureRow]) -> "CapabilityPrior":
        """A prior that also knows `extra` figures (measured ones, e.g. onboarding's), everything else the same:
        the seam for figures that do not come from the shipped file."""
        return CapabilityPrior(self.rows + list(extra), self.fallback, self.imputation, self.prices, self.aliases,
                               line_rows=self.line_rows)

    def _axes_of(self, figures: dict[str, float]) -> dict[str, float]:
        return axes_from(figures, self.lines)

    def lookup(self, provider: str, model: str, output_price: float | None = None,
               context_length: int | None = None) -> tuple[float, str]:
        """(knowledge capability, where it came from: 'prior' | 'family' | 'uncertain')."""
        skills, how, *_ = self.profile(provider, model, output_price)
        return float(skills[0]), how

    def skills(self, provider: str, model: str, output_price: float | None = None,
               context_length: int | None = None) -> tuple[np.ndarray, str]:
        """(capability per axis of AXES, where knowledge came from). The price places a model its name does not
        (api/routing/placement.py); the context length is accepted for callers that pass a candidate's fields."""
        skills, how, *_ = self.profile(provider, model, output_price)
        return skills, how

    def profile(self, provider: str, model: str,
                output_price: float | None = None) -> tuple[np.ndarray, str, tuple[str, ...], np.ndarray]:
        """(capability per axis, source of knowledge, source per axis, uncertainty per axis) with sources 'prior' |
        'family' | 'tier' | 'price' (api/routing/placement.py) | 'imputed' (maths/code from knowledge) |
        'uncertain'. The capability is the lower bound, estimate - UNCERTAINTY_Z x uncertainty (module docstring);
        the uncertainty is 0 for a model's own figures and for the uncertain prior (already a low quantile)."""
        cache_key = (_norm(provider), _norm(model), output_price)
        hit = self._cache.get(cache_key)
        if hit is not None:
            return hit
        found_at = [index.get(model_names.key(model, level), {}) if model_names.key(model, level) else {}
                    for level, index in zip(model_names.LEVELS, self._levels)]
        # Its own figures (under this provider, then spelt otherwise), and the same model's other snapshots added
        # to them: another snapshot's figure on a benchmark the model lacks is more evidence, not a rival (o1-mini
        # has HumanEval, o1-mini-2024-09-12 only Aider); on an axis where it changes nothing the figure is its own.
        own = found_at[0]
        own_axes, same_model = self._axes_of(own), self._axes_of({**found_at[1], **own})
        # An axis measured on its own benchmark under the model's name stays its own (the models the router trained
        # on keep the figures it trained with); one read from proxies alone takes the other snapshots' figures in.
        measured = {a for a in AXES if any(b in own for b in AXIS_BENCHMARKS[a])}
        candidates = [("prior", 0.0, self._axes_of(self._exact.get(cache_key[:2], {}))),
                      ("prior", 0.0, {a: v for a, v in own_axes.items() if a in measured or same_model.get(a) == v}),
                      ("family", self.level_sd.get(model_names.SNAPSHOT, 0.0), same_model),
                      ("prior", 0.0, own_axes),
                      ("family", self.level_sd.get(model_names.VARIANT, 0.0), self._axes_of(found_at[2]))]
        alias = self.aliases.get(cache_key[:2])
        if alias is not None and not any(AXES[0] in axes for _, _, axes in candidates):
            base = self._levels[1].get(model_names.key(alias, model_names.SNAPSHOT), {})
            base = {**base, **self._levels[0].get(model_names.key(alias, model_names.SPELLING), {})}
            candidates.append(("family", self.level_sd.get(model_names.SNAPSHOT, 0.0), self._axes_of(base)))
        if not any(AXES[0] in axes for _, _, axes in candidates):
            placed = self.placer.place(cache_key[0], cache_key[1], output_price)
            if placed is not None:
                candidates.append((placed[1], self.placer.level_sd[placed[1]], placed[0]))
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
    standard deviation (capability units; pairwise differences / sqrt 2, estimated robustly)."""
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
    # Robust (1.4826 x the median absolute difference): two sources' protocols for one snapshot can differ by 20
    # points (a vendor's GPQA run and an independent one), and one such pair should not set every borrowing's spread.
    return float(1.4826 * np.median(np.abs(diffs)) / np.sqrt(2)) / MMLU_SCALE if diffs else 0.0


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


def _known_models(rows: list[FigureRow], by_spelling: dict, lines: dict,
                  prices: Mapping[tuple[str, str], float]) -> list[Known]:
    """One entry per (provider, model with figures) for the placer, with the provider's list price of the model
    (by its name, else by another snapshot's: gpt-4o-2024-08-06 costs what gpt-4o costs)."""
    by_snapshot: dict[tuple[str, tuple[str, ...]], float] = {}
    for (provider, model), price in prices.items():
        snap = (provider, model_names.key(model, model_names.SNAPSHOT))
        by_snapshot[snap] = min(price, by_snapshot.get(snap, price))
    out, seen = [], set()
    for r in rows:
        spelling = model_names.key(r.model, model_names.SPELLING)
        parts = parse(r.model)
        if (r.provider, spelling) in seen or parts is None or not spelling:
            continue
        seen.add((r.provider, spelling))
        axes = axes_from(by_spelling[spelling], lines)
        if axes:
            snapshot = model_names.key(r.model, model_names.SNAPSHOT)
            price = prices.get((r.provider, r.model), by_snapshot.get((r.provider, snapshot)))
            out.append(Known(r.provider, r.model, snapshot, model_names.key(r.model, model_names.VARIANT), parts,
                             price, axes))
    return out
