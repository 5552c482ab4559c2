"""Shared by the custom router benchmarks: run the real service, upload through the HTTP endpoint, wait until the
router answers, and route prompts through modelSelect."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    process: subprocess.Popen
    data_dir: Path
    url: str
    key: str
    output: list[str] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()


def serve(timeout: float = 180) -> Served:
    """`switchboard serve` on a fresh temp data dir and free ports (Prefect server, runner, API)."""
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-bench-")) / "data"
    port, prefect_port = free_port(), free_port()
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(data_dir), SWITCHBOARD_PREFECT_PORT=str(prefect_port),
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("PREFECT_API_URL", None)
    process = subprocess.Popen([str(BIN / "switchboard"), "serve", "--port", str(port)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise SystemExit("switchboard serve exited:\n" + "".join(output))
        output.append(line)
        if "all running" in line:
            break
    threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")), daemon=True).start()
    key = next(ln.strip() for ln in output if re.fullmatch(r"sb-[A-Za-z0-9_-]{20,}", ln.strip()))
    return Served(process, data_dir, f"http://127.0.0.1:{port}", key, output)


def csv_of(prompts: list[str], models: list[str], scores: list[list[float]],
           responses: list[list[str]] | None = None) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["prompt"] + [f"{m}/{kind}" for m in models for kind in ("score", "response")])
    for i, p in enumerate(prompts):
        row = [p]
        for j in range(len(models)):
            row += [scores[i][j], responses[i][j] if responses else ""]
        w.writerow(row)
    return buf.getvalue().encode("utf-8")


def upload(svc: Served, data: bytes, providers: list[dict], language: str = "english") -> tuple[str, float]:
    """POST the CSV; returns (preference_id, seconds the upload call took)."""
    started = time.perf_counter()
    r = httpx.post(f"{svc.url}/v2/pzn/trainCustomRouter", headers=svc.headers, timeout=120,
                   data={"language": language, "llm_providers": json.dumps(providers), "prompt_column": "prompt",
                         "maximize": "true"}, files={"dataset_file": ("evals.csv", data, "text/csv")})
    if r.status_code != 200:
        raise SystemExit(f"upload refused: {r.status_code} {r.text}")
    return r.json()["preference_id"], time.perf_counter() - started


def wait_ready(client: httpx.Client, svc: Served, pid: str, providers: list[dict], timeout: float = 900,
               poll: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.post(f"{svc.url}/v2/modelRouter/modelSelect", headers=svc.headers,
                        json={"messages": "ping", "llm_providers": providers, "preference_id": pid})
        if r.status_code == 200:
            return
        if r.status_code != 409:
            raise SystemExit(f"training did not succeed: {r.status_code} {r.text}")
        time.sleep(poll)
    raise SystemExit("training did not finish in time")


def route(client: httpx.Client, svc: Served, pid: str, prompt: str, providers: list[dict], t: int) -> str:
    r = client.post(f"{svc.url}/v2/modelRouter/modelSelect", headers=svc.headers,
                    json={"messages": [{"role": "user", "content": prompt}], "llm_providers": providers,
                          "preference_id": pid, "cost_quality_tradeoff": t})
    r.raise_for_status()
    chosen = r.json()["providers"][0]
    return f"{chosen['provider']}/{chosen['model']}"


def training_metrics(svc: Served, pid: str) -> dict:
    """The metrics the flow recorded, read through the owner RPC (the API owns the DuckDB file)."""
    from storage.rpc import RemoteStore

    owner = json.loads((svc.data_dir / "run" / "owner.json").read_text())
    store = RemoteStore(owner["url"], owner["token"])
    job = store.router_state(pid).job
    return json.loads(store.training_metrics(job.job_id) or "{}")
