"""Ending a process when the one that started it is gone. A child blocked on a queue or a hung shutdown never
notices that its parent died (kill -9 of `switchboard serve`, a crashed flow run), so a daemon thread watches
the parent id and ends the process, or its whole process group, itself."""

from __future__ import annotations

import os
import signal
import threading
import time

# Set by `switchboard serve` (api/cli/supervisor.py) for its children: the pid a child should die with.
SUPERVISOR_PID_ENV = "SWITCHBOARD_SUPERVISOR_PID"


def exit_with_parent(parent: int, grace_s: float = 0.0, whole_group: bool = False, poll_s: float = 0.5) -> None:
    """Once `parent` is no longer this process's parent, wait `grace_s` (for a graceful shutdown already under way
    to finish by itself), then end this process, or with `whole_group` its process group with SIGKILL."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        time.sleep(grace_s)
        if whole_group:
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
