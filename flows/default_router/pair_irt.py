"""The default router's one-skill scorer, fitted on the pair it has per-query outcomes for.

    P(model m answers query q well) = sigmoid(a(q) * (c_m - d(q)))

Difficulty d and discrimination a are linear heads on the query features, learned from RouteLLM's GPT-4-1106 vs
Mixtral-8x7B outcomes (MMLU, GSM8K; never MT-Bench) with the two models' knowledge capability held at their public
figures (api/routing/capability.py), so any model with a figure gets a score. Each head = shared weights + g(q) x
extra weights, where the gate g (api/routing/features.py numeric_gate) opens for free-form quantitative prompts.
"""

from __future__ import annotations

import numpy as np

from api.routing.capability import CapabilityPrior
from api.routing.features import Featurizer
from api.routing.router import Candidate
from flows.default_router.irt import IrtHeads, fit_irt
from flows.default_router.multi import Outcomes
from flows.default_router.sweep import STRONG_PRICE, WEAK_PRICE

# Chosen by 5-fold cross-validation on the training split only (datasets/default_router/README.md).
L2 = 1e-3  # on the weights shared by every query
L2_GATED = 3e-4  # on the extra weights of free-form quantitative prompts (features.numeric_gate)
GSM8K_WEIGHT = 10.0  # GSM8K has 12x fewer rows than MMLU; without this its difficulty signal drowns
PAIR_BLOCKS = ("routellm/mmlu", "routellm/gsm8k")
PAIR = (Candidate("openai", "gpt-4-1106-preview", *STRONG_PRICE, context_length=128000),
        Candidate("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1", *WEAK_PRICE, context_length=32768))


def pair_capabilities(prior: CapabilityPrior) -> np.ndarray:
    """The pair's knowledge capability from their public figures (held fixed while the heads are fitted)."""
    return np.array([prior.lookup(c.provider, c.model, c.output_price, c.context_length)[0] for c in PAIR])


def with_gated_block(featurizer: Featurizer, X: np.ndarray) -> np.ndarray:
    """[x, g * x] with g = features.numeric_gate: every prompt shares the first block of head weights, free-form
    quantitative prompts also use a second, more loosely regularised block (serving does the same sum)."""
    return np.hstack([X, X * featurizer.gate(X)[:, None]])


def fit_pair_irt(featurizer: Featurizer, sets: dict[str, Outcomes], features: dict[str, np.ndarray],
                 caps: np.ndarray, folds: set[int], keys: tuple[str, ...]) -> tuple[IrtHeads, int]:
    """Heads fitted on the rows of `folds` of the pair sets among `keys`; (heads, rows used)."""
    X_parts, Y_parts, W_parts = [], [], []
    for key in PAIR_BLOCKS:
        if key not in keys or key not in sets:
            continue
        rows = sets[key].in_folds(folds)
        X_parts.append(features[key][rows].astype(np.float64))
        Y_parts.append(sets[key].scores[rows])
        W_parts.append(np.full(int(rows.sum()), GSM8K_WEIGHT if key.endswith("gsm8k") else 1.0))
    X, Y, W = np.vstack(X_parts), np.vstack(Y_parts), np.concatenate(W_parts)
    X = with_gated_block(featurizer, X)
    dim = X.shape[1] // 2
    penalty = np.concatenate([np.full(dim, L2), np.full(dim, L2_GATED)])
    return fit_irt(X, Y, np.ones_like(Y, dtype=bool), caps, l2=penalty, weights=W), len(X)


def heads_json(heads: IrtHeads) -> dict:
    def r(v):
        return [round(float(x), 7) for x in v]

    dim = len(heads.w_difficulty) // 2
    return {
        "w_difficulty": r(heads.w_difficulty[:dim]),
        "w_difficulty_gated": r(heads.w_difficulty[dim:]),
        "b_difficulty": round(heads.b_difficulty, 7),
        "w_discrimination": r(heads.w_discrimination[:dim]),
        "w_discrimination_gated": r(heads.w_discrimination[dim:]),
        "b_discrimination": round(heads.b_discrimination, 7),
    }
