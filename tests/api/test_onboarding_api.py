"""POST /v2/models/onboard and modelSelect's part in onboarding (api/model_figures/onboarding.py), with a fake
launcher: automatic onboarding can be turned off, an explicit start queues the flow once, a Prefect outage fails the
run with the reason and answers 503, and GET /v2/models/onboard/{run_id} reads the run back."""

from __future__ import annotations

import time

import pytest

from api.settings import reset_settings
from tests.support.fakes.launcher import FakeLauncher

CUSTOM = {"provider": "hosted", "model": "m-9", "is_custom": True, "context_length": 8192, "input_price": 0.1,
          "output_price": 0.2, "latency": 1.0}


@pytest.fixture
def manual(monkeypatch, providers_reachable):
    monkeypatch.setenv("SWITCHBOARD_ONBOARD_AUTO", "false")
    reset_settings()


@pytest.mark.usefixtures("manual")
def test_onboarding_started_by_hand_once_and_never_by_listing_when_turned_off(client, auth):
    launcher = client.app.state.services.onboarding.launcher = FakeLauncher()
    alice = auth("alice")
    listed = client.post("/v2/modelRouter/modelSelect", headers=alice, json={
        "messages": "Summarise the French revolution.", "llm_providers": [CUSTOM, {"provider": "openai",
                                                                                   "model": "gpt-4o"}]})
    assert listed.status_code == 200 and listed.headers["x-switchboard-no-evidence"] == "hosted/m-9"
    time.sleep(0.3)  # had it started one, the background thread would have queued it by now
    assert launcher.triggered == []

    body = {"provider": "hosted", "model": "m-9", "input_price": 0.1, "output_price": 0.2}
    first = client.post("/v2/models/onboard", headers=alice, json=body)
    assert first.status_code == 202 and first.json()["created"] is True and first.json()["status"] == "queued"
    assert client.post("/v2/models/onboard", headers=alice, json=body).json()["created"] is False
    assert launcher.triggered == [("onboard-model/onboard-model", {"run_id": first.json()["run_id"]})]
    status = client.get(f"/v2/models/onboard/{first.json()['run_id']}", headers=alice)
    assert status.status_code == 200 and status.json()["figures"] == [] and status.json()["calls"] == 0
    unknown = client.post("/v2/models/onboard", headers=alice, json={**body, "extra": 1})
    assert unknown.status_code == 422  # the body's fields are exactly these


@pytest.mark.usefixtures("manual")
def test_a_prefect_outage_fails_the_run_with_the_reason_and_answers_503(client, auth):
    launcher = client.app.state.services.onboarding.launcher = FakeLauncher()
    launcher.fail_with = ConnectionError("refused")
    alice = auth("alice")
    down = client.post("/v2/models/onboard", headers=alice, json={"provider": "hosted", "model": "m-3",
                                                                  "input_price": 1, "output_price": 1})
    assert down.status_code == 503 and down.json()["error"]["code"] == "FLOW_UNAVAILABLE"
    [run] = client.app.state.services.store.model_figures.onboardings("alice")
    assert run.status == "failed" and "Prefect server is not reachable" in run.error
    launcher.fail_with = None  # a failed run is started again
    again = client.post("/v2/models/onboard", headers=alice, json={"provider": "hosted", "model": "m-3",
                                                                   "input_price": 1, "output_price": 1})
    assert again.status_code == 202 and again.json()["created"] is True
