"""The learned default router: two scorers over the shared query features, blended.

1. Item response theory, one skill:  P = sigmoid(a(q) * (c_m - d(q))). d(q) (difficulty) and a(q) > 0
   (discrimination) are linear heads learned from RouteLLM's per-query outcomes of GPT-4-1106-preview and
   Mixtral-8x7B; c_m is the candidate's knowledge capability (its MMLU figure, api/routing/capability.py) for a
   model the router trained on, and for any other model its skills weighted by what the query needs, u(q) . s_m
   (the skill model's need head below): the heads learned where a pair's knowledge gap ranks queries, but nothing
   says knowledge alone ranks two models the router never saw on a maths or code query. One exception for models
   it trained on whose maths figure is not their own (borrowed or imputed from knowledge): a word problem (a
   free-form quantitative prompt without code, api/routing/features.py) reads such a model, in both scorers, at its
   best-evidenced standing instead, the mean of the axes it has its own figures for. Without maths evidence,
   knowledge would send a word problem to the knowledge leader; the standing falls back to the candidate best
   known overall (docs/benchmarks.md, issue 21, leave one benchmark out).
2. The skill model (api/routing/skills.py): the query's need for knowledge, maths and code against each model's
   skills on those axes, learned from many models' per-query outcomes (RouteLLM and RouterDC), so specialists win
   the queries of their speciality.
The prediction is (1 - blend) * first + blend * second, the blend chosen at training by validation on the training
split (flows/default_router/train.py). A prompt far from every training kind may then fall back to the candidates'
evidence on its nearest kind (api/routing/familiarity.py), where training learned a threshold for it. Any model gets a score: from its figures, a family match, or the uncertain
prior (api/routing/capability.py). Inference is a handful of dot products per query: numpy only.

Artefact (datasets/default_router/, written by flows/default_router/train.py):
- encoder.json, static_embedding.npy, tokenizer.json: the text encoder (api/routing/features.py);
- familiarity.json (optional): the training kinds' prototypes and the learned familiarity threshold;
- router.json: feature_version, both scorers, the blend, the stored trade-off schedule (used until the dial has
  calibrated on a caller, api/routing/dial.py), the fallback line and imputation, the training report.
Loading refuses an artefact whose feature_version differs from the code's FEATURE_VERSION.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from api.catalogue import load_catalogue
from api.routing.capability import AXES, CapabilityPrior, FallbackLine, anchored, read_figures
from api.routing.coverage import read_aliases
from api.routing.familiarity import Familiarity, read_familiarity
from api.routing.features import (
    FEATURE_VERSION,
    FeatureVersionMismatch,
    Featurizer,
    QueryFeatures,
)
from api.routing.router import Candidate
from api.routing.skills import SkillModel, pulled
from api.shipped import shipped

DEFAULT_ARTEFACT_DIR = shipped("default_router")
DEFAULT_PRIOR_PATH = shipped("model_benchmarks.csv")
MATHS = AXES.index("maths")

__all__ = ["DefaultRouter", "FeatureVersionMismatch", "load_default_router"]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class DefaultRouter:
    """Scores candidates for a query. Immutable after load; safe to share between threads."""

    name = "default"

    def __init__(self, featurizer: Featurizer, spec: dict, prior: CapabilityPrior,
                 familiarity: Familiarity | None = None):
        if spec.get("feature_version") != FEATURE_VERSION:
            raise FeatureVersionMismatch(
                f"default router artefact has feature version {spec.get('feature_version')!r}, "
                f"code computes {FEATURE_VERSION!r}; retrain it (train-default-router)"
            )
        heads = spec["heads"]
        self.featurizer = featurizer
        # Each head = shared weights + gate * extra weights, the gate (features.numeric_gate) opening for free-form
        # quantitative prompts. Rows: difficulty, discrimination.
        self._w_shared = np.stack(
            [np.asarray(heads["w_difficulty"], np.float32), np.asarray(heads["w_discrimination"], np.float32)]
        )
        self._w_gated = np.stack(
            [
                np.asarray(heads["w_difficulty_gated"], np.float32),
                np.asarray(heads["w_discrimination_gated"], np.float32),
            ]
        )
        if self._w_shared.shape != (2, featurizer.dim) or self._w_gated.shape != (2, featurizer.dim):
            raise FeatureVersionMismatch("head width does not match the feature vector width")
        self._bias = np.array([float(heads["b_difficulty"]), float(heads["b_discrimination"])])
        # The schedule is stored without its last entry (infinity has no JSON spelling).
        self.schedule: tuple[float, ...] = tuple(float(x) for x in spec["schedule"]) + (float("inf"),)
        self.prior = prior
        self.spec = spec
        self._capability_cache: dict[tuple, tuple[float, np.ndarray, float, bool, float, bool]] = {}
        self._inputs_cache: dict[tuple, tuple] = {}  # candidate set -> _skill_inputs' result
        self.skills = SkillModel(spec["skills"], featurizer.dim) if "skills" in spec else None
        self.blend = float(spec.get("blend", 0.0)) if self.skills is not None else 0.0
        # Every query-side head in one product per query (the hot path): rows [difficulty, discrimination] of the
        # IRT, then the skill model's [sharpness, difficulty, need...].
        w_all, b_all = [self._w_shared.astype(np.float64)], [self._bias]
        if self.skills is not None:
            w_skills, b_skills = self.skills.query_heads()
            w_all.append(w_skills)
            b_all.append(b_skills)
        self._w_all, self._b_all = np.vstack(w_all), np.concatenate(b_all)
        # Unfamiliar prompts fall back to the nearest known kind (api/routing/familiarity.py); only with a threshold.
        self.familiarity = familiarity
        self._fallback_on = familiarity is not None and familiarity.threshold is not None
        self._kind_cache: dict[tuple, np.ndarray] = {}  # candidate set -> (kinds, m) quality of each kind

    def _query_heads(self, x: np.ndarray) -> np.ndarray:
        z = self._w_all @ x + self._b_all
        g = float(self.featurizer.gate(x))
        if g > 0.0:
            z[:2] += g * (self._w_gated @ x)
        return z

    def heads(self, features: QueryFeatures) -> tuple[float, float]:
        """(difficulty, discrimination) of the query."""
        z = self._query_heads(features.vector)
        return float(z[0]), float(np.logaddexp(0.0, z[1]))

    def capabilities(self, candidates: Sequence[Candidate]) -> np.ndarray:
        return np.array([self._profile(c)[0] for c in candidates], dtype=float)

    def _profile(self, c: Candidate) -> tuple[float, np.ndarray, float, bool, float, bool]:
        """(knowledge capability, skills on every axis, skill-model offset, whether the router trained on it,
        best-evidenced standing, whether its maths figure is its own) of a candidate. The lookup normalises ids
        with regexes; memoised per model and price (a hot-path cost otherwise)."""
        key = (c.provider, c.model, c.output_price, c.context_length)
        value = self._capability_cache.get(key)
        if value is None:
            if len(self._capability_cache) > 50_000:  # custom models are caller-defined: keep memory bounded
                self._capability_cache.clear()
            figures, _, sources, _ = self.prior.profile(c.provider, c.model, c.output_price)
            own = np.array([source == "prior" for source in sources])
            standing = float(figures[own].mean()) if own.any() else float(figures[0])
            if self.skills is not None:
                skills, offsets = self.skills.candidate_skills([c.key], figures[None, :])
                value = (float(figures[0]), skills[0], float(offsets[0]), c.key in self.skills.corrections,
                         standing, bool(own[MATHS]))
            else:
                value = (float(figures[0]), figures, 0.0, True, standing, bool(own[MATHS]))
            self._capability_cache[key] = value
        return value

    def _skill_inputs(self, candidates: Sequence[Candidate]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                                      tuple[np.ndarray, np.ndarray] | None]:
        """(knowledge capabilities, skills (m, axes), offsets, trained-on mask, standings) of a candidate set;
        memoised per set, since callers send the same list again and again."""
        key = tuple((c.provider, c.model, c.output_price, c.context_length) for c in candidates)
        found = self._inputs_cache.get(key)
        if found is None:
            if len(self._inputs_cache) > 10_000:  # candidate sets are caller-defined: keep memory bounded
                self._inputs_cache.clear()
            profiles = [self._profile(c) for c in candidates]
            skills = np.stack([p[1] for p in profiles]) if profiles else np.zeros((0, len(AXES)))
            found = self._inputs_cache[key] = (np.array([p[0] for p in profiles]), skills,
                                               np.array([p[2] for p in profiles]),
                                               np.array([p[3] for p in profiles], dtype=bool),
                                               _standings(profiles))
        return found

    def predict_quality(self, features: QueryFeatures, candidates: Sequence[Candidate]) -> np.ndarray:
        quality = self._predict_one(features, candidates)
        if self._fallback_on:
            level, kind = self.familiarity.measure(features.vector)
            if level < self.familiarity.threshold:
                return self.familiarity.fallback(quality, self._kind_quality(candidates), kind)
        return quality

    def _predict_one(self, features: QueryFeatures, candidates: Sequence[Candidate]) -> np.ndarray:
        z = self._query_heads(features.vector)
        caps, skills, offsets, trained, standings = self._skill_inputs(candidates)
        pull = None
        if standings is not None:
            g = float(self.featurizer.word_problem(features.vector))
            if g > 0.0:
                pull = (standings[0], g * standings[1][None, :])
                caps = pulled(caps, (standings[0], pull[1][0]))
        if not trained.all():
            # z[2:] are the skill model's heads (_query_heads): its need for each axis weighs the unseen skills
            caps = np.where(trained, caps, skills @ self.skills.need_from_heads(z[2:]))
        irt = _sigmoid(np.logaddexp(0.0, z[1]) * (caps - z[0]))
        if self.skills is None or self.blend == 0.0:
            return irt
        return (1.0 - self.blend) * irt + self.blend * self.skills.predict_from_heads(z[None, 2:], skills, offsets,
                                                                                      pull)[0]

    def predict_quality_batch(self, vectors: np.ndarray, candidates: Sequence[Candidate]) -> np.ndarray:
        """(n, m) quality of many queries' feature vectors (the trade-off dial's calibration pool)."""
        quality = self._predict_many(vectors, candidates)
        if self._fallback_on and len(vectors):
            level, kind = self.familiarity.measure(vectors)
            low = level < self.familiarity.threshold
            if low.any():
                quality = np.array(quality)
                quality[low] = self.familiarity.fallback(quality[low], self._kind_quality(candidates), kind[low])
        return quality

    def _kind_quality(self, candidates: Sequence[Candidate]) -> np.ndarray:
        """(kinds, m) the quality predicted for each known kind's typical prompt: an unfamiliar prompt's evidence.
        Memoised per candidate set, like _skill_inputs."""
        key = tuple((c.provider, c.model, c.output_price, c.context_length) for c in candidates)
        found = self._kind_cache.get(key)
        if found is None:
            if len(self._kind_cache) > 10_000:
                self._kind_cache.clear()
            found = self._kind_cache[key] = self._predict_many(self.familiarity.kind_vectors, candidates)
        return found

    def _predict_many(self, vectors: np.ndarray, candidates: Sequence[Candidate]) -> np.ndarray:
        out = vectors @ self._w_shared.T + self._bias
        out = out + self.featurizer.gate(vectors)[:, None] * (vectors @ self._w_gated.T)
        d, a = out[:, 0], np.logaddexp(0.0, out[:, 1])
        caps, skills, offsets, trained, standings = self._skill_inputs(candidates)
        caps = np.broadcast_to(caps, (len(vectors), len(caps)))
        pull = None
        if standings is not None:
            pull = (standings[0], self.featurizer.word_problem(vectors)[:, None] * standings[1][None, :])
            caps = pulled(caps, pull)
        if not trained.all():
            caps = np.where(trained[None, :], caps, self.skills.needs(vectors) @ skills.T)
        irt = _sigmoid(a[:, None] * (caps - d[:, None]))
        if self.skills is None or self.blend == 0.0:
            return irt
        return (1.0 - self.blend) * irt + self.blend * self.skills.predict(vectors, skills, offsets, pull)

    def with_prior(self, prior: CapabilityPrior) -> "DefaultRouter":
        """The same trained router over other figures (refreshed or onboarded ones, api/model_figures/live.py):
        fresh memos, the encoder and heads shared. A new instance, so a request in flight keeps the one it started
        with; the one in service is never mutated."""
        return DefaultRouter(self.featurizer, self.spec, prior, self.familiarity)

    def with_familiarity(self, familiarity: Familiarity | None) -> "DefaultRouter":
        """The same trained router with another familiarity threshold (training chooses it by trying several)."""
        return DefaultRouter(self.featurizer, self.spec, self.prior, familiarity)

    def explain(self, candidates: Sequence[Candidate]) -> list[dict]:
        """Where each candidate's capability came from: 'prior' (its own figures), 'family' (another snapshot or
        sibling) or 'uncertain' (no figures: the pessimistic prior); per axis also 'imputed' (from knowledge), and
        the estimate's uncertainty (standard deviation, capability units; the capability is its lower bound)."""
        out = []
        for c in candidates:
            skills, how, per_axis, sds = self.prior.profile(c.provider, c.model, c.output_price)
            out.append({"model": c.key, "capability": float(skills[0]), "source": how,
                        "skills": {axis: {"capability": float(v), "source": src, "uncertainty": float(sd)}
                                   for axis, v, src, sd in zip(AXES, skills, per_axis, sds)}})
        return out


