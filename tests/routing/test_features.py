"""The shared feature module: deterministic, versioned, cheap."""

import numpy as np

from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import FEATURE_VERSION, HAND_FEATURE_NAMES, Featurizer, hand_features


def test_feature_version_is_recorded_in_the_artefact():
    import json

    enc = json.loads((DEFAULT_ARTEFACT_DIR / "encoder.json").read_text())
    spec = json.loads((DEFAULT_ARTEFACT_DIR / "router.json").read_text())
    assert enc["feature_version"] == spec["feature_version"] == FEATURE_VERSION


def test_featurize_is_deterministic_and_shaped():
    fz = Featurizer.load(DEFAULT_ARTEFACT_DIR)
    text = "Explain the difference between TCP and UDP. Include code: ```def f(x): return x```"
    a = fz.featurize(text, tools_present=True, n_messages=3)
    b = Featurizer.load(DEFAULT_ARTEFACT_DIR).featurize(text, tools_present=True, n_messages=3)
    assert a.vector.dtype == np.float32 and a.vector.shape == (fz.dim,)
    assert np.array_equal(a.vector, b.vector)
    emb = a.vector[: fz.embedding.dim]
    assert abs(float(np.linalg.norm(emb)) - 1.0) < 1e-4
    hand = dict(zip(HAND_FEATURE_NAMES, a.vector[fz.embedding.dim :]))
    assert hand["tools_present"] == 1.0 and hand["log_code_markers"] > 0
    # empty and huge texts are fine
    assert np.all(fz.featurize("").vector[: fz.embedding.dim] == 0)
    big = fz.featurize("word " * 50_000)
    assert np.all(np.isfinite(big.vector))


def test_hand_features_markers():
    mc = hand_features("Which?\nA. one\nB. two\nC. three\nD. four\nAnswer:")
    names = list(HAND_FEATURE_NAMES)
    assert mc[names.index("multiple_choice")] == 1.0
    math_q = hand_features("Compute 3 + 4 = ? and 12 / 4")
    assert math_q[names.index("log_math_operators")] > 0
    assert hand_features("plain words")[names.index("log_math_operators")] == 0
