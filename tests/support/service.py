"""Local service processes for benchmarks and end-to-end tests: the bare API under granian (`running_api`, one
worker, one API key) and the whole `switchboard serve` (`start_service`), each on free ports."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from api.cli.processes import Child, free_port
from api.cli.supervisor import api_argv

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@dataclass
class LocalApi:
    base: str
    key: str
    pid: int
    data_dir: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (granian runs the app in a worker process)."""
    total = 0
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    for p in [pid, *map(int, children)]:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except FileNotFoundError:
            continue
        total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    return total / 1024


def wait_for_api(base: str, timeout: float = 120) -> None:
    """Until the API at `base` answers its health check; RuntimeError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/internal/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the API at {base} did not start")
        time.sleep(0.5)


@contextmanager
def running_api(extra_env: dict[str, str] | None = None) -> Iterator[LocalApi]:
    """The API on a fresh data dir and a free port; extra_env (e.g. SWITCHBOARD_DEFAULT_ROUTER_DIR) for the
    server process only."""
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-bench-"))
    port = free_port()
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(data_dir), SWITCHBOARD_PORT=str(port),
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    sys.path.insert(0, str(REPO))
    os.environ.update(env)
    from storage.store import LocalStore

    store = LocalStore(data_dir / "switchboard.duckdb")
    key = store.accounts.issue_key("bench").key
    store.close()
    server = subprocess.Popen(api_argv("127.0.0.1", port, 1), env={**env, **(extra_env or {})},
                              start_new_session=True)  # the options `switchboard serve` gives granian
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_api(base)
        yield LocalApi(base, key, server.pid, data_dir)
    finally:
        Child("API", server).stop(timeout=30)


@dataclass
class Service:
    """A running `switchboard serve` (Prefect server, store owner, API, flow runner) and what it printed."""

    process: subprocess.Popen
    data_dir: Path
    api_url: str
    prefect_url: str
    admin_key: str | None
    output: list[str]
    env: dict[str, str]

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_key}"}

    @property
    def prefect_login(self) -> str:
        """`user:password` of the embedded Prefect server (PREFECT_API_AUTH_STRING for a client)."""
        return (self.data_dir / "run" / "prefect-login").read_text().strip()

    def parts(self) -> dict[str, int]:
        """pid of each process-group leader the supervisor runs now: prefect, store, api, runner."""
        found = {}
        pid = self.process.pid
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except FileNotFoundError:  # exited meanwhile
                continue
            for part, marker in (("prefect", "flows.prefect_server"), ("store", "owner_app:create_owner_app"),
                                 ("api", "api.app:create_app"), ("runner", "flows.runner")):
                if marker in cmd:
                    found[part] = int(child)
        return found

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> int:
        """Stop it as Ctrl-C would; kill it if it has not stopped within `timeout`. Returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def read_until_running(process: subprocess.Popen, timeout: float) -> list[str]:
    """`serve`'s output lines up to the one that says "all running"; AssertionError if it exits or times out first
    (a line is read before the clock is checked: serve prints as it goes)."""
    output: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError("switchboard serve exited before it was running:\n" + "".join(output))
        output.append(line)
        if "all running" in line:
            return output
    raise AssertionError(f"switchboard serve was not running after {timeout:.0f} s:\n" + "".join(output))


def start_service(data_dir: Path, api_port: int, prefect_port: int, timeout: float = 150) -> Service:
    """`switchboard serve` on this data dir and these ports, returned once it says everything runs."""
    env = dict(os.environ)
    env.pop("PREFECT_API_URL", None)
    env.update(SWITCHBOARD_DATA_DIR=str(data_dir), SWITCHBOARD_PREFECT_PORT=str(prefect_port),
               LITELLM_LOCAL_MODEL_COST_MAP="True")  # the runner's poll: serve's own default
    process = subprocess.Popen([str(BIN / "switchboard"), "serve", "--port", str(api_port)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output = read_until_running(process, timeout)
    except AssertionError:
        process.kill()
        raise
    # Keep draining output so the child never blocks on a full pipe.
    threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")), daemon=True).start()
    keys = [line.strip() for line in output if re.fullmatch(r"sb-[A-Za-z0-9_-]{20,}", line.strip())]
    return Service(process, data_dir, f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{prefect_port}/api",
                   keys[0] if keys else None, output, env)
