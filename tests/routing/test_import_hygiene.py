"""The serving path imports no training, orchestration or LLM-client code (house rule 3)."""

import json
import subprocess
import sys

FORBIDDEN = ("prefect", "dspy", "litellm", "polars", "sklearn", "xgboost", "scipy", "torch", "api.routing.training")


def test_serving_modules_import_nothing_heavy():
    code = (
        "import sys, json\n"
        "import api.routing, api.routing.text, api.routing.features, api.routing.router, api.routing.policy\n"
        "import api.routing.default_router, api.routing.evaluation, api.routing.capability\n"
        "from api.routing.default_router import load_default_router\n"
        "r = load_default_router()\n"
        "from api.routing.text import count_tokens\n"
        "count_tokens('hello')\n"
        "r.predict_quality(r.featurizer.featurize('hi'), [])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []
