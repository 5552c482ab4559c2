"""Learning the default router's familiarity floor (api/routing/familiarity.py) at training time.

1. Prototypes: each training kind's (benchmark's) training prompts, embedded as the router embeds them, centred on
   the kinds' mean and clustered by spherical k-means into PROTOTYPES_PER_KIND unit centroids (deterministic:
   farthest-point starts, a fixed number of Lloyd steps). The kind's typical prompt is the mean of its feature vectors.
2. The threshold, nested over kinds: each kind the router trains on is left out in turn, a router is trained without
   it (every source's copy, and the figures measured on its RouterDC file: flows/default_router/figures.py; only a
   kind whose absence leaves the pair's IRT a benchmark to learn from, so never the last pair benchmark), and that
   router, with prototypes of the other kinds, routes
   - the kind left out (every row: it never saw one), and
   - the other kinds' held-out fold (in distribution),
   with the fallback at each candidate level: none, or a target (the nearest kind, or all kinds: TARGETS) weighted
   by w in WEIGHTS below the q quantile of the held-out fold's own familiarity, q in QUANTILES (the share of in-distribution prompts that would fall back, so a level chosen on routers trained
   without a kind carries over to the router trained on all of them). The score is flows/default_router/report.py's
   routing gain (the share of the oracle's gain over random the router recovers: the pair's APGR over the dial, the
   7 models' accuracy at t = 0), averaged over the kind left out and in distribution, then over the kinds. The
   level kept is the best one, and none unless it beats none by MIN_GAIN and its gain holds across the kinds
   (flows/kinds_left_out.py, the custom router's rule too): "none" is the answer when falling back does not pay on
   the kinds left out.
3. The record says, per kind left out, what each level scored, and the nested figure: that kind's score under the
   level chosen on the other kinds alone, against none.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from api.routing.default_router import DefaultRouter
from api.routing.familiarity import TARGETS, Familiarity, read_familiarity, unit_rows
from flows.default_router.multi import Outcomes
from flows.default_router.pair_irt import PAIR_BLOCKS
from flows.default_router.report import routing_gain
from flows.kinds_left_out import holds_across_kinds

PROTOTYPES_PER_KIND = 8
LLOYD_STEPS = 20
QUANTILES = (0.01, 0.02, 0.05, 0.1, 0.2)
# A level must recover at least this much more of the oracle's gain than none (mean over the kinds left out and in
# distribution): a smaller edge is within what one kind's luck moves.
MIN_GAIN = 0.01
NONE = "none"


def kind_of(key: str) -> str:
    """'routerdc/gsm8k' -> 'gsm8k': a kind is a benchmark, whichever source holds its copy."""
    return key.split("/", 1)[1]


def kinds_of(keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(kind_of(key) for key in keys))


def spherical_kmeans(rows: np.ndarray, k: int, steps: int = LLOYD_STEPS) -> np.ndarray:
    """k unit centroids of unit rows; starts at the row nearest the mean, then each next start is the row least
    similar to those chosen (deterministic, no seed)."""
    k = min(k, len(rows))
    chosen = [int(np.argmax(rows @ unit_rows(rows.mean(axis=0))))]
    nearest = rows @ rows[chosen[0]]
    while len(chosen) < k:
        chosen.append(int(np.argmin(nearest)))
        nearest = np.maximum(nearest, rows @ rows[chosen[-1]])
    centroids = rows[chosen].copy()
    for _ in range(steps):
        owner = np.argmax(rows @ centroids.T, axis=1)
        for c in range(k):
            members = rows[owner == c]
            if len(members):  # an empty cluster keeps its centroid
                centroids[c] = unit_rows(members.sum(axis=0))
    return centroids


def prototypes(dim: int, sets: dict[str, Outcomes], features: dict[str, np.ndarray], keys: tuple[str, ...],
               folds: set[int]) -> Familiarity:
    """Prototypes of the kinds of `keys` from their rows in `folds` (no threshold yet); dim = the embedding width."""
    kinds = kinds_of(keys)
    vectors = {kind: np.vstack([features[key][sets[key].in_folds(folds)] for key in keys if kind_of(key) == kind])
               for kind in kinds}
    # Each kind counts alike in the centre, whatever its size (MMLU has 20 times HumanEval's prompts).
    center = np.mean([v[:, :dim].astype(np.float64).mean(axis=0) for v in vectors.values()], axis=0)
    found, owner = [], []
    for i, kind in enumerate(kinds):
        centroids = spherical_kmeans(unit_rows(vectors[kind][:, :dim].astype(np.float64) - center),
                                     PROTOTYPES_PER_KIND)
        found.append(centroids)
        owner += [i] * len(centroids)
    kind_vectors = np.stack([vectors[kind].astype(np.float64).mean(axis=0) for kind in kinds]).astype(np.float32)
    return Familiarity(kinds, center, np.vstack(found), np.array(owner, np.int64), kind_vectors)


def heldout_familiarity(familiarity: Familiarity, sets: dict[str, Outcomes], features: dict[str, np.ndarray],
                        keys: tuple[str, ...]) -> np.ndarray:
    """Familiarity of the held-out fold of the trained kinds: the in-distribution scale thresholds are read on."""
    return np.concatenate([familiarity.measure(features[key][sets[key].heldout])[0] for key in keys])


WEIGHTS = (0.5, 1.0)
LEVELS = (NONE, *(f"{target}@{q}@{w}" for target in TARGETS for q in QUANTILES for w in WEIGHTS))


def applied(familiarity: Familiarity, heldout: np.ndarray, level: str, record: dict | None = None) -> Familiarity:
    """The familiarity at a level: none, or '<target>@<q>@<weight>': below the q quantile of the in-distribution
    familiarity `heldout`, quality moves `weight` of the way to `target`'s (api/routing/familiarity.py)."""
    if level == NONE:
        return familiarity.with_threshold(None, record)
    target, q, weight = level.split("@")
    return familiarity.with_threshold(float(np.quantile(heldout, float(q))), record, target, float(weight))


