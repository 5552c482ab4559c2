"""A model of the deployments file (api/deployments.py) as a prompt-optimization target by its own name, no
is_custom description: validated, priced by the file, and called on its deployment with the deployment's own
model id and key, ahead of the provider's SWITCHBOARD_LOCAL_API_BASE (the file comes first)."""

from __future__ import annotations

import pytest

from api.settings import reset_settings
from tests.prompt_optimization.test_custom_models import JUDGE, REFLECTION, servers  # noqa: F401 (a fixture)
from tests.support.fakes.openai_server import FakeOpenAI, capital_goldens, teach_goldens
from tests.support.optimization import OPTIMIZE, body, run_flow


@pytest.mark.usefixtures("prefect_harness")
def test_a_deployed_model_is_a_target_by_its_own_name(servers, client, launcher, optimizer_headers,  # noqa: F811
                                                      monkeypatch, tmp_path):
    local, _ = servers
    deployed = FakeOpenAI().start()
    try:
        (tmp_path / "deployments.toml").write_text(f"""
[models."local/llama3-8b"]
context_length = 8192
deployments = [{{model = "llama-3-8b-instruct", api_base = "{deployed.base_url}", api_key_env = "GPU_KEY"}}]
""")
        monkeypatch.setenv("SWITCHBOARD_DEPLOYMENTS", str(tmp_path / "deployments.toml"))
        monkeypatch.setenv("GPU_KEY", "sk-gpu-0123456789")
        reset_settings()
        train, test = capital_goldens(4), capital_goldens(5, start=4)
        teach_goldens(deployed, train + test)
        h = optimizer_headers()
        r = client.post(OPTIMIZE, headers=h, json=body(
            train_goldens=train, test_goldens=test, prototype_mode=True,
            target_models=[{"provider": "local", "model": "llama3-8b"}], judge_model=JUDGE,
            reflection_model=REFLECTION))
        assert r.status_code == 200, r.text
        state, _ = run_flow(r.json()["optimization_run_id"])
        assert state.is_completed(), state.message
        results = client.get(f"/v2/prompt/optimizeResults/{r.json()['optimization_run_id']}", headers=h).json()
        assert [t["model_name"] for t in results["target_models"]] == ["local/llama3-8b"]
        assert results["target_models"][0]["result_status"] == "completed"
        assert {k for k in deployed.keys} == {("llama-3-8b-instruct", "Bearer sk-gpu-0123456789")}
        assert local.calls == []  # the provider's own base URL was not used: the file comes first
    finally:
        deployed.stop()
