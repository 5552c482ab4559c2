"""Shared by the custom router benchmarks: run the real service, upload through the HTTP endpoint, wait until the
router answers, and route prompts through modelSelect."""

from __future__ import annotations

import csv
import io
import json
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.service import Service, free_port, start_service

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def serve(timeout: float = 180) -> Service:
    """`switchboard serve` on a fresh temp data dir and free ports (Prefect server, store owner, API, runner)."""
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-bench-")) / "data"
    return start_service(data_dir, free_port(), free_port(), timeout=timeout)


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


def upload(svc: Service, data: bytes, providers: list[dict], language: str = "english") -> tuple[str, float]:
    """POST the CSV; returns (preference_id, seconds the upload call took)."""
    started = time.perf_counter()
    r = httpx.post(f"{svc.api_url}/v2/pzn/trainCustomRouter", headers=svc.headers, timeout=120,
                   data={"language": language, "llm_providers": json.dumps(providers), "prompt_column": "prompt",
                         "maximize": "true"}, files={"dataset_file": ("evals.csv", data, "text/csv")})
    if r.status_code != 200:
        raise SystemExit(f"upload refused: {r.status_code} {r.text}")
    return r.json()["preference_id"], time.perf_counter() - started


def wait_ready(client: httpx.Client, svc: Service, pid: str, providers: list[dict], timeout: float = 900,
               poll: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.post(f"{svc.api_url}/v2/modelRouter/modelSelect", headers=svc.headers,
                        json={"messages": "ping", "llm_providers": providers, "preference_id": pid})
        if r.status_code == 200:
            return
        if r.status_code != 409:
            raise SystemExit(f"training did not succeed: {r.status_code} {r.text}")
        time.sleep(poll)
    raise SystemExit("training did not finish in time")


def route(client: httpx.Client, svc: Service, pid: str, prompt: str, providers: list[dict], t: int) -> str:
    r = client.post(f"{svc.api_url}/v2/modelRouter/modelSelect", headers=svc.headers,
                    json={"messages": [{"role": "user", "content": prompt}], "llm_providers": providers,
                          "preference_id": pid, "cost_quality_tradeoff": t})
    r.raise_for_status()
    chosen = r.json()["providers"][0]
    return f"{chosen['provider']}/{chosen['model']}"


def training_metrics(svc: Service, pid: str) -> dict:
    """The metrics the flow recorded, read through the owner RPC (the API owns the DuckDB file)."""
    from storage.rpc import RemoteStore

    owner = json.loads((svc.data_dir / "run" / "owner.json").read_text())
    store = RemoteStore(owner["url"], owner["token"])
    job = store.routers.state(pid).job
    return json.loads(store.routers.training_metrics(job.job_id) or "{}")
