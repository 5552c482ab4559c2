"""The gateway's hostile-upstream cases of benchmarks/hostile_load.py (issue 31), on the bare API (granian, one
worker, tests/support/service.py) with an ordinary fake provider and a hostile one (tests/support/fakes/):

- pool exhaustion: one client sends `--attack-calls` (1,000) non-streamed calls at once to an upstream that
  answers after 60 s, hangs up on each after 3 s and sends it again; meanwhile another user's ordinary gateway call
  (`openai/gpt-4o-mini`, to the ordinary fake) is timed, back to back, against the same call with no attack;
- large bodies: three clients keep asking, one each, for a 64 MB completion, a gzip body inflating to 64 MB and a
  stream with one 64 MB line; meanwhile another user's modelSelect is timed, back to back, against the quiet figure.
Each prints the other user's p50/p99 quiet and under attack; the target (issue 31) is within 1.5x of quiet. The
hostile provider and the attacking client run in processes of their own at the lowest CPU priority (nice 19): in a
deployment both are other machines, and here their threads would otherwise compete with the timed caller for this
process's GIL and with the API for the cores, which would be measured as the API's delay.

    .venv/bin/python -m benchmarks.hostile_load --only pool-exhaustion [--seconds 10]
    .venv/bin/python -m benchmarks.hostile_load --only large-body [--seconds 10]
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tests.support.fakes.hostile_upstream import HostileUpstream
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import BIN, LocalApi, running_api

ASK = [{"role": "user", "content": "What is the capital of Italy?"}]
HOSTILE = {"provider": "hostile", "is_custom": True, "context_length": 128000, "input_price": 0.01,
           "output_price": 0.01, "latency": 1.0}
SELECT = {"messages": "What is the capital of Italy?",
          "llm_providers": [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]}
Result = tuple[str, float, float, str]


def serve_hostile(settings: dict[str, Any], conn: Connection) -> None:
    """The hostile provider in a process of its own: sends its URL, serves until told, sends its `in_flight`."""
    os.nice(19)  # another machine in a deployment: not to compete with what is measured
    fake = HostileUpstream()
    for name, value in settings.items():
        setattr(fake, name, value)
    for model in ("huge", "gzip-bomb", "huge-line"):
        fake.huge(model)  # built before anything is timed
    conn.send(fake.start().base_url)
    conn.recv()
    conn.send(fake.in_flight)
    fake.stop()


@contextmanager
def in_process(target: Any, *args: Any) -> Iterator[Connection]:
    """`target(*args, conn)` in a spawned process; yields our end of `conn`."""
    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(target=target, args=(*args, theirs), daemon=True)
    process.start()
    try:
        yield ours
    finally:
        process.join(timeout=150)
        if process.is_alive():
            process.kill()


@contextmanager
def gateway_with_hostile_upstream(**hostile: Any) -> Iterator[tuple[LocalApi, Connection]]:
    """The bare API, its providers an ordinary fake (here) and a hostile one (another process, `hostile` its
    settings); yields the API and the hostile process's pipe (send anything: it stops and answers its in_flight)."""
    # HTTP/1.0: each of the other user's calls needs a connection of the pool, as once kept-alive ones have expired
    # (a kept-alive idle connection is handed out even when the pool is full, which would hide the exhaustion).
    ordinary = FakeOpenAI().start()
    with in_process(serve_hostile, hostile) as fake:
        env = {"SWITCHBOARD_LLM_API_BASE": ordinary.base_url, "SWITCHBOARD_LLM_API_KEY": "sk-bench-ordinary-012345",
               "SWITCHBOARD_HOSTILE_API_BASE": fake.recv(), "SWITCHBOARD_HOSTILE_API_KEY": "sk-bench-hostile-012345"}
        try:
            with running_api(env) as api:
                yield api, fake
        finally:
            ordinary.stop()


def new_key(api: LocalApi, user: str) -> str:
    out = subprocess.run([str(BIN / "switchboard"), "keys", "create", "--user", user], check=True, text=True,
                         capture_output=True, env={**os.environ, "SWITCHBOARD_DATA_DIR": str(api.data_dir)})
    return out.stdout.strip().splitlines()[-1]


def timed_calls(url: str, body: dict, key: str, seconds: float) -> dict[str, float]:
    """One caller's requests back to back for `seconds`: p50, p99 and max in ms, and how many failed."""
    took, failed = [], 0
    with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {key}"}) as client:
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            began = time.perf_counter()
            failed += client.post(url, json=body).status_code != 200
            took.append((time.perf_counter() - began) * 1000)
    ms = np.array(took)
    return {"p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)), "max": float(ms.max()),
            "n": float(len(ms)), "failed": float(failed)}


def attack_until_told(url: str, key: str, bodies: list[dict], calls: int, hang_up_s: float, conn: Connection) -> None:
    """An Attack in a process of its own, until anything arrives on `conn`; then sends back its statuses."""
    os.nice(19)  # another machine in a deployment: not to compete with what is measured
    attack = Attack(url, key, bodies, calls, hang_up_s)
    thread = threading.Thread(target=attack.run, daemon=True)
    thread.start()
    conn.recv()
    attack.stop.set()
    thread.join(timeout=hang_up_s + 10)
    conn.send(attack.statuses)


