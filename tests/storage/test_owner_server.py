"""The store-owner process (`api.owner_app` under granian) and what API workers build on it: typed RPC,
the change feed that keeps every worker's in-memory copies current, and following an owner that restarts."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from api.cli.processes import free_port
from api.cli.supervisor import store_owner_argv
from storage import owner
from storage.errors import DatabaseLocked
from storage.owner_changes import ChangeLog
from storage.records import PreferenceChanges
from storage.rpc import RemoteStore
from storage.store import LocalStore
from tests.support.api_server import PYTHON, REPO, child_env


class OwnerProcess:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir, self.port = data_dir, free_port()
        self.log = data_dir.parent / f"owner-{self.port}.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        env = child_env(data_dir) | {"SWITCHBOARD_STORE_PORT": str(self.port)}
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [PYTHON, *store_owner_argv("127.0.0.1", self.port)[1:]],  # the options `serve` gives it
                env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_live(self, timeout: float = 60) -> owner.OwnerInfo:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            info = owner.live_owner(self.data_dir / "run")
            if info is not None and info.url.endswith(f":{self.port}"):
                return info
            time.sleep(0.1)
        raise AssertionError(f"owner not live:\n{self.log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
        return self.process.wait(timeout=30)


@pytest.fixture
def owner_process(tmp_path):
    proc = OwnerProcess(tmp_path / "data")
    try:
        proc.wait_live()
        yield proc
    finally:
        proc.stop(signal.SIGKILL)


def eventually(check, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_change_log_reports_gaps_and_restarts():
    log = ChangeLog(keep=3)
    start = log.since(-1)
    assert start.cursor == 0 and start.subjects == [] and not start.complete  # a first call only takes the cursor
    for subject in ("a", "b", "a"):
        log.add(subject)
    feed = log.since(0)
    assert feed.complete and feed.cursor == 3 and feed.subjects == ["a", "b"]
    log.add("c")
    log.add("d")
    assert not log.since(0).complete  # 'a' and 'b' fell out of memory: the reader must reload everything
    assert log.since(3).subjects == ["c", "d"]
    assert not log.since(99).complete  # a cursor from an earlier owner
    with log.capture() as mine:
        log.add("e")
    assert mine == ["e"]


def test_the_owner_process_owns_the_file_and_serves_typed_rpc(owner_process):
    with pytest.raises(DatabaseLocked):
        LocalStore(owner_process.data_dir / "switchboard.duckdb")
    store = owner.open_store(owner_process.data_dir / "switchboard.duckdb", owner_process.data_dir / "run")
    try:
        assert isinstance(store, RemoteStore)
        pref = store.preferences.create("u", "first")
        assert store.preferences.get("u", pref.preference_id).name == "first"
    finally:
        store.close()
    # Only the owner routes: no public API in this process.
    assert httpx.get(f"http://127.0.0.1:{owner_process.port}/v2/models").status_code == 404


def test_a_second_owner_refuses_to_start(owner_process):
    second = OwnerProcess(owner_process.data_dir)
    assert second.process.wait(timeout=60) != 0
    assert "already owns" in second.log.read_text()
    assert owner.live_owner(owner_process.data_dir / "run").url.endswith(f":{owner_process.port}")


def test_changes_reach_the_writer_at_once_and_other_workers_within_the_poll(owner_process):
    db, run = owner_process.data_dir / "switchboard.duckdb", owner_process.data_dir / "run"
    worker_a, worker_b = owner.open_store(db, run), owner.open_store(db, run)
    heard_a, heard_b = [], []
    try:
        worker_a.subscribe(heard_a.append)
        worker_b.subscribe(heard_b.append)
        pref = worker_a.preferences.create("u", "p")
        assert heard_a == [] and heard_b == []  # creating one changes nothing anybody caches
        worker_a.preferences.update("u", pref.preference_id, PreferenceChanges(name="renamed"))
        assert heard_a == [pref.preference_id]  # before the call returned: read-your-writes in the writer
        eventually(lambda: heard_b == [pref.preference_id], timeout=3)
        job = worker_b.jobs.create("train-custom-router", "u", pref.preference_id)
        worker_b.jobs.update(job.job_id, status="failed", error="x")
        eventually(lambda: heard_a.count(pref.preference_id) >= 2, timeout=3)
    finally:
        worker_a.close()
        worker_b.close()


def test_workers_follow_a_restarted_owner_and_resync(tmp_path):
    first = OwnerProcess(tmp_path / "data")
    first.wait_live()
    db, run = first.data_dir / "switchboard.duckdb", first.data_dir / "run"
    worker = owner.open_store(db, run)
    resyncs = threading.Event()
    try:
        worker.subscribe(lambda _: None, resync=resyncs.set)
        pref = worker.preferences.create("u", "before")
        assert first.stop() == 0
        assert not owner.owner_file(run).exists()  # withdrawn on a clean stop
        second = OwnerProcess(first.data_dir)  # a new port and a new token
        try:
            second.wait_live()
            # The same client object carries on: it re-reads the owner file and takes the new URL and token.
            assert worker.preferences.get("u", pref.preference_id).name == "before"
            assert resyncs.wait(5), "a new owner epoch must make subscribers reload"
        finally:
            second.stop(signal.SIGKILL)
    finally:
        worker.close()
        first.stop(signal.SIGKILL)