def score_levels(router: DefaultRouter, familiarity: Familiarity, sets: dict[str, Outcomes],
                 features: dict[str, np.ndarray], trained: tuple[str, ...], left_out: tuple[str, ...]) -> dict:
    """Per level of LEVELS: routing gain on the left-out kind (every row, and per block), in distribution (the
    trained kinds' held-out fold), their mean (the objective), and the share of the left-out rows that fall back."""
    heldout = heldout_familiarity(familiarity, sets, features, trained)
    out_levels = np.concatenate([familiarity.measure(features[key])[0] for key in left_out])
    scored = {}
    for level in LEVELS:
        fam = applied(familiarity, heldout, level)
        threshold = fam.threshold
        r = router.with_familiarity(fam)
        blocks = {key: routing_gain(r, sets[key], features[key], rows=np.ones(len(sets[key].prompts), dtype=bool))
                  for key in left_out}
        unseen = float(np.mean(list(blocks.values())))
        seen = float(np.mean([routing_gain(r, sets[key], features[key], 0) for key in trained]))
        scored[level] = {"unseen": round(unseen, 5), "in_distribution": round(seen, 5),
                         "objective": round((unseen + seen) / 2, 5),
                         **{f"unseen {key}": round(gain, 5) for key, gain in blocks.items()},
                         "falls_back": round(float(np.mean(out_levels < threshold)) if threshold is not None else 0.0,
                                             4)}
    return scored


def choose_level(per_kind: dict[str, dict]) -> str:
    """The level with the best mean objective over the kinds left out; none unless it beats none by MIN_GAIN and
    its gain holds across the kinds (flows/kinds_left_out.py: the custom router's floor learns by the same rule)."""
    means = {level: float(np.mean([scores[level]["objective"] for scores in per_kind.values()]))
             for level in next(iter(per_kind.values()))}
    best = max(means, key=lambda level: (means[level], level == NONE))
    gains = [scores[best]["objective"] - scores[NONE]["objective"] for scores in per_kind.values()]
    return best if means[best] >= means[NONE] + MIN_GAIN and holds_across_kinds(gains) else NONE


