"""How a model with no figures of its own, nor a snapshot's or sibling's, is placed (docs/routing.md, "How an unknown
model is placed"): by its name against the models of its family that have figures, then by its vendor's price ladder.

A name reads as family, generation, tier, size, line and mode (`parse`): claude-opus-4-5 is family claude,
generation 4.5, tier opus; gemini-2.5-flash-lite family gemini, generation 2.5, tier lite (the lowest of its words);
Llama-3.1-70B-Instruct family llama, generation 3.1, size 70b; gpt-5.6-sol family gpt, generation 5.6, line 'sol'
(a word that is neither a tier nor a tag); grok-4.20-reasoning and a figures row 'claude-opus-4-5:thinking-32k' mode 'reasoning'. In order:

1. tier: the family's models with figures, of the same line and mode (a reasoning variant never reads a
   non-reasoning sibling's figures, nor the reverse), at the nearest generation that has any (an older one
   first: a newer generation is rarely weaker, so the older figure is the safer guess). Among those, the same tier
   (or size) gives its figures as they are; another tier is shifted by the gap between tiers, and another size by
   the gap per doubling of size, both fitted on the figures' own same-generation siblings (TIER_RANK orders the
   words: nano < mini, lite, haiku, small < flash, medium < the plain name, sonnet, large < pro, opus, max).
2. price: the vendor's own price ladder, within the provider and the family's nearest generation with figures: a
   line of capability on log output price fitted on those models (the slope pooled over every such ladder when the
   generation has one price), clamped to the ladder's range. Prices are evidence only within one vendor's
   generation; across vendors and years they are not, so no other prices are used.
Each level's uncertainty is measured by masking when the figures load: every model with figures is hidden in turn
(with its other snapshots and its base or chat-tuned sibling: the same weights) and placed from the rest; the root mean square error per level is what
api/routing/capability.py subtracts (times UNCERTAINTY_Z) to give the profile's lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from api.routing import model_names
from api.routing.axes import AXES

TIER_RANK = {"nano": 0, "tiny": 0, "micro": 0, "lite": 1, "mini": 1, "haiku": 1, "small": 1, "fast": 1, "air": 1,
             "flash": 2, "medium": 2, "sonnet": 3, "plus": 2, "large": 3, "pro": 4, "opus": 4, "max": 4, "ultra": 4}
PLAIN_RANK = 3  # the family's name with no tier word (gpt-5 between gpt-5-mini and gpt-5-pro), as sonnet
_MODE_WORDS = {"reasoning": "reasoning", "thinking": "reasoning", "reasoner": "reasoning"}
# Words that say how a model is served or tuned, not which model it is: they neither name a line nor a tier.
_TAG_WORDS = {"instruct", "chat", "it", "latest", "preview", "exp", "experimental", "beta", "v", "hf", "base",
              "gv"}
LEVELS = ("tier", "price")


@dataclass(frozen=True)
class NameParts:
    family: str
    generation: float | None
    tier: int | None  # TIER_RANK, PLAIN_RANK, or None when a size stands in for it
    size_b: float | None  # billions of parameters
    line: tuple[str, ...]
    mode: str  # 'reasoning' | 'non-reasoning' | ''


def parse(name: str) -> NameParts | None:
    """The parts of a model's name (module docstring); None when it has no family word."""
    base, _, setting = name.partition(":")  # '<id>:<setting>' rows: a reasoning setting the figures file keeps apart
    toks = model_names.stripped_tokens(base)
    words = [t for t in toks if not t.isdigit()]
    if not words:
        return None
    said = set(words) | set(model_names.tokens(setting))
    mode = ""
    if said & {"non", "no", "off"} and said & set(_MODE_WORDS) or model_names.tokens(setting)[-1:] == ("0",):
        mode = "non-reasoning"
    elif said & set(_MODE_WORDS) or _is_r_series(toks):
        mode = "reasoning"
    family, generation, size, tiers, line = words[0], None, None, [], []
    i = toks.index(family) + 1
    numbers: list[str] = []
    while i < len(toks):
        t = toks[i]
        if t.isdigit() and i + 1 < len(toks) and toks[i + 1] in ("b", "m"):
            size = size or float(t) / (1000.0 if toks[i + 1] == "m" else 1.0)
            i += 2
            continue
        if t.isdigit():
            if generation is None and len(numbers) < 2:
                numbers.append(t)
        else:
            if numbers and generation is None:
                generation = _version(numbers)
            if t in TIER_RANK:
                tiers.append(TIER_RANK[t])
            elif t not in _TAG_WORDS and t not in _MODE_WORDS and t != "non" and len(t) > 1:
                line.append(t)
        i += 1
    if numbers and generation is None:
        generation = _version(numbers)
    tier = min(tiers) if tiers else (None if size is not None else PLAIN_RANK)
    return NameParts(family, generation, tier, size, tuple(sorted(line)), mode)


