"""What `switchboard serve` does when one of its children dies unexpectedly (kill -9, out of memory, a crash).

A production supervisor keeps the service up, so the crashed child is restarted, with the children that cannot
outlive it:
- the store owner and the API restart alone: API workers and flow runs find the restarted owner through
  run/owner.json and wait for it meanwhile (storage/owner.py), so runs in flight go on (they resume);
- the Prefect server holds the runner's in-flight flow runs, so the runner restarts with it;
- the runner restarts alone: the API keeps answering (modelSelect never notices).
Survivors of a crashed child's process group (granian workers, the runner's flow subprocesses) are killed with
SIGKILL, not asked to stop: their work is lost either way. A runner started by `serve` first marks Crashed the flow
runs a dead runner left `Running` and queues housekeeping, so their jobs end `failed` with the reason instead of
staying `processing` (flows/runner.py). A child that crashes more than RESTART_LIMIT times
within RESTART_WINDOW_S is not restarted again: the supervisor stops everything and exits non-zero.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from api.cli.processes import Child, Supervisor, say

RESTART_LIMIT, RESTART_WINDOW_S = 3, 300.0
# A crash of the key also restarts these (see the module docstring); names are Child.name.
RESTARTS_WITH = {"Prefect server": ("flow runner",)}


def kill_group(child: Child) -> None:
    try:
        os.killpg(child.process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    child.process.wait()


@dataclass
class ChildRestarts:
    sup: Supervisor
    starters: dict[str, Callable[[], None]]  # child name -> start it again (spawn + wait until healthy)
    crashes: dict[str, deque[float]] = field(default_factory=dict)  # child name -> recent crash times

    def handle(self, crashed: Child) -> bool:
        """Restart `crashed` and the children that go with it; False when the supervisor should give up (True also
        when a stop was requested during the restart: the supervisor's loop then ends as on a normal Ctrl-C)."""
        now = time.monotonic()
        recent = self.crashes.setdefault(crashed.name, deque())
        recent.append(now)
        while recent and now - recent[0] > RESTART_WINDOW_S:
            recent.popleft()
        report = crashed.exit_report("unexpectedly")  # with its log's last lines: the cause where the user looks
        if len(recent) > RESTART_LIMIT or crashed.name not in self.starters:
            say(f"{report}\n{len(recent)} crashes within {RESTART_WINDOW_S:.0f}s: shutting down")
            return False
        names = {crashed.name, *RESTARTS_WITH.get(crashed.name, ())}
        affected = [c for c in self.sup.children if c.name in names]
        say(f"{report}\nrestarting " + ", ".join(c.name for c in affected))
        for child in reversed(affected):
            kill_group(child)
        order = [c.name for c in self.sup.children]
        self.sup.children = [c for c in self.sup.children if c not in affected]
        try:
            for child in affected:  # in start order, each waits until healthy
                self.starters[child.name]()
        except SystemExit as exc:
            if self.sup.stopping:  # Ctrl-C (or SIGTERM) mid-restart is a stop like any other, not a failure
                say(f"stop requested while restarting {crashed.name}")
                return True
            say(f"could not restart: {exc}")  # a child that cannot start again: give up cleanly
            return False
        self.sup.children.sort(key=lambda c: order.index(c.name) if c.name in order else len(order))
        say("all running again")
        return True
