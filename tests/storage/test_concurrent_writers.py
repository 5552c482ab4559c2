"""The read-then-write rules hold with concurrent writers, on both engines: on DuckDB, threads of the one owner;
on PostgreSQL, writers that each open their own store (own pool, as separate API workers and flow runs do), all
released at once by a barrier so their transactions overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from storage.records import OPEN_JOB_STATUSES
from storage.store import SqlStore
from tests.storage.conftest import open_engine

WRITERS = 6


@pytest.fixture
def writers(store: SqlStore, request: pytest.FixtureRequest, db: Path) -> Iterator[list[SqlStore]]:
    """WRITERS stores over the same system of record: the one LocalStore on DuckDB, separate stores on PostgreSQL."""
    if store.owns_file:
        yield [store] * WRITERS
        return
    # lazy: the PostgreSQL half only
    from storage.postgres_store import PostgresStore

    url = store.database.url  # type: ignore[attr-defined]
    others = [PostgresStore(url, db.parent, max_connections=2) for _ in range(WRITERS - 1)]
    yield [store, *others]
    for other in others:
        other.close()


def at_once(writers: list[SqlStore], action: Callable[[SqlStore, int], Any]) -> list[Any]:
    barrier = threading.Barrier(len(writers))

    def run(i: int) -> Any:
        barrier.wait()
        return action(writers[i], i)

    with ThreadPoolExecutor(len(writers)) as pool:
        return list(pool.map(run, range(len(writers))))


def start_optimization(store: SqlStore, user_id: str) -> Any:
    return store.optimizations.start(user_id, user_id, "{}", None, None, False, None, [["openai", "gpt-4o"]])


def test_one_prompt_optimization_at_a_time_per_user(writers):
    starts = at_once(writers, lambda s, i: start_optimization(s, "alice"))
    created = [st.run.run_id for st in starts if st.run is not None]
    assert len(created) == 1, starts
    assert {st.running_run_id for st in starts if st.run is None} == {created[0]}
    # Another user is not held back by alice's run.
    assert start_optimization(writers[0], "bob").run is not None


def test_a_new_upload_supersedes_every_training_in_flight(writers):
    pref = writers[0].preferences.create("alice", "p")
    starts = at_once(writers, lambda s, i: s.routers.start_training(
        "alice", pref.preference_id, f"/d/{i}", "english", True, "[]", 100))
    jobs = [writers[0].jobs.get(st.job.job_id) for st in starts]
    still_open = [j for j in jobs if j.status in OPEN_JOB_STATUSES]
    assert len(still_open) == 1
    assert all(j.status == "cancelled" and j.error.startswith("superseded by training job") for j in jobs
               if j.job_id != still_open[0].job_id)
    # Each cancelled job was superseded by exactly one start: the starts form a chain.
    superseded = [old.job_id for st in starts for old in st.superseded]
    assert sorted(superseded) == sorted(j.job_id for j in jobs if j.job_id != still_open[0].job_id)


def test_a_job_publishes_once_and_only_while_open(writers):
    pref = writers[0].preferences.create("alice", "p")
    job = writers[0].routers.start_training("alice", pref.preference_id, "/d", "english", True, "[]", 10).job
    published = at_once(writers, lambda s, i: s.routers.publish(job.job_id, f"/artefacts/{i}", "{}"))
    assert len([p for p in published if p is not None]) == 1
    assert writers[0].jobs.get(job.job_id).status == "completed"
    live = writers[0].database.rows("SELECT count(*) FROM custom_routers WHERE is_live")[0][0]
    assert live == 1


def test_publishing_races_a_newer_upload_and_the_live_router_is_never_a_superseded_one(writers):
    pref = writers[0].preferences.create("alice", "p")
    first = writers[0].routers.start_training("alice", pref.preference_id, "/d/0", "english", True, "[]", 10).job

    def act(store: SqlStore, i: int) -> Any:
        if i % 2:
            return store.routers.publish(first.job_id, f"/artefacts/{i}", "{}")
        return store.routers.start_training("alice", pref.preference_id, f"/d/{i}", "english", True, "[]", 10)

    at_once(writers, act)
    state = writers[0].routers.state(pref.preference_id)
    first_now = writers[0].jobs.get(first.job_id)
    if first_now.status == "completed":  # it published before any newer upload superseded it
        assert state.live is not None and state.live.job_id == first.job_id
    else:
        assert first_now.status == "cancelled" and state.live is None


def test_a_run_finishes_once_and_takes_no_result_after(writers):
    run = start_optimization(writers[0], "alice").run
    assert writers[0].optimizations.begin(run.run_id)
    outcomes = at_once(writers, lambda s, i: s.optimizations.finish(
        run.run_id, "completed" if i % 2 else "failed", None if i % 2 else f"writer {i}"))
    assert outcomes.count(True) == 1
    final = writers[0].optimizations.get(run.run_id)
    assert final.status in ("completed", "failed")
    from storage.optimization_records import ModelResult

    late = ModelResult(position=0, provider="openai", model="gpt-4o", result_status="completed", post_score=1.0)
    assert writers[1].optimizations.record_model_result(run.run_id, late) is False
