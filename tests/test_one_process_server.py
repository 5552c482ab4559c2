"""The store owner under granian's embedded server (api/cli/one_process_server.py): one process, the connection
options `serve` gives the API, and a SIGTERM that lets the owner's shutdown run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from api.cli.processes import free_port
from api.cli.supervisor import api_argv, store_owner_argv
from storage import owner
from tests.support.api_server import PYTHON, REPO, child_env, settings_under
from tests.support.service import wait_for_api


def children(pid: int) -> list[int]:
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]


def test_the_owner_is_one_process_that_closes_idle_connections_and_stops_cleanly(tmp_path):
    data_dir, port = tmp_path / "data", free_port()
    data_dir.mkdir()
    env = child_env(data_dir) | {"SWITCHBOARD_STORE_PORT": str(port), "SWITCHBOARD_HTTP_HEADER_TIMEOUT_S": "0.5"}
    argv = store_owner_argv("127.0.0.1", port, settings_under(env))
    assert argv[argv.index("--header-timeout-ms") + 1] == "500"
    log = tmp_path / "owner.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([PYTHON, *argv[1:]], env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while owner.live_owner(data_dir / "run") is None:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert children(process.pid) == []  # no granian main process watching a worker: this is the worker

        with socket.create_connection(("127.0.0.1", port), timeout=5) as idle:  # sends nothing
            started = time.monotonic()
            assert idle.recv(1) == b""  # closed by the server after the header timeout
            assert time.monotonic() - started < 4

        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
        assert not owner.owner_file(data_dir / "run").exists()  # the lifespan's shutdown withdrew it
        assert "experimental" not in log.read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_the_api_with_one_worker_is_one_process_and_ends_quietly(tmp_path):
    """The API owning its data dir (no store owner): its shutdown runs, and nothing after it reports DuckDB's live
    objects as leaked (the interpreter's teardown is skipped, as granian's forked worker skipped it)."""
    data_dir, port = tmp_path / "data", free_port()
    data_dir.mkdir()
    argv = api_argv("127.0.0.1", port, 1)
    assert "api.cli.one_process_server" in argv and "granian" not in argv
    log = tmp_path / "api.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([PYTHON, *argv[1:]], env=child_env(data_dir, port), cwd=REPO, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_api(f"http://127.0.0.1:{port}")
        assert children(process.pid) == []
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
        assert "leaked" not in log.read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
