"""A preference with a trained custom router, read back (its models, when it was trained, its held-out accuracy
against the best single model) and named by the gateway as `switchboard/<preference_id>` with no candidates in the
request nor stored: it routes among the router's own models."""

from __future__ import annotations

import pytest
from litestar.testing import TestClient

from tests.support.custom_training import prepare
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.synthetic import MODELS

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_a_trained_router_reads_back_and_routes_the_gateway_among_its_models(data_dir, monkeypatch):
    from api.app import create_app
    from api.settings import reset_settings
    from flows.train_custom_router import train_custom_router

    fake = FakeOpenAI().start()
    try:
        monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", fake.base_url)
        monkeypatch.setenv("SWITCHBOARD_LLM_API_KEY", "sk-fake")
        reset_settings()
        params, key = prepare()
        train_custom_router(**params)
        pid, h = params["preference_id"], {"Authorization": f"Bearer {key}"}
        trained_on = [f"{p}/{m}" for p, m in MODELS]
        with TestClient(create_app(publish_owner=False)) as client:
            detail = client.get(f"/v2/preferences/{pid}", headers=h).json()
            router = detail["custom_router"]
            assert detail["has_custom_router"] is True and detail["training_status"] == "completed"
            assert router["models"] == trained_on and router["trained_at"]
            assert router["best_single_model"] in trained_on
            assert 0.0 <= router["best_single_accuracy"] <= 1.0 and 0.0 <= router["held_out_accuracy"] <= 1.0
            answer = client.post("/v1/chat/completions", headers=h, json={
                "model": f"switchboard/{pid}", "messages": [{"role": "user", "content": "Which bridge is famous?"}]})
            assert answer.status_code == 200, answer.text
            assert answer.json()["model"] in trained_on
            assert fake.bodies[-1]["model"] in {m for _, m in MODELS}
            mallory = client.app.state.services.store.accounts.issue_key("mallory").key
            other = client.get(f"/v2/preferences/{pid}", headers={"Authorization": f"Bearer {mallory}"})
            assert other.status_code == 404  # another user's preference reads as unknown
    finally:
        fake.stop()
