"""A real `switchboard serve` (Prefect server + flow runner + granian API) on free ports, once per session."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Service:
    process: subprocess.Popen
    data_dir: Path
    api_url: str
    prefect_url: str
    admin_key: str | None
    output: list[str]
    env: dict[str, str]

    def parts(self) -> dict[str, int]:
        """pid of each process-group leader the supervisor runs now: prefect, store, api, runner."""
        found = {}
        pid = self.process.pid
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except FileNotFoundError:  # exited meanwhile
                continue
            for part, marker in (("prefect", "prefect server start"), ("store", "owner_server:create_owner_app"),
                                 ("api", "api.app:create_app"), ("runner", "flows.runner")):
                if marker in cmd:
                    found[part] = int(child)
        return found

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=timeout)
        return self.process.returncode


def start_service(data_dir: Path, api_port: int, prefect_port: int, timeout: float = 150) -> Service:
    env = dict(os.environ)
    env.pop("PREFECT_API_URL", None)
    env.update(SWITCHBOARD_DATA_DIR=str(data_dir), SWITCHBOARD_PREFECT_PORT=str(prefect_port),
               PREFECT_RUNNER_POLL_FREQUENCY="2", LITELLM_LOCAL_MODEL_COST_MAP="True")
    process = subprocess.Popen([str(BIN / "switchboard"), "serve", "--port", str(api_port)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError("switchboard serve exited early:\n" + "".join(output))
        output.append(line)
        if "all running" in line:
            break
    else:
        process.kill()
        raise AssertionError("switchboard serve did not start:\n" + "".join(output))
    # Keep draining output so the child never blocks on a full pipe.
    import threading

    threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")), daemon=True).start()
    keys = [line.strip() for line in output if re.fullmatch(r"sb-[A-Za-z0-9_-]{20,}", line.strip())]
    return Service(process, data_dir, f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{prefect_port}/api",
                   keys[0] if keys else None, output, env)


@pytest.fixture(scope="session")
def fake_llm_server() -> Iterator["FakeOpenAI"]:
    """The in-process OpenAI-compatible server every provider of the served service points at (no network)."""
    from tests.fakes.openai_server import FakeOpenAI

    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory, fake_llm_server) -> Iterator[Service]:
    os.environ["SWITCHBOARD_LLM_API_BASE"] = fake_llm_server.base_url  # inherited by serve and its flow runs
    try:
        svc = start_service(tmp_path_factory.mktemp("serve") / "data", free_port(), free_port())
    finally:
        os.environ.pop("SWITCHBOARD_LLM_API_BASE", None)
    try:
        yield svc
    finally:
        if svc.process.poll() is None:
            svc.process.send_signal(signal.SIGINT)
            try:
                svc.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                svc.process.kill()
