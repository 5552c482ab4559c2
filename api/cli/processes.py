"""The supervisor's view of its children: start one in its own process group, wait until it is healthy, stop
them all in reverse order. Shared by `switchboard serve` (api/cli/supervisor.py) and its restart policy
(api/cli/restarts.py)."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from api.settings import Settings

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the child, before exec: the kernel sends SIGTERM if the supervisor dies, even by kill -9, so no child
    keeps running unsupervised (Linux only; elsewhere the orphan sweep in api/cli/orphans.py is the safety net)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def say(message: str) -> None:
    print(f"[switchboard] {message}", flush=True)


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    started: float = field(default_factory=time.monotonic)  # when it was spawned

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        if not self.alive():
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            say(f"{self.name} did not stop in {timeout:.0f}s; killing it")
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass


@dataclass
class Supervisor:
    settings: Settings
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    children: list[Child] = field(default_factory=list)
    stopping: bool = False
    # For the API and the flow runner only (not Prefect's server): where their metrics meet (GET /metrics)
    metrics_env: dict[str, str] = field(default_factory=dict)

    def spawn(self, name: str, argv: list[str], log_file: Path | None = None,
              extra_env: dict[str, str] | None = None) -> Child:
        out = open(log_file, "ab") if log_file else None
        process = subprocess.Popen(argv, env={**self.env, **(extra_env or {})}, start_new_session=True, stdout=out,
                                   stderr=subprocess.STDOUT if out else None, preexec_fn=_die_with_parent)
        child = Child(name, process)
        self.children.append(child)
        return child

    def wait_healthy(self, child: Child, url: str, timeout: float, auth: tuple[str, str] | None = None) -> None:
        """Until `url` answers 200 (`timeout` from this call: children start side by side, so a child waited
        for last may have been ready for a while); says how long the child took since it was spawned."""
        started = time.monotonic()
        dots = 0
        while time.monotonic() - started < timeout:
            if self.stopping:
                raise SystemExit(f"interrupted while starting {child.name}")
            if not child.alive():
                raise SystemExit(f"{child.name} exited with code {child.process.returncode} while starting; "
                                 f"see {self.settings.layout.logs_dir}")
            try:
                if httpx.get(url, timeout=1.0, auth=auth).status_code == 200:
                    say(f"{child.name} ready in {time.monotonic() - child.started:.1f}s")
                    return
            except httpx.HTTPError:
                pass
            dots += 1
            if dots % 10 == 0:
                say(f"waiting for {child.name}… {time.monotonic() - started:.0f}s")
            time.sleep(0.5)
        raise SystemExit(f"{child.name} did not become healthy within {timeout:.0f}s ({url})")

    def stop_all(self) -> None:
        for child in reversed(self.children):
            if child.alive():
                say(f"stopping {child.name}")
                child.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
