"""Start the real API (granian, one worker) on a temp data dir for a benchmark, with one API key."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


@dataclass
class LocalApi:
    base: str
    key: str
    pid: int
    data_dir: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@contextmanager
def running_api() -> Iterator[LocalApi]:
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-bench-"))
    port = free_port()
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(data_dir), SWITCHBOARD_PORT=str(port),
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    sys.path.insert(0, str(REPO))
    os.environ.update(env)
    from storage.store import Store

    store = Store(data_dir / "switchboard.duckdb")
    key = store.issue_key("bench").key
    store.close()
    server = subprocess.Popen([sys.executable, "-m", "granian", "--interface", "asgi", "--factory", "--host",
                               "127.0.0.1", "--port", str(port), "--workers", "1", "--log-level", "warning",
                               "api.app:create_app"], env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if httpx.get(f"{base}/internal/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            raise RuntimeError("the API did not start")
        yield LocalApi(base, key, server.pid, data_dir)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
