"""The `housekeeping` flow against a temp data dir and a real (throw-away) Prefect server."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from api.settings import get_settings, reset_settings
from storage import events
from storage.store import LocalStore

# Prefect is imported inside the tests, never at collection: importing it fixes Prefect's settings for the whole
# pytest process, which would hide a PREFECT_API_URL that another test sets later.
pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture(scope="module")
def sample_flows():
    from prefect import flow

    @flow(name="test-finishes")
    def finishes() -> int:
        return 42

    @flow(name="test-breaks")
    def breaks() -> None:
        raise ValueError("kaput in the flow body")

    return finishes, breaks


def flow_run_id_of(state) -> str:
    return str(state.state_details.flow_run_id)


async def flow_run_id_in(some_flow, state) -> str:
    """A flow run that exists on the server in `state` and never ran."""
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        run = await client.create_flow_run(some_flow, state=state)
    return str(run.id)


async def prefect_state_of(flow_run_id: str):
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return (await client.read_flow_run(uuid.UUID(flow_run_id))).state


def backdate(store: LocalStore, job_id: str, minutes: float) -> None:
    store.database.run("UPDATE jobs SET updated_at = ? WHERE job_id = ?",
               [datetime.now(timezone.utc) - timedelta(minutes=minutes), job_id])


def test_housekeeping_reconciles_jobs_and_compacts_events(data_dir: Path, sample_flows, monkeypatch):
    from prefect.states import Pending, Running, Scheduled

    from flows.housekeeping import housekeeping

    finishes, breaks = sample_flows
    settings = get_settings()
    assert settings.data_dir == data_dir.resolve()

    completed_run = finishes(return_state=True)
    assert completed_run.is_completed()
    failed_run = breaks(return_state=True)
    assert failed_run.is_failed()
    scheduled_run = asyncio.run(flow_run_id_in(finishes, Scheduled()))  # no worker took it yet
    # Pending: a worker took it and, like a worker killed with its run, never moved it on. Running: progressing.
    pending_run = asyncio.run(flow_run_id_in(finishes, Pending()))
    running_run = asyncio.run(flow_run_id_in(finishes, Running()))

    store = LocalStore(settings.db_path)
    never_started = store.jobs.create("train-custom-router", "alice", "p1")
    backdate(store, never_started.job_id, minutes=20)
    just_created = store.jobs.create("train-custom-router", "alice", "p2")  # not stale yet: left alone
    backdate(store, just_created.job_id, minutes=5)
    finished = store.jobs.create("optimize-prompt", "alice", "r1", status="processing")
    store.jobs.update(finished.job_id, flow_run_id=flow_run_id_of(completed_run))
    crashed = store.jobs.create("optimize-prompt", "alice", "r2", status="processing")
    store.jobs.update(crashed.job_id, flow_run_id=flow_run_id_of(failed_run))
    unknown_run = str(uuid.uuid4())
    vanished = store.jobs.create("optimize-prompt", "alice", "r3", status="queued")
    store.jobs.update(vanished.job_id, flow_run_id=unknown_run)
    waiting = store.jobs.create("optimize-prompt", "alice", "r4", status="queued")
    store.jobs.update(waiting.job_id, flow_run_id=scheduled_run)
    taken = store.jobs.create("train-custom-router", "alice", "p3", status="queued")
    store.jobs.update(taken.job_id, flow_run_id=pending_run)
    progressing = store.jobs.create("optimize-prompt", "alice", "r6", status="processing")
    store.jobs.update(progressing.job_id, flow_run_id=running_run)
    already_failed = store.jobs.create("optimize-prompt", "alice", "r5")
    store.jobs.update(already_failed.job_id, status="failed", error="the original reason",
                     flow_run_id=str(uuid.uuid4()))
    backdate(store, already_failed.job_id, minutes=60)
    store.close()  # the flow opens the database itself (no owner is running)

    today = datetime.now(timezone.utc).date()
    old_day, recent_day = today - timedelta(days=4), today
    for day in (old_day, recent_day):
        for i in range(3):
            events.append(settings.events_dir, "sessions", pa.table({"n": [i, i + 10]}), day=day)
    events.append(settings.events_dir, "llm_usage", pa.table({"tokens": [1]}), day=old_day)
    events.append(settings.events_dir, "llm_usage", pa.table({"tokens": [2]}), day=old_day)

    summary = asyncio.run(housekeeping())

    assert summary == {"jobs_reconciled": 4, "event_files_compacted": 3 + 2, "router_versions_removed": 0,
                       "datasets_removed": 0}  # pruning itself: tests/storage/test_retention.py
    store = LocalStore(settings.db_path)
    try:
        job = store.jobs.get(never_started.job_id)
        assert job.status == "failed" and "never handed to a flow run" in job.error
        assert store.jobs.get(just_created.job_id).status == "created"
        job = store.jobs.get(finished.job_id)
        assert (job.status, job.error) == ("completed", None)
        job = store.jobs.get(crashed.job_id)
        assert job.status == "failed" and "with ValueError" in job.error  # the kind of failure Prefect reported
        assert "kaput" not in job.error  # not the exception's own text: it is in the flow run's log
        job = store.jobs.get(vanished.job_id)
        assert job.status == "failed" and "unknown to the Prefect server" in job.error and unknown_run in job.error
        job = store.jobs.get(waiting.job_id)
        assert (job.status, job.error) == ("queued", None)
        job = store.jobs.get(already_failed.job_id)
        assert (job.status, job.error) == ("failed", "the original reason")
        job = store.jobs.get(taken.job_id)  # Pending for less than SWITCHBOARD_PENDING_RUN_TIMEOUT_S
        assert (job.status, job.error) == ("queued", None)
        assert {j.job_id for j in store.jobs.list_open()} == {just_created.job_id, waiting.job_id, taken.job_id,
                                                              progressing.job_id}
    finally:
        store.close()

    def files(table: str, day) -> list[Path]:
        return [p for p in events.parts(settings.events_dir, table) if p.parent.name == f"day={day.isoformat()}"]

    assert len(files("sessions", old_day)) == 1 and len(files("sessions", recent_day)) == 3
    assert len(files("llm_usage", old_day)) == 1
    import duckdb

    total = duckdb.sql(f"SELECT count(*), sum(n) FROM read_parquet('{events.glob(settings.events_dir, 'sessions')}',"
                       " hive_partitioning = true)").fetchall()[0]
    assert total == (12, 2 * 3 * (0 + 10) + 2 * 2 * (1 + 2))

    # A second pass has nothing left to do but the run that has now stayed Pending past the bound (0 here): it is
    # crashed in Prefect and its job failed; the Scheduled and the Running runs are left as they are.
    monkeypatch.setenv("SWITCHBOARD_PENDING_RUN_TIMEOUT_S", "0")
    reset_settings()  # data_dir resets them again after the test
    assert asyncio.run(housekeeping()) == {"jobs_reconciled": 1, "event_files_compacted": 0,
                                           "router_versions_removed": 0, "datasets_removed": 0}
    state = asyncio.run(prefect_state_of(pending_run))
    assert state.type.value == "CRASHED" and "never started" in state.message
    assert [asyncio.run(prefect_state_of(r)).type.value for r in (scheduled_run, running_run)] == ["SCHEDULED",
                                                                                                 "RUNNING"]
    store = LocalStore(settings.db_path)
    try:
        job = store.jobs.get(taken.job_id)
        assert job.status == "failed" and "never started" in job.error and "start the job again" in job.error
        assert {j.job_id for j in store.jobs.list_open()} == {just_created.job_id, waiting.job_id,
                                                              progressing.job_id}
    finally:
        store.close()