def _standings(profiles: list[tuple]) -> tuple[np.ndarray, np.ndarray] | None:
    """(best-evidenced standings, which candidates read them on a word problem: those trained on whose maths figure
    is not their own) of a candidate set (_profile's fields), or None when there are none (module docstring)."""
    lacking = np.array([p[3] and not p[5] for p in profiles], dtype=float)
    return (np.array([p[4] for p in profiles]), lacking) if lacking.any() else None


def catalogue_prices() -> dict[tuple[str, str], float]:
    """(provider, model) -> output $/M of every catalogue model, deprecated ones too: the vendors' price ladders
    that place a model with no figures (api/routing/placement.py)."""
    active, deprecated = load_catalogue().list()
    return {(m.provider, m.model.lower()): m.output_price for m in active + deprecated if m.output_price}


def load_default_router(
    folder: Path | str | None = None, prior_path: Path | str | None = None,
    prices: dict[tuple[str, str], float] | None = None,
) -> DefaultRouter:
    """Load the committed artefact (a few tens of milliseconds). Raises FeatureVersionMismatch on a stale one.
    `prices` (default: the shipped catalogue's) are the price ladders the prior places unknown models by."""
    folder = Path(folder) if folder is not None else DEFAULT_ARTEFACT_DIR
    spec = json.loads((folder / "router.json").read_text(encoding="utf-8"))
    if spec.get("feature_version") != FEATURE_VERSION:
        # Check before building the encoder: a stale artefact should fail fast and say why.
        raise FeatureVersionMismatch(
            f"default router artefact in {folder} has feature version {spec.get('feature_version')!r}, "
            f"code computes {FEATURE_VERSION!r}; retrain it (train-default-router)"
        )
    featurizer = Featurizer.load(folder)
    rows = read_figures(Path(prior_path) if prior_path is not None else DEFAULT_PRIOR_PATH)
    # Another figures file (SWITCHBOARD_MODEL_FIGURES) is the evidence; the lines keep the shipped file's anchors
    # under it on the benchmarks it has (capability.anchored).
    line_rows = None if prior_path is None else anchored(read_figures(DEFAULT_PRIOR_PATH), rows)
    imputation = {axis: tuple(line) for axis, line in spec.get("imputation", {}).items()}
    aliases = {key: alias.base_model for key, alias in read_aliases().items()}
    prior = CapabilityPrior(rows, FallbackLine(**spec["fallback"]), imputation,
                            catalogue_prices() if prices is None else prices, aliases, line_rows)
    return DefaultRouter(featurizer, spec, prior, read_familiarity(folder))
