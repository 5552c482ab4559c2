"""How far a prompt is from the default router's training prompts, and where an unfamiliar one falls back to.

The default router learned its heads on a few kinds of prompt (MMLU, GSM8K, ARC-Challenge, HumanEval). A prompt
unlike all of them is routed by heads that never saw its kind, and at `cost_quality_tradeoff` 0 that can send it to a
model that is good at nothing it needs (docs/benchmarks.md, "Default router on benchmarks it never saw"). So:

- **Familiarity** of a prompt = its largest cosine similarity to the *prototypes* of the training kinds: a few
  spherical k-means centroids per kind of the training prompts' embeddings (the first `embedding.dim` entries of the
  router's own feature vector, centred on the training prompts' mean so that what every prompt shares does not count).
  One (prototypes x 128) product per request, computed on the vector the router already has.
- **The nearest kind** is the kind of the most similar prototype.
- **The fallback**: a prompt whose familiarity is below the threshold gets, for every candidate, the quality the
  router predicts for the nearest kind's typical prompt (the mean feature vector of that kind's training prompts):
  the candidates' evidence on that kind (their figures on the axes the kind needs, the outcomes the router trained
  on). At `cost_quality_tradeoff` 0 that is the candidate best evidenced on the nearest known kind. The other
  target training may choose, `overall`, is the mean of that quality over every known kind: the candidate best
  evidenced overall, for when the nearest kind is no guide (a maths word problem nearest to exam questions).

The threshold is learned at training time by leaving whole kinds out (flows/default_router/familiarity.py) and may
be None ("falling back did not pay"), in which case serving measures nothing and routes exactly as without this
module. Stored beside router.json as familiarity.json (written by the train-default-router flow).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FAMILIARITY_FILE = "familiarity.json"
TARGETS = ("nearest", "overall")  # what an unfamiliar prompt falls back to (module docstring)


def unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


@dataclass(frozen=True)
class Familiarity:
    """Prototypes of the training kinds, the kinds' typical feature vectors and the learned threshold."""

    kinds: tuple[str, ...]
    center: np.ndarray  # (d,) mean embedding of the training prompts
    prototypes: np.ndarray  # (p, d) unit rows, centred space
    prototype_kind: np.ndarray  # (p,) index into kinds
    kind_vectors: np.ndarray  # (k, feature dim) mean full feature vector of each kind's training prompts
    threshold: float | None = None  # below it a prompt falls back; None: never
    target: str = "nearest"  # one of TARGETS
    weight: float = 1.0  # how far an unfamiliar prompt's quality moves to the fallback's (1: all the way)
    record: dict = field(default_factory=dict)  # how the threshold was chosen (flows/default_router/familiarity.py)

    def __post_init__(self) -> None:
        if self.prototypes.ndim != 2 or self.prototypes.shape[1] != self.center.shape[0]:
            raise ValueError("familiarity prototypes do not match the embedding width")
        if len(self.prototype_kind) != len(self.prototypes) or len(self.kind_vectors) != len(self.kinds):
            raise ValueError("familiarity prototypes, kinds and kind vectors are not aligned")
        if self.target not in TARGETS:
            raise ValueError(f"familiarity target must be one of {TARGETS}")

    @property
    def dim(self) -> int:
        return int(self.center.shape[0])

    def measure(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(familiarity, nearest kind index) of feature vectors (n, feature dim), or scalars for one vector."""
        x = np.atleast_2d(vectors)[:, : self.dim].astype(np.float64, copy=False)
        similarity = unit_rows(x - self.center) @ self.prototypes.T
        best = similarity.argmax(axis=1)
        level = similarity[np.arange(len(x)), best]
        kind = self.prototype_kind[best]
        if np.ndim(vectors) == 1:
            return level[0], kind[0]
        return level, kind

    def fallback(self, quality: np.ndarray, kind_quality: np.ndarray, kind: np.ndarray | int) -> np.ndarray:
        """Unfamiliar prompts' quality: their predicted `quality` (n, m) or (m,) moved `weight` of the way to the
        fallback's, read from the (kinds, m) quality of each kind's typical prompt and their nearest `kind`. At
        weight 1 every such prompt of a kind gets the same figures (the dial cannot rank them); below 1 their order
        among themselves is kept and only the best-evidenced candidates gain."""
        target = kind_quality.mean(axis=0) if self.target == "overall" else kind_quality[kind]
        return (1.0 - self.weight) * quality + self.weight * target

    def with_threshold(self, threshold: float | None, record: dict | None = None, target: str | None = None,
                       weight: float | None = None) -> "Familiarity":
        return Familiarity(self.kinds, self.center, self.prototypes, self.prototype_kind, self.kind_vectors,
                           None if threshold is None else float(threshold), target or self.target,
                           self.weight if weight is None else float(weight),
                           self.record if record is None else record)

    def as_json(self) -> dict:
        return {"kinds": list(self.kinds), "center": _floats(self.center), "prototypes": _floats(self.prototypes),
                "prototype_kind": [int(k) for k in self.prototype_kind], "kind_vectors": _floats(self.kind_vectors),
                "threshold": self.threshold, "target": self.target, "weight": self.weight,
                "record": self.record}

    @classmethod
    def from_json(cls, spec: dict) -> "Familiarity":
        threshold = spec.get("threshold")
        return cls(tuple(spec["kinds"]), np.asarray(spec["center"], np.float64),
                   np.asarray(spec["prototypes"], np.float64), np.asarray(spec["prototype_kind"], np.int64),
                   np.asarray(spec["kind_vectors"], np.float32), None if threshold is None else float(threshold),
                   spec.get("target", "nearest"), float(spec.get("weight", 1.0)), spec.get("record", {}))

    def write(self, folder: Path) -> Path:
        path = Path(folder) / FAMILIARITY_FILE
        path.write_text(json.dumps(self.as_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return path


def read_familiarity(folder: Path) -> Familiarity | None:
    """The artefact folder's familiarity.json, or None where there is none (an artefact from before issue 33)."""
    path = Path(folder) / FAMILIARITY_FILE
    if not path.exists():
        return None
    return Familiarity.from_json(json.loads(path.read_text(encoding="utf-8")))


def _floats(x: np.ndarray) -> list:
    """Rounded to 7 digits: the JSON stays readable and the file small; cosines do not need more."""
    return np.round(np.asarray(x, np.float64), 7).tolist()
