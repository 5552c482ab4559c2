"""How per-benchmark figures become a model's skills on the router's three axes (api/routing/capability.py).

Each axis is on the capability scale c = (accuracy % - 80) / 10 of its own benchmarks (first); every later benchmark
(a proxy) maps onto it by a least-squares line fitted, when the figures load, on the models that have both it and
the axis from the benchmarks before it:
- knowledge: MMLU; MMLU-Redux, MMLU-Pro, GPQA (Diamond), ECI (Epoch's Capabilities Index, fitted across many
  benchmarks), Arena-Text (LMArena's text Elo: a chat-preference standing);
- maths: GSM8K, else MGSM; GSM8K-0shot (ZeroEval), MATH, MATH-L5, OTIS-Mock-AIME (Epoch AI's AIME-style set),
  AIME-2024, AIME-2025;
- code: HumanEval; CRUX (CRUXEval output prediction), SWE-bench-Verified, Aider-Polyglot, LiveCodeBench.
A model's value on an axis is the mean of its own figure and its mapped proxies: one benchmark saturates where
another still separates models.

Saturation (issue 32). Today's frontier models all score 88-93 on MMLU and 90-97 on GSM8K and HumanEval: there those
benchmarks say "at least this good" and nothing more, so gpt-4o-mini and gpt-5 stood within a few tenths on every
axis. Two rules keep the harder benchmarks (GPQA, MMLU-Pro, AIME, LiveCodeBench, SWE-bench, Arena) from being
squashed back onto the saturated scale:
1. a line is fitted only on models whose anchor figure is below SATURATED (the anchor still separates them);
2. a line is clamped below at the lowest capability of its fit, but above only by what the proxy itself can reach
   (its value at the benchmark's ceiling): above the saturated range, the hard benchmark is the evidence.
And a model with a saturated own figure and at least one mapped proxy reads the axis from its proxies alone (the
saturated figure is a floor: the mean never drops below it).
"""

from __future__ import annotations

import numpy as np

MMLU_CENTRE = 80.0
MMLU_SCALE = 10.0
AXES = ("knowledge", "maths", "code")
# Which benchmarks give each axis, in order of preference.
AXIS_BENCHMARKS = {"knowledge": ("MMLU",), "maths": ("GSM8K", "MGSM"), "code": ("HumanEval",)}
# Other benchmarks, mapped onto an axis by a fitted line, in order of preference (module docstring).
PROXY_BENCHMARKS = {"knowledge": ("MMLU-Redux", "MMLU-Pro", "GPQA", "ECI", "Arena-Text"),
                    "maths": ("GSM8K-0shot", "MATH", "MATH-L5", "OTIS-Mock-AIME", "AIME-2024", "AIME-2025"),
                    "code": ("CRUX", "SWE-bench-Verified", "Aider-Polyglot", "LiveCodeBench")}
# Benchmarks on another scale than percent: (lowest, highest) a figure may take.
SCORE_RANGE = {"ECI": (0.0, 200.0), "Arena-Text": (800.0, 2000.0)}
# An anchor figure at or above this (percent) is saturated (module docstring).
SATURATED = 88.0
MIN_LINE_POINTS = 4
MIN_CORRELATION = 0.5  # below it, a proxy's line on its own axis is noise (fit_proxy_lines)

Line = tuple[float, float, float, float]  # intercept, slope, lower clamp, upper clamp


class Lines(dict):
    """proxy -> Line, and which proxies were fitted beyond the established benchmarks (`extended`: against a model's
    other estimates or knowledge, fit_proxy_lines)."""

    def __init__(self, *args, extended: frozenset[str] = frozenset()):
        super().__init__(*args)
        self.extended = extended


def to_capability(score: float) -> float:
    return (float(score) - MMLU_CENTRE) / MMLU_SCALE


def score_range(benchmark: str) -> tuple[float, float]:
    return SCORE_RANGE.get(benchmark, (0.0, 100.0))


def _own(figures: dict[str, float], axis: str) -> float | None:
    return next((figures[b] for b in AXIS_BENCHMARKS[axis] if b in figures), None)


def saturated(benchmark: str, score: float) -> bool:
    """A percent figure at or above SATURATED: near the benchmark's ceiling, where it no longer separates models."""
    return benchmark not in SCORE_RANGE and score >= SATURATED


def axes_from(figures: dict[str, float], lines: dict[str, Line] | Lines) -> dict[str, float]:
    """{axis: capability} from one model's figures: the mean of every estimate it has for the axis from a figure
    that still separates models (its own benchmark and each proxy with a line), never below what a saturated
    figure says (a floor); only saturated figures: their mean (module docstring)."""
    out = {}
    extended = getattr(lines, "extended", frozenset())
    for axis in AXES:
        own = next((b for b in AXIS_BENCHMARKS[axis] if b in figures), None)
        # A model its axis' own benchmark still measures (unsaturated) is read as the router was trained to read it:
        # the lines fitted beyond the established benchmarks are for models above their range.
        measured = own is not None and not saturated(own, figures[own])
        estimates = [(own, to_capability(figures[own]))] if own is not None else []
        estimates += [(b, _on_line(figures[b], lines[b])) for b in PROXY_BENCHMARKS[axis]
                      if b in figures and b in lines and not (measured and b in extended)]
        if not estimates:
            continue
        open_ = [v for b, v in estimates if not saturated(b, figures[b])]
        floors = [v for b, v in estimates if saturated(b, figures[b])]
        if open_:
            out[axis] = max([sum(open_) / len(open_)] + floors)
        else:
            out[axis] = sum(floors) / len(floors)
    return out