def _is_r_series(toks: tuple[str, ...]) -> bool:
    """deepseek-r1, qwq: the vendor's reasoning series."""
    return any(a == "r" and b.isdigit() for a, b in zip(toks, toks[1:])) or "qwq" in toks


def _version(numbers: list[str]) -> float:
    major = float(numbers[0])
    if len(numbers) == 1:
        return major
    minor = numbers[1]
    return major + float(minor) / 10 ** len(minor)


@dataclass(frozen=True)
class Known:
    """A model with figures: its name and its name's parts, provider, output price ($/M, None when not listed) and skills."""

    provider: str
    model: str
    snapshot: tuple[str, ...]  # model_names' snapshot key: one model (a gap is never fitted within one)
    variant: tuple[str, ...]  # its variant key: masking hides the model's weights, base and chat-tuned alike
    parts: NameParts
    price: float | None
    axes: dict[str, float]


def _compatible(a: NameParts, b: NameParts) -> bool:
    return a.family == b.family and a.line == b.line and a.mode == b.mode


def _generations(target: float | None, generations: list[float | None], sized: bool = False) -> list[float | None]:
    """The generations to read, nearest first: the same, then older ones (newest first), then newer ones (oldest
    first), then those without one. A name without one reads those first, then is an API alias of the newest (gemini-flash-latest, deepseek-reasoner), or, with a
    size in it, the first release of open weights (yi-34b, before yi-1.5-34b)."""
    known = sorted({g for g in generations if g is not None})
    unnamed = [None] if None in generations else []  # members whose names carry no generation either
    if target is None:
        return unnamed + (known if sized else known[::-1])
    older = [g for g in known if g <= target][::-1]
    return older + [g for g in known if g > target] + unnamed


def _nearest_generation(target: float | None, generations: list[float | None],
                        sized: bool = False) -> float | None:
    order = _generations(target, generations, sized)
    return order[0] if order else None


