"""A real Prometheus server (Debian's `prometheus` package; `make test` installs it when root with apt) scraping one
target every second, started on a free loopback port with its own storage, and PromQL through its HTTP API."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx

from api.cli.processes import free_port


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


class Prometheus:
    def __init__(self, workdir: Path, target: str, token: str | None = None) -> None:
        binary = prometheus_binary()
        assert binary is not None
        workdir.mkdir(parents=True, exist_ok=True)
        auth = f"    authorization:\n      type: Bearer\n      credentials: {token}\n" if token else ""
        (workdir / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: switchboard\n    scrape_interval: 1s\n    scrape_timeout: 1s\n"
            f"{auth}    static_configs:\n      - targets: ['{target}']\n")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "prometheus.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [binary, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-lifecycle"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def query(self, promql: str) -> float | None:
        """The instant query's single value (None when it has no sample)."""
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=10).json()
        assert answer["status"] == "success", answer
        result = answer["data"]["result"]
        assert len(result) <= 1, result
        return float(result[0]["value"][1]) if result else None

    def wait_for(self, promql: str, expected: float, timeout: float = 60) -> float | None:
        """Until the query returns `expected` (scrapes come every second), else its last value."""
        deadline = time.monotonic() + timeout
        got = None
        while time.monotonic() < deadline:
            got = self.query(promql)
            if got == expected:
                return got
            time.sleep(0.5)
        return got

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