class Attack:
    """`calls` concurrent requests of one hostile client, each sent again when it ends, until stopped; `statuses`
    counts what came back (`timeout`: the client hung up)."""

    def __init__(self, url: str, key: str, bodies: list[dict], calls: int, hang_up_s: float) -> None:
        self.url, self.key, self.bodies, self.calls, self.hang_up_s = url, key, bodies, calls, hang_up_s
        self.stop, self.statuses = threading.Event(), dict[str, int]()

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        limits = httpx.Limits(max_connections=self.calls, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=self.hang_up_s, limits=limits,
                                     headers={"Authorization": f"Bearer {self.key}"}) as client:
            await asyncio.gather(*(self._one(client, i) for i in range(self.calls)))

    async def _one(self, client: httpx.AsyncClient, i: int) -> None:
        while not self.stop.is_set():
            try:
                outcome = str((await client.post(self.url, json=self.bodies[i % len(self.bodies)])).status_code)
            except httpx.TimeoutException:
                outcome = "timeout"
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            self.statuses[outcome] = self.statuses.get(outcome, 0) + 1


def peak_rss_mb(pid: int) -> float:
    """The largest resident size any process of the API's session reached (granian serves from a worker)."""
    peak = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            if os.getsid(int(status.parent.name)) != pid:
                continue
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue
        peak = max(peak, int(fields.get("VmHWM", "0 kB").split()[0]))
    return peak / 1024


def compare(label: str, quiet: dict[str, float], during: dict[str, float], statuses: dict[str, int]) -> list[Result]:
    print(f"{label}: quiet p50 {quiet['p50']:.2f} ms, p99 {quiet['p99']:.2f} ms ({quiet['n']:.0f} calls, "
          f"{quiet['failed']:.0f} failed); under attack p50 {during['p50']:.2f} ms, p99 {during['p99']:.2f} ms, max "
          f"{during['max']:.0f} ms ({during['n']:.0f} calls, {during['failed']:.0f} failed); the attack's answers "
          f"{dict(sorted(statuses.items()))}", flush=True)
    return [(f"{label}: p50 under attack / quiet", during["p50"] / quiet["p50"], 1.5, "x"),
            (f"{label}: p99 under attack / quiet", during["p99"] / quiet["p99"], 1.5, "x"),
            (f"{label}: calls that failed under attack", during["failed"], 0.0, "")]


def under_attack(url: str, body: dict, key: str, seconds: int, attack: tuple, settle_s: float) -> tuple[dict, dict]:
    """The timed caller's figures while `attack` (attack_until_told's arguments) runs, and the attack's statuses."""
    with in_process(attack_until_told, *attack) as attacker:
        time.sleep(settle_s)
        during = timed_calls(url, body, key, seconds)
        attacker.send("stop")
        return during, attacker.recv()


def pool_exhaustion(seconds: int, attack_calls: int = 1000) -> list[Result]:
    with gateway_with_hostile_upstream(slow_s=60.0) as (api, hostile):
        url = f"{api.base}/v1/chat/completions"
        other = {"model": "openai/gpt-4o-mini", "messages": ASK}
        timed_calls(url, other, api.key, 2)  # warm-up: the HTTP client, the upstream connection
        quiet = timed_calls(url, other, api.key, seconds)
        slow = {"model": "switchboard", "messages": ASK, "llm_providers": [{**HOSTILE, "model": "slow"}]}
        # settle: the first wave is in, and the first hang-ups (3 s) have happened
        during, statuses = under_attack(url, other, api.key, seconds,
                                        (url, new_key(api, "attacker"), [slow], attack_calls, 3.0), settle_s=5)
        time.sleep(1)
        hostile.send("stop")
        print(f"  upstream calls still held open by the API 1 s after the attack: {hostile.recv()}", flush=True)
        return compare(f"another user's gateway call while one client holds {attack_calls:,} slow calls",
                       quiet, during, statuses)


def large_bodies(seconds: int, huge_mb: int = 64) -> list[Result]:
    with gateway_with_hostile_upstream(huge_bytes=huge_mb * 1024 * 1024) as (api, hostile):
        url = f"{api.base}/v2/modelRouter/modelSelect"
        timed_calls(url, SELECT, api.key, 2)
        # the gateway loads its HTTP client on its first call (docs/architecture.md, rule 3): not the attack's cost
        httpx.post(f"{api.base}/v1/chat/completions", headers=api.headers, timeout=60,
                   json={"model": "openai/gpt-4o-mini", "messages": ASK}).raise_for_status()
        quiet = timed_calls(url, SELECT, api.key, seconds)
        bodies = [{"model": "switchboard", "messages": ASK, "stream": model == "huge-line",
                   "llm_providers": [{**HOSTILE, "model": model}]} for model in ("huge", "gzip-bomb", "huge-line")]
        rss_before = peak_rss_mb(api.pid)
        during, statuses = under_attack(url, SELECT, api.key, seconds, (
            f"{api.base}/v1/chat/completions", new_key(api, "attacker"), bodies, 3, 120.0), settle_s=1)
        print(f"  the API's peak resident memory: {rss_before:.0f} MB before the attack, "
              f"{peak_rss_mb(api.pid):.0f} MB after", flush=True)
        hostile.send("stop")
        hostile.recv()
        return compare(f"another user's modelSelect while {huge_mb} MB answers arrive", quiet, during, statuses)
