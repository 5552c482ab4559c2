"""Mixed load on a real `switchboard serve`: steady modelSelect traffic near the routing benchmark's capacity while
feedback, preference changes, two router trainings and one prompt optimization run (issue 7, "Load").

    .venv/bin/python -m benchmarks.mixed_load                 # 10 minutes at 1,000 decisions/s
    .venv/bin/python -m benchmarks.mixed_load --minutes 2 --rate 600

- modelSelect: wrk (8 connections, one thread), the request of benchmarks/routing_latency.py (10 candidates, a
  varying ~2,000-character prompt), paced in Lua (`delay()`: Debian's wrk has no -R) to about --rate requests/s,
  run as one wrk per minute so p50/p99 come per minute; a Lua `response()` hook counts 5xx separately from 4xx;
- a Python driver: modelSelect + feedback on that session 4 times a second, a preference update every second;
- at 10 % of the run a router training (2,000-row upload), at 15 % a prompt optimization (2 targets, the fake
  OpenAI-compatible server of tests/support/fakes with 50 ms per call), at 50 % a second router training;
- memory (RSS) of the API (granian master + worker) and of the store owner after warm-up (30 s of modelSelect and
  one complete 2,000-row training: one-time costs are in the baseline), every minute (API) and at the end.
Prints per-minute throughput and latency, errors by kind, job outcomes, memory; exits 1 when a target is missed
(any 5xx, memory growth over 10 %, a job not completed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks.routing_latency import CANDIDATES, LUA, to_ms
from tests.support.fakes.openai_server import FakeOpenAI, capital_goldens, teach_goldens
from tests.support.service import Service, free_port, start_service, tree_rss_mb
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

CONNECTIONS = 8
# Pacing and 5xx counting on top of the routing benchmark's request generator (one wrk thread).
LUA_EXTRA = r"""
local pace_ms = PACE_MS
local threads = {}
server_errors = 0  -- global: read from each thread's state in done()
function setup(thread) table.insert(threads, thread) end
function delay() return pace_ms end
function response(status, headers, body)
  if status >= 500 then server_errors = server_errors + 1 end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + (t:get("server_errors") or 0) end
  io.write(string.format("server errors (5xx): %d\n", n))
