"""Training states as modelSelect sees them: in progress, failed, cancel-on-retrain, override, restart, delete."""

from __future__ import annotations

from litestar.testing import TestClient

from tests.support.envelopes import error
from tests.support.fakes.launcher import FakeLauncher
from tests.support.routes import SELECT
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

PAIR = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]


def select(client, headers, preference_id):
    return client.post(SELECT, headers=headers, json={"messages": "What is 12 * 7?", "llm_providers": PAIR,
                                                     "preference_id": preference_id})


def test_while_training_model_select_asks_to_wait(client, auth, upload):
    h = auth()
    pid = upload(h).json()["preference_id"]
    r = select(client, h, pid)
    body = error(r, 409, "ROUTER_TRAINING_IN_PROGRESS")
    wait = int(r.headers["retry-after"])  # no training completed yet: the default typical time, less the job's age
    assert 2 <= wait <= 20 and f"retry in {wait} seconds" in body["message"]
    assert body["details"]["job_status"] == "queued" and body["details"]["retry_after_seconds"] == wait
    store = client.app.state.services.store
    store.jobs.update(store.routers.state(pid).job.job_id, status="processing")  # what the flow does (over RPC)
    assert error(select(client, h, pid), 409, "ROUTER_TRAINING_IN_PROGRESS")["details"]["job_status"] == "processing"


def test_after_a_failure_model_select_says_why(client, auth, upload):
    h = auth()
    pid = upload(h).json()["preference_id"]
    store = client.app.state.services.store
    store.jobs.update(store.routers.state(pid).job.job_id, status="failed", error="ValueError: all scores are equal")
    body = error(select(client, h, pid), 400, "ROUTER_TRAINING_FAILED")
    assert "failed" in body["message"] and "all scores are equal" in body["message"]
    assert "trainCustomRouter" in body["message"]


def test_a_preference_without_training_uses_the_default_router(client, auth):
    h = auth()
    pid = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=h).json()["preference_id"]
    assert select(client, h, pid).status_code == 200


def test_training_again_cancels_the_running_job(client, auth, upload, launcher):
    h = auth()
    pid = upload(h).json()["preference_id"]
    store = client.app.state.services.store
    first = store.routers.state(pid).job
    store.jobs.update(first.job_id, status="processing")
    assert upload(h, preference_id=pid, csv=csv_bytes(50, seed=1)).json()["preference_id"] == pid
    assert store.jobs.get(first.job_id).status == "cancelled"
    assert "superseded" in store.jobs.get(first.job_id).error
    assert launcher.cancelled == ["flow-run-1"]  # the earlier flow run is stopped in Prefect too
    second = store.routers.state(pid).job
    assert second.job_id != first.job_id and second.status == "queued" and second.flow_run_id == "flow-run-2"
    # A late result of the superseded run is refused: the live router is always the newest training.
    assert store.routers.publish(first.job_id, "/nowhere", "{}") is None
    assert store.routers.state(pid).live is None
    error(select(client, h, pid), 409, "ROUTER_TRAINING_IN_PROGRESS")


def test_override_false_refuses_to_replace(client, auth, upload, launcher):
    h = auth()
    pid = upload(h).json()["preference_id"]
    body = error(upload(h, preference_id=pid, override="false"), 409, "CUSTOM_ROUTER_EXISTS")
    assert "override=true" in body["message"]
    assert len(launcher.triggered) == 1
    assert upload(h, preference_id=pid, override="true").status_code == 200


def test_deleting_the_preference_cancels_its_training(client, auth, upload):
    h = auth()
    pid = upload(h).json()["preference_id"]
    store = client.app.state.services.store
    job = store.routers.state(pid).job
    assert client.delete(f"/v2/preferences/userPreferenceDelete/{pid}", headers=h).status_code == 200
    assert store.jobs.get(job.job_id).status == "cancelled"
    assert store.routers.publish(job.job_id, "/nowhere", "{}") is None
    error(select(client, h, pid), 404, "PREFERENCE_NOT_FOUND")


def test_a_restart_never_leaves_a_job_open(data_dir):
    from api.app import create_app

    with TestClient(create_app(publish_owner=False)) as first:
        first.app.state.services.router_training.launcher = FakeLauncher()
        h = {"Authorization": f"Bearer {first.app.state.services.store.accounts.issue_key('alice').key}"}
        files = {"dataset_file": ("e.csv", csv_bytes(), "text/csv")}
        form = {"language": "english", "llm_providers": LLM_PROVIDERS, "prompt_column": "prompt", "maximize": "true"}
        pid = first.post("/v2/pzn/trainCustomRouter", data=form, files=files, headers=h).json()["preference_id"]
        store = first.app.state.services.store
        store.jobs.update(store.routers.state(pid).job.job_id, status="processing")
    with TestClient(create_app(publish_owner=False)) as second:
        job = second.app.state.services.store.routers.state(pid).job
        assert job.status == "failed" and "restart" in job.error and "processing" in job.error
        assert second.app.state.services.store.jobs.list_open() == []
        body = error(select(second, h, pid), 400, "ROUTER_TRAINING_FAILED")
        assert "restart" in body["message"]
