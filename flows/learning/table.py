"""The training table of a preference: its labelled decisions from the analysts' view `decision_evidence`
(storage/analytics_views.sql), as aligned numpy arrays; the features are the router's embedding of each query, as
its feedback row recorded it. Hashed sessions never enter: they take no feedback, the view gives them no features,
and they are filtered out by name as well. The text the router scored is read back from the session's stored
messages (unhashed sessions only: a hashed one has none) for the lexical learner (flows/learning/lexical_fit.py),
held in memory for the run and never written anywhere else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from api.routing.text import MessageShapeError, routing_text

if TYPE_CHECKING:
    import pyarrow as pa

EVIDENCE_SQL = """
SELECT e.session_id, e.created_at, e.eligible, e.router_quality, e.penalty_position, e.policy_lambda, e.chosen_index,
       e.propensity, e.label, e.label_source, e.features, s.content
FROM decision_evidence e
LEFT JOIN (SELECT session_id, content FROM events_sessions WHERE NOT hashed) s ON s.session_id = e.session_id
WHERE e.preference_id = ? AND e.label IS NOT NULL AND NOT e.hashed AND e.features IS NOT NULL
  AND e.router_quality IS NOT NULL AND e.propensity IS NOT NULL
ORDER BY e.created_at, e.session_id
"""

LABEL_COUNTS_SQL = """
SELECT preference_id, count(*) AS labels
FROM decision_evidence
WHERE preference_id IS NOT NULL AND label IS NOT NULL AND NOT hashed AND features IS NOT NULL
  AND router_quality IS NOT NULL AND propensity IS NOT NULL
GROUP BY preference_id
"""


@dataclass(frozen=True)
class Evidence:
    """n labelled decisions, oldest first; candidates padded to k columns (`valid` marks real ones)."""

    session_ids: list[str]
    models: list[str]            # the model vocabulary; `model` indexes it
    model: np.ndarray            # (n, k) int, -1 where padded
    valid: np.ndarray            # (n, k) bool
    router_quality: np.ndarray   # (n, k)
    position: np.ndarray         # (n, k) the policy's 0..1 cost/latency position
    lam: np.ndarray              # (n,) inf: the cheapest (cost_quality_tradeoff 10)
    chosen: np.ndarray           # (n,) column of the logged action
    propensity: np.ndarray       # (n,)
    label: np.ndarray            # (n,) 0/1
    features: np.ndarray         # (n, d) the router's embedding of each query
    # (n,) bool: the label is the caller's feedback, not a judge's verdict (None: every label is)
    caller_feedback: np.ndarray | None = None
    # the text the router scored for each decision ("" where the stored messages were unreadable; None: not read)
    texts: list[str] | None = None

    def __len__(self) -> int:
        return len(self.session_ids)

    def rows(self, index: np.ndarray) -> "Evidence":
        return Evidence([self.session_ids[i] for i in index], self.models, self.model[index], self.valid[index],
                        self.router_quality[index], self.position[index], self.lam[index], self.chosen[index],
                        self.propensity[index], self.label[index], self.features[index],
                        None if self.caller_feedback is None else self.caller_feedback[index],
                        None if self.texts is None else [self.texts[i] for i in index])

    def chosen_models(self) -> list[str]:
        return [self.models[m] for m in self.model[np.arange(len(self)), self.chosen]]

    def chosen_quality(self) -> np.ndarray:
        return self.router_quality[np.arange(len(self)), self.chosen]


def _padded(column: "pa.ChunkedArray", width: int, fill: float) -> np.ndarray:
    # lazy: pyarrow loads in the flow run, not in the flow runner that imports every flow (docs/architecture.md)
    import pyarrow.compute as pc

    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(column).to_numpy(zero_copy_only=False)
    out = np.full((len(lengths), width), fill, dtype=np.float64)
    mask = np.arange(width)[None, :] < lengths[:, None]
    out[mask] = flat
    return out


def from_arrow(table: "pa.Table") -> Evidence:
    # lazy: as in _padded
    import pyarrow.compute as pc

    n = table.num_rows
    eligible = table.column("eligible")
    lengths = pc.list_value_length(eligible).to_numpy(zero_copy_only=False) if n else np.zeros(0, dtype=int)
    width = int(lengths.max()) if n else 1
    names = pc.list_flatten(eligible).to_pylist() if n else []
    models = sorted(set(names))
    lookup = {m: i for i, m in enumerate(models)}
    valid = np.arange(width)[None, :] < lengths[:, None]
    model = np.full((n, width), -1, dtype=np.int64)
    model[valid] = [lookup[m] for m in names]
    features = table.column("features")
    d = int(pc.list_value_length(features).to_numpy(zero_copy_only=False)[0]) if n else 0
    feats = pc.list_flatten(features).to_numpy(zero_copy_only=False).reshape(n, d).astype(np.float64)
    lam = table.column("policy_lambda").to_numpy(zero_copy_only=False).astype(np.float64)
    return Evidence(
        session_ids=table.column("session_id").to_pylist(), models=models, model=model, valid=valid,
        router_quality=_padded(table.column("router_quality"), width, 0.0),
        position=_padded(table.column("penalty_position"), width, 0.0),
        lam=np.where(np.isnan(lam), np.inf, lam),
        chosen=table.column("chosen_index").to_numpy(zero_copy_only=False).astype(np.int64) - 1,  # SQL is 1-based
        propensity=table.column("propensity").to_numpy(zero_copy_only=False).astype(np.float64),
        label=table.column("label").to_numpy(zero_copy_only=False).astype(np.float64),
        features=feats,
        caller_feedback=np.array([s == "feedback" for s in table.column("label_source").to_pylist()], dtype=bool),
        texts=[scored_text(c) for c in table.column("content").to_pylist()] if "content" in table.column_names
        else None)


def scored_text(content: str | None) -> str:
    """The text the router scored (api/routing/text.py routing_text) of a session's stored messages."""
    if not content:
        return ""
    try:
        return routing_text(msgspec.json.decode(content))
    except (msgspec.DecodeError, MessageShapeError):
        return ""


def load_evidence(conn, preference_id: str) -> Evidence:
    """`conn`: an analysts' connection (storage/analytics.py connect())."""
    return from_arrow(conn.sql(EVIDENCE_SQL, params=[preference_id]).to_arrow_table())


def label_counts(conn) -> dict[str, int]:
    return {p: int(n) for p, n in conn.execute(LABEL_COUNTS_SQL).fetchall()}
