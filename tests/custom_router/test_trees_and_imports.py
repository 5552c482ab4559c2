"""The numpy tree evaluator matches XGBoost (import hygiene of the serving side: tests/test_import_hygiene.py)."""

from __future__ import annotations

import numpy as np


def test_numpy_evaluation_matches_xgboost(tmp_path):
    import xgboost as xgb

    from api.custom_router.trees import TreeEnsembles

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 12)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 3] > 0).astype(float) * 0.8 + 0.1
    x[rng.random(x.shape) < 0.05] = np.nan  # missing values follow default_left
    paths = []
    for seed in range(2):
        booster = xgb.train({"objective": "reg:logistic", "max_depth": 4, "eta": 0.3, "seed": seed,
                             "subsample": 0.8, "nthread": 1}, xgb.DMatrix(x, label=y), num_boost_round=20)
        paths.append(tmp_path / f"b{seed}.json")
        booster.save_model(str(paths[-1]))
    ensembles = TreeEnsembles([[paths[0]], paths])
    boosters = [xgb.Booster(model_file=str(p)) for p in paths]
    margin = [b.predict(xgb.DMatrix(x), output_margin=True) for b in boosters]
    expected_single = 1 / (1 + np.exp(-margin[0]))
    expected_mean = 1 / (1 + np.exp(-(margin[0] + margin[1]) / 2))
    got = np.stack([ensembles.predict(row) for row in x])
    np.testing.assert_allclose(got[:, 0], expected_single, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], expected_mean, rtol=1e-5, atol=1e-6)
