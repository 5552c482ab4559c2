"""One preference's learning step, without Prefect (the flow in flows/learning/flow.py wraps it in tasks; the
benchmark calls it in process): split the labelled decisions by time, fit a challenger on the older part, evaluate
it against the champion on the most recent part, decide.

Three challengers are scored: the lexical learner (issue 33: flows/learning/lexical_fit.py, judged by
flows/learning/lexical_gate.py, a replay of the labelled decisions and a conservative direct-method bound, which need
no exploration), the cluster correction fitted on the older part (flows/learning/fit.py) and the nearest-neighbour
residual fed the older part (flows/learning/residual.py; promoted, the service applies the live feedback memory,
which then moves with every new feedback until the next run). The lexical learner is fitted on every label (at most
LEXICAL_MAX_ROWS, the most recent), judged on them, each held out of its own fit, and promoted when it passes its
gate. Otherwise the cluster correction or the residual is promoted only when the doubly robust and the
inverse-propensity estimates of its advantage over the champion are both positive beyond their 95 % intervals
(flows/learning/off_policy.py: that needs exploration); if both are, the one with the larger doubly robust
advantage. The learning curve refits the cluster correction on growing prefixes of the older part and scores each
on the same held-out slice.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import numpy as np

from api.selection.learned import FORMAT, Correction, CorrectionParameters
from flows.learning.fit import fit_correction, unit_rows
from flows.learning.lexical_fit import fit_lexical
from flows.learning.lexical_gate import judge, parameters
from flows.learning.off_policy import compare_quality, corrected_quality
from flows.learning.residual import residual_quality
from flows.learning.table import Evidence

HOLDOUT_SHARE = 0.2
MIN_HELD_OUT = 50
CURVE_SHARES = (0.25, 0.5, 1.0)
ESTIMATOR = "dr"
LEXICAL_MAX_ROWS = 3_000  # the lexical learner reads the most recent labels only: its fit grows as rows^3


@dataclass(frozen=True)
class Outcome:
    parameters: CorrectionParameters
    evaluation: dict
    promote: bool
    labels: int

    def parameters_json(self) -> str:
        return msgspec.json.encode(self.parameters).decode()

    def evaluation_json(self) -> str:
        return msgspec.json.encode(self.evaluation, enc_hook=_plain).decode()


def _plain(value: object) -> object:
    """numpy scalars (the estimates) as Python numbers for JSON."""
    if isinstance(value, np.generic):
        return value.item()
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


def split(n: int, holdout_share: float = HOLDOUT_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """(older rows, most recent rows): evidence is oldest first."""
    cut = n - max(int(round(n * holdout_share)), min(MIN_HELD_OUT, n // 2))
    return np.arange(cut), np.arange(cut, n)


def fit(evidence: Evidence, feature_version: str) -> tuple[CorrectionParameters, dict]:
    """`evidence.features` are the router's embeddings of the queries (the feedback log's)."""
    return fit_correction(evidence.features, evidence.chosen_models(), evidence.chosen_quality(), evidence.label,
                          feature_version, evidence.features.shape[1])


def passes(result: dict, held_out: int) -> bool:
    # Both must say better beyond their interval: DR leans on the challenger's own predictions where the log could
    # not have taken its action, IPS does not (DR alone promoted a correction that lost 0.13 APGR on GSM8K in
    # benchmarks/learning_from_traffic.py).
    return bool(held_out >= MIN_HELD_OUT and result[ESTIMATOR]["difference"]["low"] > 0
                and result["ips"]["difference"]["low"] > 0)


def lexical_challenger(evidence: Evidence, champion: Correction | None, feature_version: str
                       ) -> tuple[CorrectionParameters | None, dict | None]:
    """The lexical learner fitted on the most recent LEXICAL_MAX_ROWS labels and judged on them
    (flows/learning/lexical_gate.py): (its parameters, its evaluation); (None, None) when no model has enough labels
    or the texts were not read."""
    if evidence.texts is None or len(evidence) == 0:
        return None, None
    recent = evidence.rows(np.arange(max(len(evidence) - LEXICAL_MAX_ROWS, 0), len(evidence)))
    fitted = fit_lexical(recent.texts, recent.features, recent.chosen_models(), recent.chosen_quality(),
                         recent.label, recent.propensity)
    if fitted is None:
        return None, None
    params = CorrectionParameters(format=FORMAT, feature_version=feature_version, centroids=[], models=[],
                                  weights=[], bias=[], lexical=parameters(fitted))
    # judged as calibrated (b_m added, as the recalibrated champion has it): the gate weighs the prompt-level part,
    # which is all that serving adds (api/selection/lexical.py, LexicalModel)
    calibrated = msgspec.structs.replace(params, lexical=msgspec.structs.replace(params.lexical, serve_intercept=True))
    learner = Correction.of("challenger", calibrated)
    challenger = corrected_quality(recent, learner)
    base = recent.router_quality.copy() if champion is None or champion.nearest_neighbour_residual \
        else corrected_quality(recent, champion)
    compared = compare_quality(recent, challenger, base)
    lexical = learner.lexical
    share = np.array([lexical.familiarity(e) for e in unit_rows(recent.features[:, : lexical.centroids.shape[1]])])
    return params, {**judge(recent, fitted, challenger, base, share), "rows": len(recent),
                    "dr": compared["dr"], "ips": compared["ips"], "logged_value": compared["logged_value"]}


def residual_parameters(feature_version: str) -> CorrectionParameters:
    """A version that serves the preference's feedback memory (api/selection/learned.py)."""
    return CorrectionParameters(format=FORMAT, feature_version=feature_version, centroids=[], models=[], weights=[],
                                bias=[], nearest_neighbour_residual=True)


def learn(evidence: Evidence, champion: Correction | None, feature_version: str,
          holdout_share: float = HOLDOUT_SHARE, curve: bool = True) -> Outcome:
    older, recent = split(len(evidence), holdout_share)
    train, held_out = evidence.rows(older), evidence.rows(recent)
    params, per_model = fit(train, feature_version)
    nn_quality = residual_quality(train, held_out)
    champion_quality = nn_quality if champion is not None and champion.nearest_neighbour_residual \
        else corrected_quality(held_out, champion)
    result = compare_quality(held_out, corrected_quality(held_out, Correction.of("challenger", params)),
                             champion_quality)
    nn_result = compare_quality(held_out, nn_quality, champion_quality)
    lexical, lexical_result = lexical_challenger(evidence, champion, feature_version)
    lexical_pass = lexical_result is not None and lexical_result["passed"]
    clusters_pass = bool(params.models) and passes(result, len(held_out))
    nn_pass = len(train) > 0 and passes(nn_result, len(held_out))
    residual_wins = nn_pass and (not clusters_pass or nn_result[ESTIMATOR]["difference"]["value"]
                                 > result[ESTIMATOR]["difference"]["value"])
    promote = bool(lexical_pass or clusters_pass or nn_pass)
    points = []
    if curve:
        for share in CURVE_SHARES:
            part = train.rows(np.arange(max(int(len(train) * share), 1)))
            if share == 1.0:
                scored = result  # the challenger itself
            else:
                scored = compare_quality(held_out, corrected_quality(
                    held_out, Correction.of("curve", fit(part, feature_version)[0])), champion_quality)
            points.append({"labels": len(part), "challenger": scored[ESTIMATOR]["challenger"]["value"],
                           "champion": scored[ESTIMATOR]["champion"]["value"]})
    kept = lexical_result if lexical_pass else nn_result if residual_wins else result
    kind = "lexical learner" if lexical_pass else "nearest-neighbour residual" if residual_wins \
        else "cluster correction"
    evaluation = {
        "estimator": ESTIMATOR, "trained_on": len(train), "held_out": len(held_out),
        "champion_version": champion.version_id if champion is not None else None,
        "kind": kind, "lexical": lexical_result,
        "challenger": kept[ESTIMATOR]["challenger"], "champion": kept[ESTIMATOR]["champion"],
        "difference": kept[ESTIMATOR]["difference"], "ips": kept["ips"], "dr": kept["dr"],
        "logged_value": kept["logged_value"], "changed_decisions": kept["changed_decisions"],
        "per_model": per_model, "learning_curve": points,
        "challengers": {"cluster correction": {e: result[e]["difference"] for e in ("dr", "ips")},
                        "nearest-neighbour residual": {e: nn_result[e]["difference"] for e in ("dr", "ips")},
                        "lexical learner": None if lexical_result is None else {
                            "replay_error_gain": lexical_result["replay_error_gain"],
                            "dm_difference": lexical_result["dm_difference"],
                            **{e: lexical_result[e]["difference"] for e in ("dr", "ips")}}},
        "decision": "promoted" if promote else "kept the champion",
    }
    served = lexical if lexical_pass else residual_parameters(feature_version) if residual_wins else params
    return Outcome(served, evaluation, promote, len(evidence))
