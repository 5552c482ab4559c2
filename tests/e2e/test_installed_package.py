"""A non-editable install serves: the wheel built from the repository's files, installed into a fresh virtual
environment from requirements-serve.lock alone (no test extras; offline, from the uv cache `make install` filled),
answers modelSelect from outside the checkout, with the default router, capability prior and catalogue it carries as package data (setup.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"

pytestmark = pytest.mark.e2e

SERVE_ONE_REQUEST = textwrap.dedent("""
    import json, sys
    import api
    from litestar.testing import TestClient
    from api.app import create_app

    with TestClient(create_app(publish_owner=False)) as client:
        key = client.app.state.services.store.accounts.issue_key("u").key
        response = client.post("/v2/modelRouter/modelSelect", headers={"Authorization": f"Bearer {key}"}, json={
            "messages": [{"role": "user", "content": "Prove that there are infinitely many primes."}],
            "llm_providers": [{"provider": "openai", "model": "gpt-4o"},
                              {"provider": "openai", "model": "gpt-4o-mini"}]})
        models = client.get("/v2/models").json()["total"]
    print(json.dumps({"module": api.__file__, "status": response.status_code, "body": response.json(),
                      "models": models}))
""")


def run(*argv: str | Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, **kwargs)


def test_a_wheel_installed_elsewhere_serves_model_select(tmp_path: Path) -> None:
    source = tmp_path / "source"
    tracked = run("git", "ls-files", "--cached", "--others", "--exclude-standard", cwd=REPO).stdout.split()
    for name in tracked:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    run(UV, "build", "--wheel", "--offline", "--out-dir", tmp_path / "dist", source)
    wheel = next((tmp_path / "dist").glob("switchboard-*.whl"))
    venv = tmp_path / "venv"
    run(UV, "venv", "--quiet", "--python", sys.executable, venv)
    python = venv / "bin" / "python"
    run(UV, "pip", "sync", "--quiet", "--offline", "--python", python, REPO / "requirements-serve.lock")
    run(UV, "pip", "install", "--quiet", "--offline", "--no-deps", "--python", python, wheel)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PREFECT_API_URL")}
    env.update(SWITCHBOARD_DATA_DIR=str(tmp_path / "data"), LITELLM_LOCAL_MODEL_COST_MAP="True")
    out = run(python, "-c", SERVE_ONE_REQUEST, cwd=elsewhere, env=env, timeout=300).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert Path(result["module"]).is_relative_to(venv), result["module"]  # the installed copy, not the checkout
    assert result["status"] == 200, result
    assert result["body"]["providers"][0]["model"] in ("gpt-4o", "gpt-4o-mini")
    assert result["models"] > 150  # the catalogue snapshot came with the package
