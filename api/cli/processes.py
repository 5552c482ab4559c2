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

from api.cli.ports import Listener, says_in_use
from api.settings import Settings

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the child, before exec: the kernel sends SIGTERM if the supervisor dies, even by kill -9, so no child
    keeps running unsupervised (Linux only; elsewhere the orphan sweep in api/cli/orphans.py is the safety net)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def say(message: str) -> None:
    print(f"[switchboard] {message}", flush=True)


TAIL_LINES, TAIL_BYTES = 12, 16_384


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    started: float = field(default_factory=time.monotonic)  # when it was spawned
    log_file: Path | None = None  # where its output goes (None: the supervisor's own terminal)
    log_offset: int = 0  # the log's size when it was spawned: what this run of it wrote starts there
    listener: Listener | None = None  # the port it listens on, when the supervisor chose it

    def alive(self) -> bool:
        return self.process.poll() is None

    def last_lines(self) -> list[str]:
        """The last lines this run of the child wrote to its log (what a traceback ends with: the error)."""
        if self.log_file is None:
            return []
        try:
            with open(self.log_file, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(self.log_offset, size - TAIL_BYTES))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return []
        return [line.rstrip() for line in text.splitlines() if line.strip()][-TAIL_LINES:]

    def exit_report(self, when: str) -> str:
        """Why it exited, for the user: the one line of a port in use, else its code and its log's last lines
        (not "see the logs": the cause is printed where the user is looking)."""
        lines = self.last_lines()
        if self.listener is not None and says_in_use(lines):
            return self.listener.in_use_line()
        return f"{self.name} exited with code {self.process.returncode} {when}; {self.log_tail(lines)}"

    def log_tail(self, lines: list[str] | None = None) -> str:
        """Its log's last lines, indented under a line that names the log."""
        lines = self.last_lines() if lines is None else lines
        if self.log_file is None:
            return "its output is above"
        if not lines:
            return f"it wrote nothing to {self.log_file}"
        return f"the last lines of {self.log_file}:\n" + "\n".join(f"    {line}" for line in lines)

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
              extra_env: dict[str, str] | None = None, listener: Listener | None = None) -> Child:
        out = open(log_file, "ab") if log_file else None
        offset = out.tell() if out else 0
        process = subprocess.Popen(argv, env={**self.env, **(extra_env or {})}, start_new_session=True, stdout=out,
                                   stderr=subprocess.STDOUT if out else None, preexec_fn=_die_with_parent)
        child = Child(name, process, log_file=log_file, log_offset=offset, listener=listener)
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
                raise SystemExit(child.exit_report("while starting"))
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