end
"""
PROVIDERS = [{"provider": p, "model": m} for p, m in CANDIDATES]


@dataclass
class Minute:
    index: int
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    server_errors: int
    socket_errors: str


@dataclass
class Driver:
    """The low-rate traffic: modelSelect + feedback, preference changes; counts every status by endpoint."""

    svc: Service
    statuses: Counter = field(default_factory=Counter)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.svc.admin_key}"}
        with httpx.Client(base_url=self.svc.api_url, headers=headers, timeout=30) as client:
            prefs = [client.post("/v2/preferences/userPreferenceCreate", json={"name": f"load {i}"}).json()
                     ["preference_id"] for i in range(3)]
            tick = 0
            while not self.stop.wait(0.25):
                tick += 1
                self._call(client, "modelSelect", "/v2/modelRouter/modelSelect",
                           {"messages": f"Summarise the history of contract law, part {tick}.",
                            "llm_providers": PROVIDERS[:4]}, then_feedback=True)
                if tick % 4 == 0:
                    pid = prefs[tick % len(prefs)]
                    self._call(client, "userPreferenceUpdate", "/v2/preferences/userPreferenceUpdate",
                               {"preference_id": pid, "name": f"load {tick}", "cost_quality_tradeoff": tick % 11},
                               method="PUT")

    def _call(self, client: httpx.Client, name: str, path: str, body: dict, method: str = "POST",
              then_feedback: bool = False) -> None:
        try:
            r = client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            self.statuses[(name, type(exc).__name__)] += 1
            return
        self.statuses[(name, r.status_code)] += 1
        if then_feedback and r.status_code == 200:
            chosen = r.json()["providers"][0]
            self._call(client, "feedback", "/v2/report/metrics/feedback",
                       {"session_id": r.json()["session_id"], "provider": chosen, "feedback": {"accuracy": 1}})


@dataclass
class Jobs:
    """Two router trainings and one prompt optimization at fixed points of the run, polled until they end."""

    svc: Service
    fake: FakeOpenAI
    seconds: float
    outcomes: dict[str, tuple[str, float]] = field(default_factory=dict)  # job -> (final status, seconds)
    statuses: Counter = field(default_factory=Counter)

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.svc.admin_key}"}
        with httpx.Client(base_url=self.svc.api_url, headers=headers, timeout=60) as client:
            t0 = time.monotonic()
            plan = [(0.10, "training 1", self.train), (0.15, "optimization", self.optimize),
                    (0.50, "training 2", self.train)]
            pending: list[tuple[str, float, object]] = []
            while plan or pending:
                now = time.monotonic() - t0
                while plan and now >= plan[0][0] * self.seconds:
                    _, name, start = plan.pop(0)
                    pending.append((name, time.monotonic(), start(client)))
                for item in list(pending):
                    name, started, poll = item
                    status = poll(client)
                    if status is not None:
                        self.outcomes[name] = (status, time.monotonic() - started)
                        pending.remove(item)
                if now > self.seconds * 3:  # long after the load ended: give up waiting
                    for name, started, _ in pending:
                        self.outcomes[name] = ("still running", time.monotonic() - started)
                    return
                time.sleep(2.0)

    def _count(self, name: str, r: httpx.Response) -> httpx.Response:
        self.statuses[(name, r.status_code)] += 1
        return r

    def train(self, client: httpx.Client):
        r = self._count("trainCustomRouter", client.post(
            "/v2/pzn/trainCustomRouter", files={"dataset_file": ("evals.csv", csv_bytes(2000))},
            data={"language": "english", "llm_providers": LLM_PROVIDERS, "maximize": "true",
                  "prompt_column": "prompt"}))
        r.raise_for_status()
        pref = r.json()["preference_id"]

        def poll(c: httpx.Client) -> str | None:  # the spec's readiness signal: modelSelect stops answering 409
            s = self._count("modelSelect (trained)", c.post("/v2/modelRouter/modelSelect", json={
                "messages": "Compute 31 * 47.", "llm_providers": PROVIDERS[:2], "preference_id": pref}))
            return None if s.status_code == 409 else ("completed" if s.status_code == 200 else f"{s.status_code}")
        return poll

    def optimize(self, client: httpx.Client):
        train, test = capital_goldens(25), capital_goldens(8, start=25)
        teach_goldens(self.fake, train + test)
        r = self._count("optimize", client.post("/v2/prompt/optimize", json={
            "system_prompt": "You are a geography assistant.", "template": "Question: {question}",
            "fields": ["question"], "train_goldens": train, "test_goldens": test,
            "target_models": PROVIDERS[:1] + [{"provider": "anthropic", "model": "claude-haiku-4-5"}],
            "evaluation_metric": "LLMaaJ:Sem_Sim_1"}))
        r.raise_for_status()
        run_id = r.json()["optimization_run_id"]

        def poll(c: httpx.Client) -> str | None:
            status = self._count("optimizeStatus", c.get(f"/v2/prompt/optimizeStatus/{run_id}")).json()["status"]
            return status if status in ("completed", "failed", "cancelled") else None
        return poll


def run_wrk(script: Path, url: str, seconds: int, index: int) -> Minute:
    out = subprocess.run(["wrk", "-t1", "-c", str(CONNECTIONS), "-d", f"{seconds}s", "--latency", "-s", str(script),
                          url], capture_output=True, text=True, check=True).stdout
    if "Requests/sec" not in out or "server errors (5xx)" not in out:  # keep the run going; show what wrk said
        print(f"minute {index}: unexpected wrk output:\n{out}", flush=True)
        return Minute(index, 0.0, float("nan"), float("nan"), 0, 0, 0, "wrk output unreadable")
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket = re.search(r"Socket errors: (.*)", out)
    # Percentiles at the start of a line: the "+/- Stdev" column also prints figures like "98.50%".
    p50, p99 = (to_ms(re.search(rf"^\s*{q}%\s+(\S+)", out, re.M).group(1)) for q in (50, 99))
    return Minute(index, float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), p50, p99,
                  int(re.search(r"(\d+) requests in", out).group(1)), int(non2xx.group(1)) if non2xx else 0,
                  int(re.search(r"server errors \(5xx\): (\d+)", out).group(1)), socket.group(1) if socket else "")


def warm_up(svc: Service, fake: FakeOpenAI, script: Path, url: str) -> None:
    """Pay the one-time costs before the memory baseline, so growth measures what a leak would: 30 s of modelSelect
    (fills the bounded recent-session index and the tokenizer caches) and one complete 2,000-row router training
    like the measured ones (the API's lazy polars import, its allocator's high-water mark for parsing an upload,
    loading a custom router)."""
    run_wrk(script, url, 30, 0)
    with httpx.Client(base_url=svc.api_url, headers=svc.headers, timeout=60) as client:
        poll = Jobs(svc, fake, 0.0).train(client)
        deadline = time.monotonic() + 600
        while poll(client) is None:
            if time.monotonic() > deadline:
                raise SystemExit("the warm-up training did not finish in 10 minutes")
            time.sleep(2.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=int, default=10, help="length of the measured load")
    parser.add_argument("--rate", type=int, default=1000, help="modelSelect requests per second to aim at (wrk)")
    args = parser.parse_args()
    if args.minutes < 1:
        parser.error("--minutes must be at least 1")
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: `apt-get install -y wrk` (Debian package)")

    fake = FakeOpenAI(delay_s=0.05).start()
    os.environ["SWITCHBOARD_LLM_API_BASE"] = fake.base_url
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-mixed-load-")) / "data"
    svc = start_service(data_dir, free_port(), free_port())
    try:
        url = f"{svc.api_url}/v2/modelRouter/modelSelect"
        script = data_dir / "mixed.lua"
        pace_ms = max(0, round(CONNECTIONS * 1000 / args.rate) - 1)  # ~1 ms of each cycle is the request itself
        script.write_text(LUA.replace("%s", json.dumps(PROVIDERS), 1).replace("Bearer %s", f"Bearer {svc.admin_key}")
                          + LUA_EXTRA.replace("PACE_MS", str(pace_ms)))
        warm_up(svc, fake, script, url)
        pids = {part: pid for part, pid in svc.parts().items() if part in ("api", "store")}  # API and store owner
        memory_start = {name: tree_rss_mb(pid) for name, pid in pids.items()}
        driver, jobs = Driver(svc), Jobs(svc, fake, args.minutes * 60.0)
        threads = [threading.Thread(target=driver.run, daemon=True), threading.Thread(target=jobs.run, daemon=True)]
        for t in threads:
            t.start()
        print(f"{'minute':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'5xx':>5}  API MB")
        minutes = []
        for i in range(1, args.minutes + 1):
            m = run_wrk(script, url, 60, i)
            minutes.append(m)
            if i == 1:
                memory_minute_1 = {name: tree_rss_mb(pid) for name, pid in pids.items()}
            print(f"{i:>6} {m.rps:>8.0f} {m.p50_ms:>8.2f} {m.p99_ms:>8.2f} {m.non_2xx:>8} {m.server_errors:>5}  "
                  f"{tree_rss_mb(pids['api']):.0f}{'  socket errors: ' + m.socket_errors if m.socket_errors else ''}",
                  flush=True)
        driver.stop.set()
        memory_end = {name: tree_rss_mb(pid) for name, pid in pids.items()}
        threads[1].join()  # the jobs may still be finishing
    finally:
        svc.stop()
        fake.stop()

    total = sum(m.requests for m in minutes)
    wrk_5xx = sum(m.server_errors for m in minutes)
    other = driver.statuses + jobs.statuses
    other_5xx = sum(n for (_, status), n in other.items() if isinstance(status, int) and status >= 500)
    load = os.getloadavg()
    print(f"\nmodelSelect (wrk, {CONNECTIONS} connections, aimed at {args.rate}/s): {total:,} requests in "
          f"{args.minutes} min = {total / (60 * args.minutes):.0f}/s; p50 {min(m.p50_ms for m in minutes):.2f}-"
          f"{max(m.p50_ms for m in minutes):.2f} ms, p99 {min(m.p99_ms for m in minutes):.2f}-"
          f"{max(m.p99_ms for m in minutes):.2f} ms per minute; non-2xx {sum(m.non_2xx for m in minutes)}, "
          f"5xx {wrk_5xx}")
    print("other traffic: " + ", ".join(f"{name} {status}: {n}" for (name, status), n in sorted(
        other.items(), key=str)))
    print("jobs: " + ", ".join(f"{name} {status} in {secs:.0f} s" for name, (status, secs) in jobs.outcomes.items()))
    growth = {name: (memory_end[name] - memory_start[name]) / memory_start[name] for name in memory_start}
    print("memory: " + ", ".join(f"{name} {memory_start[name]:.0f} -> {memory_end[name]:.0f} MB "
                                 f"({100 * growth[name]:+.1f} %)" for name in memory_start))
    # After one minute the one-time costs are paid (bounded caches filled, the first real upload parsed): growth
    # from there on is what a leak would look like.
    print("memory after minute 1 -> end: " + ", ".join(
        f"{name} {memory_minute_1[name]:.0f} -> {memory_end[name]:.0f} MB "
        f"({100 * (memory_end[name] - memory_minute_1[name]) / memory_minute_1[name]:+.1f} %)" for name in pids))
    print(f"load average at the end: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} ({os.cpu_count()} cores)")
    ok = (wrk_5xx + other_5xx == 0 and all(g <= 0.10 for g in growth.values())
          and all(status == "completed" for status, _ in jobs.outcomes.values()) and len(jobs.outcomes) == 3)
    print("all targets met (zero 5xx, memory growth <= 10 %, every job completed)" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