class Placer:
    """Places a model by its name and its price among `known` (module docstring)."""

    def __init__(self, known: list[Known]):
        self.known = known
        self._by_family: dict[str, list[Known]] = {}
        for k in known:
            self._by_family.setdefault(k.parts.family, []).append(k)
        self.tier_gap = self._pooled_gap(lambda k: k.parts.tier, lambda a, b: float(a - b))
        self.size_gap = self._pooled_gap(lambda k: k.parts.size_b, lambda a, b: math.log2(a / b))
        self.price_slope = self._pooled_gap(lambda k: k.price, lambda a, b: math.log(a / b), by_provider=True)
        self.level_sd = {level: 0.0 for level in LEVELS}
        self.level_sd.update(self._masked_sd())

    def _pooled_gap(self, value_of: Callable, distance: Callable, by_provider: bool = False) -> np.ndarray:
        """Per axis, capability per unit of `distance` between two same-generation siblings of one family: the
        least-squares slope through the origin over every such pair, never below 0 (a higher tier, a larger size,
        a dearer model of one vendor's generation is not placed below its sibling)."""
        num, den = np.zeros(len(AXES)), np.zeros(len(AXES))
        for members in self._by_family.values():
            for i, a in enumerate(members):
                for b in members[i + 1:]:
                    va, vb = value_of(a), value_of(b)
                    if (va is None or vb is None or va == vb or a.parts.generation != b.parts.generation
                            or a.parts.line != b.parts.line or a.snapshot == b.snapshot
                            or (by_provider and a.provider != b.provider)):
                        continue
                    d = distance(va, vb)
                    for j, axis in enumerate(AXES):
                        if axis in a.axes and axis in b.axes:
                            num[j] += d * (a.axes[axis] - b.axes[axis])
                            den[j] += d * d
        return np.maximum(np.divide(num, den, out=np.zeros(len(AXES)), where=den > 0), 0.0)

    def place(self, provider: str, model: str, price: float | None,
              hidden: tuple[str, ...] | None = None) -> tuple[dict[str, float], str] | None:
        """({axis: capability}, level) or None when neither its name nor its price places it. `hidden`: a variant
        key whose models are left out (the masking test)."""
        parts = parse(model)
        if parts is None:
            return None
        family = [k for k in self._by_family.get(parts.family, ()) if k.variant != hidden]
        placed = self._by_tier(parts, [k for k in family if _compatible(parts, k.parts)])
        if placed:
            return placed, "tier"
        ladder = [k for k in family if k.provider == provider and k.price and k.parts.mode == parts.mode]
        placed = self._by_price(parts, price, ladder)
        return (placed, "price") if placed else None

    def _by_tier(self, parts: NameParts, siblings: list[Known]) -> dict[str, float]:
        """Per axis, from the siblings with that axis at the nearest generation that has any (module docstring)."""
        if parts.tier is None and parts.size_b is None:
            return {}
        out = {}
        for j, axis in enumerate(AXES):
            having = [k for k in siblings if axis in k.axes]
            # the nearest generation whose members can be compared with it (a tier with a tier, a size with a size)
            for generation in _generations(parts.generation, [k.parts.generation for k in having],
                                           parts.size_b is not None):
                value = self._from_generation(parts, [k for k in having if k.parts.generation == generation], j)
                if value is not None:
                    out[axis] = value
                    break
        return out

    def _from_generation(self, parts: NameParts, here: list[Known], j: int) -> float | None:
        axis = AXES[j]
        same = [k.axes[axis] for k in here if (k.parts.tier, k.parts.size_b) == (parts.tier, parts.size_b)]
        if same:
            return sum(same) / len(same)
        shifted = []
        for k in here:
            if parts.size_b is not None and k.parts.size_b is not None:
                shifted.append(k.axes[axis] + self.size_gap[j] * math.log2(parts.size_b / k.parts.size_b))
            elif parts.tier is not None and k.parts.tier is not None:
                shifted.append(k.axes[axis] + self.tier_gap[j] * (parts.tier - k.parts.tier))
        return sum(shifted) / len(shifted) if shifted else None

    def _by_price(self, parts: NameParts, price: float | None, ladder: list[Known]) -> dict[str, float]:
        if not price or price <= 0:
            return {}
        out = {}
        for j, axis in enumerate(AXES):
            having = [k for k in ladder if axis in k.axes]
            generation = _nearest_generation(parts.generation, [k.parts.generation for k in having])
            points = [(math.log(k.price), k.axes[axis]) for k in having if k.parts.generation == generation]
            if not points:
                continue
            x, y = np.array(points).T
            slope = max(float(np.polyfit(x, y, 1)[0]) if len(set(x)) > 1 else float(self.price_slope[j]), 0.0)
            value = float(y.mean() + slope * (math.log(price) - x.mean()))
            out[axis] = min(float(y.max()), value)  # dearer than the ladder's top: no evidence it is better
        return out

    def masked(self) -> list[tuple[Known, dict[str, float], str]]:
        """(model, where it is placed with its own figures hidden, level) for every model with figures that its
        name or price places: the masking test (tests/routing/test_placement.py, benchmarks/todays_models.py)."""
        out = []
        for k in self.known:
            placed = self.place(k.provider, k.model, k.price, hidden=k.variant)
            if placed is not None:
                out.append((k, *placed))
        return out

    def _masked_sd(self) -> dict[str, float]:
        """Root mean square error per level of placing each model with figures from the others (module
        docstring), in capability units over every axis placed."""
        errors: dict[str, list[float]] = {level: [] for level in LEVELS}
        for k, axes, level in self.masked():
            errors[level] += [axes[a] - k.axes[a] for a in axes if a in k.axes]
        return {level: float(np.sqrt(np.mean(np.square(e)))) for level, e in errors.items() if e}


def masking_correlations(placer: Placer, min_models: int = 4) -> dict[str, tuple[float, int]]:
    """provider -> (Spearman rank correlation, models) between where each model with figures stands and where it is
    placed with its own figures hidden (Placer.masked), over the providers with at least `min_models` placed. A
    model's standing is its mean capability over the axes both have."""
    by_provider: dict[str, dict[tuple[str, ...], tuple[float, float]]] = {}
    for k, axes, _ in placer.masked():
        common = [a for a in axes if a in k.axes]
        if common:
            by_provider.setdefault(k.provider, {})[k.variant] = (
                sum(k.axes[a] for a in common) / len(common), sum(axes[a] for a in common) / len(common))
    out = {}
    for provider, standings in sorted(by_provider.items()):
        if len(standings) >= min_models:
            true, placed = np.array(list(standings.values())).T
            out[provider] = (float(np.corrcoef(_ranks(true), _ranks(placed))[0, 1]), len(standings))
    return out


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (Spearman's)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values), dtype=float)
    for v in np.unique(values):
        tied = values == v
        ranks[tied] = ranks[tied].mean()
    return ranks
