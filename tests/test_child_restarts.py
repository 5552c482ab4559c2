"""The supervisor's crash policy (api/cli/restarts.py) on stand-in children: a crashed child restarts with the
children that go with it and nobody else, survivors in its process group are killed, and a child that keeps
crashing makes the supervisor give up. (tests/e2e/test_faults.py does the same to a real `switchboard serve`.)"""

from __future__ import annotations

import os
import signal
import time

from api.cli.processes import Supervisor
from api.cli.restarts import RESTART_LIMIT, ChildRestarts
from api.settings import get_settings
from tests.support.processes import alive


def test_crashed_children_restart_with_their_dependents_only(tmp_path) -> None:
    sup = Supervisor(get_settings())
    started: list[str] = []
    grandchild_file = tmp_path / "grandchild.pid"

    def starter(name: str):
        def start() -> None:
            started.append(name)
            # The runner stands in with a child of its own in its process group (a flow run subprocess).
            argv = ["sh", "-c", f"sleep 60 & echo $! > {grandchild_file}; wait"] if name == "flow runner" \
                else ["sleep", "60"]
            sup.spawn(name, argv)
        return start

    names = ["Prefect server", "store owner", "API", "flow runner"]
    restarts = ChildRestarts(sup, {name: starter(name) for name in names})
    for name in names:
        restarts.starters[name]()
    try:
        for _ in range(50):
            if grandchild_file.exists() and grandchild_file.read_text().strip():
                break
            time.sleep(0.1)
        flow_run = int(grandchild_file.read_text())
        pids = {c.name: c.process.pid for c in sup.children}
        started.clear()

        prefect = next(c for c in sup.children if c.name == "Prefect server")
        os.kill(prefect.process.pid, signal.SIGKILL)
        prefect.process.wait()
        assert restarts.handle(prefect)
        assert started == ["Prefect server", "flow runner"]  # the runner goes with its Prefect server
        assert [c.name for c in sup.children] == names  # start order kept (Ctrl-C stops in reverse)
        now = {c.name: c.process.pid for c in sup.children}
        assert now["API"] == pids["API"] and now["store owner"] == pids["store owner"]
        assert now["flow runner"] != pids["flow runner"] and not alive(pids["flow runner"])
        assert not alive(flow_run), "the old runner's flow subprocess must not outlive it"

        started.clear()
        for attempt in range(RESTART_LIMIT + 1):
            api = next(c for c in sup.children if c.name == "API")
            os.kill(api.process.pid, signal.SIGKILL)
            api.process.wait()
            handled = restarts.handle(api)
            assert handled is (attempt < RESTART_LIMIT)
        assert started == ["API"] * RESTART_LIMIT  # alone, and not after the limit
    finally:
        sup.stop_all()


def test_a_stop_requested_during_a_restart_is_a_clean_stop(capsys) -> None:
    """Ctrl-C while the supervisor waits for a restarted child to become healthy interrupts that wait
    (Supervisor.wait_healthy); serve must then stop as on any Ctrl-C (exit 0), not report a failed restart."""
    sup = Supervisor(get_settings())

    def start_api() -> None:
        child = sup.spawn("API", ["sleep", "60"])
        sup.stopping = True  # what serve's SIGINT handler does, here while the new API is starting
        sup.wait_healthy(child, "http://127.0.0.1:9/internal/health", timeout=60)  # the discard port: never healthy

    restarts = ChildRestarts(sup, {"API": start_api})
    crashed = sup.spawn("API", ["true"])
    crashed.process.wait()
    try:
        assert restarts.handle(crashed) is True  # not a reason to give up: the stop request ends the loop
        assert "stop requested while restarting API" in capsys.readouterr().out
        assert [c.name for c in sup.children] == ["API"] and sup.children[0].alive()  # the new one, for stop_all
    finally:
        sup.stop_all()
    assert not sup.children[0].alive()