def _on_line(score: float, line: Line) -> float:
    intercept, slope, lower, upper = line
    return min(upper, max(lower, intercept + slope * score))


def _anchor(figures: dict[str, float], axis: str, lines: dict[str, Line]) -> float | None:
    """The axis from its own benchmark when that still separates models, else from the first proxy with a line:
    what a proxy's line is fitted against (a line fitted on means that include other proxies would tie the proxies
    to each other; one fitted on a saturated figure would squash the proxy onto it)."""
    own = _own(figures, axis)
    if own is not None and own < SATURATED:
        return to_capability(own)
    proxy = next((b for b in PROXY_BENCHMARKS[axis] if b in figures and b in lines
                  and not saturated(b, figures[b])), None)
    return _on_line(figures[proxy], lines[proxy]) if proxy is not None else None


def fit_proxy_lines(by_model: dict) -> Lines:
    """proxy benchmark -> (intercept, slope, lower, upper): capability on its axis ~ proxy score, by least squares,
    clamped below to the lowest capability of the fit and above to the line's value at the proxy's ceiling (module
    docstring). First each proxy against the axis from the benchmarks before it (own, else earlier proxies), as the
    router was trained with; a proxy those do not anchor (fewer than MIN_LINE_POINTS models, or estimates that do
    not agree: _informative) is then fitted against the mean of every other estimate the model has on the axis (its
    unsaturated own figure and the other proxies on their lines), so a benchmark only today's models have (SWE-bench,
    AIME) is fitted on them, against the other hard benchmarks they share, not on the few old models that also have
    an old one; and failing that, against knowledge. A proxy with too few models gets no line and is not used."""
    first: dict[str, Line] = {}
    for axis, proxies in PROXY_BENCHMARKS.items():
        for proxy in proxies:
            pairs = [(figures[proxy], anchor) for figures in by_model.values()
                     if proxy in figures and (anchor := _anchor(figures, axis, first)) is not None]
            if _informative(pairs):
                _fit(first, proxy, pairs)
    lines = dict(first)
    for axis, proxies in PROXY_BENCHMARKS.items():
        for proxy in (p for p in proxies if p not in first):
            pairs = [(figures[proxy], anchor) for figures in by_model.values()
                     if proxy in figures and (anchor := _others(figures, axis, proxy, first)) is not None]
            if axis != AXES[0] and not _informative(pairs):
                pairs = [(figures[proxy], anchor) for figures in by_model.values()
                         if proxy in figures and (anchor := _others(figures, AXES[0], proxy, first)) is not None]
            _fit(lines, proxy, pairs)
    return Lines(lines, extended=frozenset(lines) - frozenset(first))


def _informative(pairs: list[tuple[float, float]]) -> bool:
    """Whether enough models, whose estimates agree enough (MIN_CORRELATION), anchor a line. The agentic code
    benchmarks (SWE-bench, Aider) share models with HumanEval and CRUX only among old models, where they do not
    agree (correlation about 0); against knowledge, which today's models all have (GPQA, MMLU-Pro), they agree
    at 0.7-0.8, so such a proxy is fitted on knowledge: today's standing in general, the best evidence there is."""
    if len(pairs) < MIN_LINE_POINTS:
        return False
    x, y = np.array(pairs).T
    return bool(np.std(x) > 0 and np.std(y) > 0 and np.corrcoef(x, y)[0, 1] >= MIN_CORRELATION)


def _others(figures: dict[str, float], axis: str, proxy: str, lines: dict[str, Line]) -> float | None:
    """The mean of a model's estimates on `axis` other than `proxy`'s: its own figure when unsaturated, and every
    other proxy with a line."""
    own = _own(figures, axis)
    estimates = [to_capability(own)] if own is not None and own < SATURATED else []
    estimates += [_on_line(figures[b], lines[b]) for b in PROXY_BENCHMARKS[axis]
                  if b != proxy and b in figures and b in lines and not saturated(b, figures[b])]
    return sum(estimates) / len(estimates) if estimates else None


def _fit(lines: dict[str, Line], proxy: str, pairs: list[tuple[float, float]]) -> None:
    if len(pairs) >= MIN_LINE_POINTS:
        x, y = np.array(pairs).T
        slope, intercept = np.polyfit(x, y, 1)
        ceiling = float(intercept + slope * score_range(proxy)[1])
        lines[proxy] = (float(intercept), float(slope), float(y.min()), max(float(y.max()), ceiling))
