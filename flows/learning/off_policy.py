"""Off-policy evaluation of routing policies on logged decisions: what a policy would have scored on traffic it did
not route, from the logged action, its propensity and its 0/1 label.

- IPS (inverse propensity scoring): v_i = 1[pi(x_i) = a_i] * y_i / p_i. Unbiased when every action pi takes had a
  positive logged propensity; noisy, since only decisions where pi agrees with the log count.
- DR (doubly robust): v_i = qhat(x_i, pi(x_i)) + 1[pi(x_i) = a_i] * (y_i - qhat(x_i, a_i)) / p_i, qhat a reward
  model fitted elsewhere (here: the challenger, fitted on the older slice only). Unbiased where IPS is, and where
  the log could not have taken pi's action it rests on qhat.
Two policies are compared on the same rows (paired), with a normal 95 % interval on the mean difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from api.selection.learned import Correction
from api.selection.lexical import LexicalModel
from flows.learning.table import Evidence

Z95 = 1.959964


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


def interval(values: np.ndarray) -> Estimate:
    n = len(values)
    mean = float(values.mean()) if n else float("nan")
    half = Z95 * float(values.std(ddof=1)) / np.sqrt(n) if n > 1 else float("inf")
    return Estimate(mean, mean - half, mean + half)


def corrected_quality(evidence: Evidence, correction: Correction | None) -> np.ndarray:
    """(n, k) predicted quality of every logged candidate under the router plus `correction` (None: the router)."""
    quality = evidence.router_quality.copy()
    if correction is None or len(evidence) == 0:
        return quality
    if correction.lexical is not None:
        return lexical_quality(evidence, correction.lexical, quality)
    cluster = correction.clusters(evidence.features)
    for m, name in enumerate(evidence.models):
        row = correction.rows.get(name)
        if row is None:
            continue
        cells = evidence.model == m
        delta = correction.weights[row, cluster] + correction.bias[row]  # (n,)
        quality[cells] += np.broadcast_to(delta[:, None], cells.shape)[cells]
    return np.clip(quality, 0.0, 1.0)


def lexical_quality(evidence: Evidence, model: LexicalModel, base: np.ndarray) -> np.ndarray:
    """(n, k) the lexical learner's quality of every logged candidate, on top of `base`, as the decision path
    applies it (api/selection/lexical.py): from the text each decision scored and its embedding."""
    out = base.copy()
    texts = evidence.texts or [""] * len(evidence)
    for i in range(len(evidence)):
        cells = np.flatnonzero(evidence.valid[i])
        keys = [evidence.models[m] for m in evidence.model[i, cells]]
        out[i, cells] = model.apply(texts[i], evidence.features[i], keys, base[i, cells])
    return out


def actions(evidence: Evidence, quality: np.ndarray) -> np.ndarray:
    """The column each decision's policy (api/routing/policy.py: q - lambda * position, the cheapest when lambda is
    infinite; ties to the cheaper) picks, replayed with the logged lambda and positions."""
    lam = evidence.lam[:, None]
    finite = np.isfinite(lam)
    utility = np.where(finite, quality - np.where(finite, lam, 0.0) * evidence.position,
                       -evidence.position + 1e-9 * quality) - 1e-10 * evidence.position
    utility = np.where(evidence.valid, utility, -np.inf)
    return utility.argmax(axis=1)


def per_row_values(evidence: Evidence, chosen: np.ndarray, reward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(IPS, DR) per-row values of the policy that picks `chosen`; `reward` is qhat (n, k)."""
    rows = np.arange(len(evidence))
    agree = (chosen == evidence.chosen).astype(np.float64)
    weight = agree / evidence.propensity
    ips = weight * evidence.label
    dr = reward[rows, chosen] + weight * (evidence.label - reward[rows, evidence.chosen])
    return ips, dr


def compare(evidence: Evidence, challenger: Correction, champion: Correction | None) -> dict:
    """Challenger vs champion on `evidence` (held out from the challenger's fit): both estimators, paired."""
    return compare_quality(evidence, corrected_quality(evidence, challenger), corrected_quality(evidence, champion))


def compare_quality(evidence: Evidence, reward: np.ndarray, champion_quality: np.ndarray) -> dict:
    """compare() for policies given by their predicted quality of every logged candidate: the challenger's
    (`reward`, also DR's reward model) and the champion's."""
    a_chal = actions(evidence, reward)
    a_champ = actions(evidence, champion_quality)
    ips_chal, dr_chal = per_row_values(evidence, a_chal, reward)
    ips_champ, dr_champ = per_row_values(evidence, a_champ, reward)
    return {
        "rows": len(evidence), "changed_decisions": float((a_chal != a_champ).mean()) if len(evidence) else 0.0,
        "logged_value": float(evidence.label.mean()) if len(evidence) else float("nan"),
        "ips": {"challenger": interval(ips_chal).as_dict(), "champion": interval(ips_champ).as_dict(),
                "difference": interval(ips_chal - ips_champ).as_dict()},
        "dr": {"challenger": interval(dr_chal).as_dict(), "champion": interval(dr_champ).as_dict(),
               "difference": interval(dr_chal - dr_champ).as_dict()},
    }
