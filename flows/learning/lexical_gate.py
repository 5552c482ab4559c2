"""The lexical learner as a challenger (issue 33), judged by two tests that need no exploration, so a caller who
never set `exploration_rate` (propensity 1.0 on every decision) can still have a real gain promoted, while labels
that carry no signal are refused.

1. Replay of the labelled decisions, each held out of its own fit (leave-one-out, exact for the learner's ridge
   form: flows/learning/lexical_fit.py): for each decision, the squared error of the label of the model that was
   chosen, as the learner predicts it and as the router predicts it *recalibrated* (each model's prediction moved
   by its mean residual on the other decisions). The recalibration is what makes this a test of the prompt-level
   signal: random labels make every model look like a coin, and a learner that learned only that beats the raw
   router without telling prompts apart; against the recalibrated router it gains nothing. The weighted mean
   improvement must be above 0. Every label is tested, not only the most recent fifth: on 2,000 feedbacks a time
   split left 400 to test, too few to tell anything.
2. A conservative direct-method bound on the policy: each decision is replayed with its logged trade-off (lambda and
   cost positions, flows/learning/off_policy.py actions) under the learner and under the champion (the live version
   or the router, recalibrated); an action that was the logged one is worth its label, any other action the
   *smaller* of the two models' predictions for it (neither side is credited with an outcome that only its own
   model believes in), less lambda times its cost position. The paired 95 % lower bound of the learner's advantage
   must be above 0. The learner's predictions in this replay are each row's held out of its own fit, for every
   model (LexicalFit.held_out_shift): replayed in sample, the learner kept the logged action where it had fitted a
   good label, and on a 419-label pool (ZeroEval MATH level 5, seed 2) random labels passed with a bound of +0.036
   and a learner that lost 0.061 APGR on CRUX passed too; held out, both bounds were below 0.
Why these thresholds (docs/benchmarks.md, "Issue 33"): in 8 in-process runs (GSM8K and MMLU left out of the router,
2 seeds, real and random labels, no exploration) the replay's 95 % lower bound stayed below 0 on GSM8K, where the
learner gained +0.056 and +0.100 APGR on held-out prompts, and was above 0 on both MMLU runs, one of which lost
0.030; the direct-method bound was above 0 exactly on the three runs that gained and below it on the five others
(all four random-label runs among them). The rule was chosen after seeing those runs; the figures reported for it
are on other seeds and through the service.
Both are direct-method estimates (an unlogged action is valued by models, never by importance weights): with
propensity 1.0 nothing else exists. The doubly robust and IPS estimates of flows/learning/off_policy.py are recorded
beside them, and where the log explored they use it.
"""

from __future__ import annotations

import numpy as np

from api.selection.lexical import FEATURE_VERSION, LexicalParameters, encode_array
from flows.learning.lexical_fit import LexicalFit
from flows.learning.off_policy import actions, interval
from flows.learning.table import Evidence

MIN_ROWS = 100


def parameters(fit: LexicalFit) -> LexicalParameters:
    return LexicalParameters(
        feature_version=FEATURE_VERSION, models=fit.models, intercept=[float(b) for b in fit.intercept],
        index=[encode_array(i, "<i4") for i in fit.lexical_index],
        values=[encode_array(v, "<f4") for v in fit.lexical_values],
        embedding=[[float(x) for x in e] for e in fit.embedding],
        centroids=[[float(x) for x in c] for c in fit.centroids], familiar=fit.familiar,
        familiar_full=fit.familiar_full, serve_intercept=False)


def recalibration(train: Evidence, quality: np.ndarray) -> dict[int, float]:
    """Per model (vocabulary index): its mean residual (label - `quality` of the chosen model) on the older rows."""
    rows = np.arange(len(train))
    chosen_model = train.model[rows, train.chosen]
    residual = train.label - quality[rows, train.chosen]
    return {int(m): float(residual[chosen_model == m].mean()) for m in np.unique(chosen_model)}


def recalibrated(evidence: Evidence, quality: np.ndarray, shift: dict[int, float]) -> np.ndarray:
    moved = quality + np.vectorize(lambda m: shift.get(int(m), 0.0), otypes=[float])(evidence.model)
    return np.where(evidence.valid, np.clip(moved, 0.0, 1.0), quality)


def weighted_interval(values: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    return interval(values * weights / weights.mean()).as_dict() if len(values) else \
        {"value": float("nan"), "low": float("-inf"), "high": float("inf")}


def held_out(evidence: Evidence, fit: LexicalFit, challenger: np.ndarray, share: np.ndarray) -> np.ndarray:
    """The learner's (n, k) predicted qualities with each row left out of its own fit (LexicalFit.held_out_shift,
    scaled by the row's familiarity `share` as serving scales the adjustment)."""
    out = challenger.copy()
    column = {m: j for j, m in enumerate(fit.models)}
    for c in range(out.shape[1]):
        known = np.array([column.get(evidence.models[m], -1) for m in evidence.model[fit.rows, c]])
        ok = (known >= 0) & evidence.valid[fit.rows, c]
        r = fit.rows[ok]
        out[r, c] += share[r] * fit.held_out_shift[np.flatnonzero(ok), known[ok]]
    return np.clip(out, 0.0, 1.0)


def judge(evidence: Evidence, fit: LexicalFit, challenger: np.ndarray, champion: np.ndarray,
          share: np.ndarray) -> dict:
    """Both tests of the module's docstring on the rows the learner was fitted on: `challenger`, `champion` are their
    (n, k) predicted qualities under the learner (as fitted on every row) and under the champion; `share` each row's
    familiarity. The policy replay uses the learner with each row held out of its own fit."""
    rows = np.arange(len(evidence))
    challenger = held_out(evidence, fit, challenger, share)
    calibrated = recalibrated(evidence, champion, recalibration(evidence, champion))
    replay = weighted_interval(fit.replay_gain, fit.replay_weight)
    a_chal, a_champ = actions(evidence, challenger), actions(evidence, calibrated)
    cautious = np.minimum(challenger, calibrated)

    def value(action: np.ndarray) -> np.ndarray:
        reward = np.where(action == evidence.chosen, evidence.label, cautious[rows, action])
        lam = np.where(np.isfinite(evidence.lam), evidence.lam, 0.0)
        return reward - lam * evidence.position[rows, action]

    bound = interval(value(a_chal) - value(a_champ))
    return {"replay_error_gain": replay, "dm_difference": bound.as_dict(), "penalty": fit.penalty,
            "changed_decisions": float((a_chal != a_champ).mean()) if len(rows) else 0.0,
            "passed": bool(len(rows) >= MIN_ROWS and replay["value"] > 0 and bound.low > 0)}
