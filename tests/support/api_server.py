"""The API served by granian in a process of its own, for tests that need a real second process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from api.cli.processes import free_port
from api.cli.supervisor import api_argv
from api.settings import Settings, get_settings, reset_settings
from storage import owner

REPO = Path(__file__).resolve().parents[2]


PYTHON = str(REPO / ".venv" / "bin" / "python")


def child_env(data_dir: Path, port: int | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ, **(extra or {}))
    env.update(SWITCHBOARD_DATA_DIR=str(data_dir), LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(REPO))
    if port is not None:
        env["SWITCHBOARD_PORT"] = str(port)
    env.pop("PREFECT_API_URL", None)
    return env


def settings_under(env: dict[str, str]) -> Settings:
    """The settings a process started with `env` on top of this one's reads (granian's options are built here)."""
    saved = dict(os.environ)
    os.environ.update(env)
    reset_settings()
    try:
        return get_settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        reset_settings()


class ApiServer:
    """`granian ... api.app:create_app` in its own session, so teardown can always stop exactly it, with the options
    `switchboard serve` gives it (api_argv); extra_env (e.g. shorter timeouts) for the server process only."""

    def __init__(self, data_dir: Path, extra_env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir.parent / f"granian-{self.port}.log"
        data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [PYTHON, *api_argv("127.0.0.1", self.port, 1, settings_under(extra_env or {}))[1:]],
                env=child_env(data_dir, self.port, extra_env), cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        self._wait_healthy()

    @property
    def db_path(self) -> Path:
        return self.data_dir / "switchboard.duckdb"

    @property
    def run_dir(self) -> Path:
        return self.data_dir / "run"

    def _wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"API exited with {self.process.returncode}:\n{self.log_text()}")
            try:
                if httpx.get(f"{self.url}/internal/health", timeout=1.0).status_code == 200 and \
                        owner.owner_file(self.run_dir).exists():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"API not healthy within {timeout}s:\n{self.log_text()}")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def terminate(self, *, group: bool = False, timeout: float = 30.0) -> int:
        if group:
            os.killpg(self.process.pid, signal.SIGTERM)  # what `switchboard serve` does to its children
        else:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=30)
