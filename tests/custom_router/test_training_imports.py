"""Training imports xgboost without scikit-learn (flows/custom_router/training.py, `_xgboost`): xgboost's import
would otherwise load scikit-learn and scipy.stats for wrappers training never uses."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from flows.custom_router import training
xgb = training._xgboost()
assert "sklearn" not in sys.modules, "xgboost's import loaded scikit-learn"
import numpy as np
booster = xgb.train({"objective": "reg:logistic", "nthread": 1}, xgb.DMatrix(np.eye(4), label=[0, 1, 0, 1]), 2)
assert booster.predict(xgb.DMatrix(np.eye(4))).shape == (4,)
import sklearn.base  # later imports of scikit-learn still work in the same process
print("ok")
"""


def test_xgboost_is_imported_without_scikit_learn_and_scikit_learn_still_imports():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
