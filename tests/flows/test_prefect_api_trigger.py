"""Submitting a flow run by deployment name (flows/prefect_api.py, `trigger`) against a real Prefect server: the
deployment's id is looked up once and remembered, a deployment registered again under a new id is found again, and
an unknown name says so (api/launcher.py turns that into "not registered yet")."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest

from api.launcher import why_not_queued
from flows import prefect_api

NAME = "trigger-probe/trigger-probe"


@pytest.fixture
def deployment(prefect_harness):
    from prefect import flow

    @flow(name="trigger-probe")
    def probe(job_id: str, flag: bool = False) -> None:
        pass

    def register() -> UUID:
        return probe.to_deployment(name="trigger-probe").apply()

    prefect_api._deployment_ids.clear()
    yield register
    prefect_api._deployment_ids.clear()


def _read(flow_run_id: str):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(UUID(flow_run_id))


def _delete(deployment_id: UUID) -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.delete_deployment(deployment_id)


def test_a_submission_creates_a_scheduled_run_and_remembers_the_deployment(deployment):
    first_id = deployment()
    run_id = asyncio.run(prefect_api.trigger(NAME, {"job_id": "j1", "flag": True}, tags=["switchboard"]))
    run = _read(run_id)
    assert run.deployment_id == first_id and run.parameters == {"job_id": "j1", "flag": True}
    assert "switchboard" in run.tags and run.state.type.value == "SCHEDULED"
    assert list(prefect_api._deployment_ids.values()) == [first_id]

    second = _read(asyncio.run(prefect_api.trigger(NAME, {"job_id": "j2"})))  # from the remembered id
    assert second.deployment_id == first_id and second.parameters["job_id"] == "j2"


def test_a_deployment_registered_again_under_a_new_id_is_found_again(deployment):
    old_id = deployment()
    asyncio.run(prefect_api.trigger(NAME, {"job_id": "j1"}))
    _delete(old_id)
    new_id = deployment()
    assert new_id != old_id
    run = _read(asyncio.run(prefect_api.trigger(NAME, {"job_id": "j3"})))
    assert run.deployment_id == new_id and list(prefect_api._deployment_ids.values()) == [new_id]


def test_an_unknown_deployment_is_reported_as_not_registered(deployment):
    with pytest.raises(Exception) as caught:
        asyncio.run(prefect_api.trigger("no-such-flow/no-such-deployment", {}))
    assert "not registered yet" in why_not_queued(caught.value, "no-such-flow/no-such-deployment")
    assert prefect_api._deployment_ids == {}


def test_without_a_configured_server_nothing_starts_and_the_reason_names_the_setting():
    # Outside the harness no Prefect server is configured (tests/conftest.py drops PREFECT_API_URL): Prefect's
    # client would start a temporary server in this process, whose runs nobody executes.
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        with pytest.raises(prefect_api.NoPrefectServer) as raised:
            asyncio.run(prefect_api.trigger(NAME, {"job_id": "j"}))
    reason = why_not_queued(raised.value, NAME)
    assert "PREFECT_API_URL" in reason and "switchboard serve" in reason and "http" not in reason