def learn(router: DefaultRouter, sets: dict[str, Outcomes], features: dict[str, np.ndarray],
          trained: tuple[str, ...], folds: set[int], router_without: Callable[[str], DefaultRouter]) -> Familiarity:
    """The full router's familiarity with its threshold learned by leaving each trained kind out
    (`router_without(kind)` trains one without it). Needs two kinds at least; with fewer, no threshold."""
    dim = router.featurizer.embedding.dim
    full = prototypes(dim, sets, features, trained, folds)
    # A kind is left out only where the pair's IRT keeps a benchmark to learn from (flows/default_router/pair_irt.py)
    kinds = tuple(kind for kind in kinds_of(trained)
                  if any(key in PAIR_BLOCKS for key in trained if kind_of(key) != kind))
    if len(kinds) < 2:
        return full.with_threshold(None, {"level": NONE, "why": "fewer than two kinds to leave out"})
    per_kind = {}
    for kind in kinds:
        inner = tuple(key for key in trained if kind_of(key) != kind)
        fam = prototypes(dim, sets, features, inner, folds)
        per_kind[kind] = score_levels(router_without(kind), fam, sets, features, inner,
                                      tuple(key for key in trained if kind_of(key) == kind))
    level = choose_level(per_kind)
    nested = {}
    for kind, scores in per_kind.items():
        others = {k: v for k, v in per_kind.items() if k != kind}
        chosen = choose_level(others) if len(others) > 1 else NONE
        nested[kind] = {"level": chosen, "objective": scores[chosen]["objective"],
                        "objective_none": scores[NONE]["objective"], "unseen": scores[chosen]["unseen"],
                        "unseen_none": scores[NONE]["unseen"]}
    learned = applied(full, heldout_familiarity(full, sets, features, trained), level)
    record = {"level": level, "threshold": learned.threshold, "target": learned.target, "levels": list(LEVELS),
              "min_gain": MIN_GAIN, "prototypes_per_kind": PROTOTYPES_PER_KIND, "left_out": per_kind,
              "nested": nested}
    return learned.with_threshold(learned.threshold, record)


def artifact_rows(record: dict) -> list[dict]:
    """The record as table rows for the Prefect artifact: one per kind left out and level."""
    rows = []
    for kind, scores in record.get("left_out", {}).items():
        for level, figures in scores.items():
            rows.append({"left_out": kind, "level": level, **figures,
                         "chosen": level == record["level"],
                         "nested_choice": level == record["nested"][kind]["level"]})
    return rows


# Another CPU's floating point moves the prototypes in the last digits and may flip a near-tie of the routers trained
# without a kind, which moves the record's scores; what the floor decides is its prototypes, level and threshold.
SAME_FLOOR_ATOL = 1e-3


def same_floor(a: Path, b: Path) -> bool:
    """Whether two artefact folders' familiarity floors decide alike: the same kinds, level, target and weight, and
    with a threshold, it and every prototype and typical vector within SAME_FLOOR_ATOL (the record's scores are not
    compared; without a threshold nothing else decides anything)."""
    x, y = read_familiarity(a), read_familiarity(b)
    if x is None or y is None:
        return x is y
    if (x.kinds, x.target, x.weight, x.record.get("level")) != (y.kinds, y.target, y.weight, y.record.get("level")):
        return False
    if x.threshold is None and y.threshold is None:
        return True  # no threshold: the prototypes are never read, so they cannot change a decision
    if (x.threshold is None) != (y.threshold is None) or abs(x.threshold - y.threshold) > SAME_FLOOR_ATOL:
        return False
    return all(u.shape == v.shape and bool(np.allclose(u, v, rtol=0.0, atol=SAME_FLOOR_ATOL))
               for u, v in ((x.center, y.center), (x.prototypes, y.prototypes), (x.kind_vectors, y.kind_vectors)))
