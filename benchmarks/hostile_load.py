"""What careless or hostile traffic does to everyone else, on a real `switchboard serve` (store owner + API):

1. modelSelect p99 (wrk, 16 connections) while large router-training uploads are parsed (target <= 30 ms);
2. another user's modelSelect p50 during a flood of ~250 requests/s with random keys (target <= 5 ms);
3. the store owner paused (SIGSTOP) for 12 s: cached keys keep their latency, an unknown key gets 503 within 2 s;
4. how long a revocation takes to reach the API (target <= 1 s);
5. another user's modelSelect p50 while one caller keeps sending 1.9 MB prompts as a list of strings (the shape
   that was worked on the event loop, holding every other request for 0.7-3 s), as a ratio to the quiet p50 of the
   same run (target <= 3x).
6. 1,100 idle connections (no byte sent) and 100 that declare a body and never send it: modelSelect (wrk, 8
   connections, while they are all open) keeps >= 70% of its throughput without them, with no errors, and the
   server closes each within its header or body timeout (+5 s).
7. pool exhaustion (issue 31): another user's gateway call while one client keeps 1,000 calls to a slow upstream
   open and hangs up on each after 3 s; p50 and p99 within 1.5x of quiet (benchmarks/hostile_gateway.py);
8. large bodies (issue 31): another user's modelSelect while 64 MB answers (plain, gzip-inflating, one SSE line)
   arrive from an upstream; p50 and p99 within 1.5x of quiet.
Cases 7 and 8 run on the bare API (no Prefect) with fake providers.

    .venv/bin/python -m benchmarks.hostile_load [--seconds 20]
        [--only large-content|idle-flood|pool-exhaustion|large-body]

Needs wrk (`apt-get install -y wrk`). Prints each figure against its target; exits 1 if one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from api.cli.http_options import raise_open_file_limit
from api.settings import get_settings
from benchmarks.hostile_gateway import large_bodies, pool_exhaustion
from benchmarks.routing_latency import CANDIDATES, LUA, to_ms
from tests.support.service import BIN, Service, free_port, start_service

MODELS = [("openai", "gpt-4o"), ("openai", "gpt-4o-mini")]


def wrk(script: Path, url: str, seconds: int, connections: int) -> dict[str, float]:
    out = subprocess.run(["wrk", "-t1", "-c", str(connections), "-d", f"{seconds}s", "--latency", "-s", str(script),
                          url], capture_output=True, text=True, check=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {"p50": to_ms(re.search(r"^\s*50%\s+(\S+)", out, re.M).group(1)),
            "p99": to_ms(re.search(r"^\s*99%\s+(\S+)", out, re.M).group(1)),
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "non2xx": float(non2xx.group(1)) if non2xx else 0.0,
            "socket_errors": float(sum(map(int, errors.groups()))) if errors else 0.0}


def upload_csv(rows: int) -> bytes:
    """~5 MB that parse in full and are then refused (an invalid score on the last row): the API does all of an
    upload's work, and no training flow starts to compete for the cores with what is measured."""
    lines = ["prompt," + ",".join(f"{p}/{m}/{k}" for p, m in MODELS for k in ("score", "response"))]
    filler = "lorem ipsum dolor sit amet " * 20
    lines += [f'"question {i}: {filler}",{i % 2},"ok",{(i + 1) % 2},"ok"' for i in range(rows)]
    lines.append('"the last question",not-a-number,"ok",1,"ok"')
    return ("\n".join(lines) + "\n").encode()


def keep_uploading(svc: Service, stop: threading.Event, done: list[float]) -> None:
    data = upload_csv(9_000)  # ~5 MB: the largest upload allowed
    providers = json.dumps([{"provider": p, "model": m} for p, m in MODELS])
    with httpx.Client(timeout=120) as client:
        while not stop.is_set():
            started = time.monotonic()
            r = client.post(f"{svc.api_url}/v2/pzn/trainCustomRouter", headers=svc.headers, files={
                "dataset_file": ("evals.csv", data, "text/csv")}, data={
                "language": "english", "llm_providers": providers, "prompt_column": "prompt", "maximize": "true"})
            if r.status_code != 400 or r.json()["error"]["code"] != "INVALID_SCORE":
                print(f"  upload answered {r.status_code}: {r.text[:200]}", flush=True)
            done.append(time.monotonic() - started)


def flood(url: str, rate: int, stop: threading.Event, statuses: dict[int, int]) -> None:
    body = {"messages": "hello", "llm_providers": [{"provider": p, "model": m} for p, m in MODELS]}
    with httpx.Client(timeout=10) as client:
        i = 0
        while not stop.is_set():
            started = time.monotonic()
            r = client.post(url, json=body, headers={"Authorization": f"Bearer sb-random-{os.getpid()}-{i}"})
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            i += 1
            time.sleep(max(0.0, 1.0 / rate - (time.monotonic() - started)))


def new_key(svc: Service, user: str) -> str:
    out = subprocess.run([str(BIN / "switchboard"), "keys", "create", "--user", user], env=svc.env,
                         capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def keep_sending_large(url: str, key: str, stop: threading.Event, statuses: dict[int, int]) -> None:
    """One caller, one connection, back to back: 1.9 MB of prompt as `"content": ["..."]`."""
    text = "lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 33_000  # 1.9 MB
    body = json.dumps({"messages": [{"role": "user", "content": [text]}],
                       "llm_providers": [{"provider": p, "model": m} for p, m in MODELS]}).encode()
    headers = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
    with httpx.Client(timeout=60) as client:
        while not stop.is_set():
            r = client.post(url, content=body, headers=headers)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1


def large_content(svc: Service, script: Path, url: str, seconds: int) -> list[tuple[str, float, float, str]]:
    quiet = wrk(script, url, seconds, 8)
    stop, statuses = threading.Event(), {}
    sender = threading.Thread(target=keep_sending_large, args=(url, new_key(svc, "large-prompts"), stop, statuses))
    sender.start()
    during = wrk(script, url, seconds, 8)
    stop.set()
    sender.join()
    print(f"quiet: p50 {quiet['p50']:.2f} ms, p99 {quiet['p99']:.2f} ms, {quiet['rps']:.0f}/s; while one caller sends "
          f"1.9 MB prompts ({statuses}): p50 {during['p50']:.2f} ms, p99 {during['p99']:.2f} ms, "
          f"{during['rps']:.0f}/s, non-2xx {during['non2xx']:.0f}", flush=True)
    return [("another user's modelSelect p50 during 1.9 MB list-of-strings prompts / quiet p50",
             during["p50"] / quiet["p50"], 3.0, "x")]
def open_flood(svc: Service, idle: int, slow_bodies: int) -> list[tuple[socket.socket, float]]:
    """`idle` sockets that send nothing and `slow_bodies` that send a head declaring a body and nothing more."""
    host, port = svc.api_url.removeprefix("http://").rsplit(":", 1)
    head = (b"POST /v2/modelRouter/modelSelect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n")
    opened = []
    for i in range(idle + slow_bodies):
        sock = socket.create_connection((host, int(port)), timeout=30)
        if i >= idle:
            sock.sendall(head)
        opened.append((sock, time.monotonic()))
    return opened


def seconds_held(opened: list[tuple[socket.socket, float]], limit: float = 120.0) -> list[float]:
    """How long the server kept each socket open (read until it closes); `limit` for one it never closes."""
    held = [limit] * len(opened)
    with selectors.DefaultSelector() as selector:
        for i, (sock, _) in enumerate(opened):
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, i)
        left, deadline = len(opened), time.monotonic() + limit
        while left and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1.0):
                try:
                    data = key.fileobj.recv(65536)
                except (ConnectionResetError, BlockingIOError) as exc:
                    data = b"" if isinstance(exc, ConnectionResetError) else b"?"
                if not data:
                    held[key.data] = time.monotonic() - opened[key.data][1]
                    selector.unregister(key.fileobj)
                    left -= 1
    for sock, _ in opened:
        sock.close()
    return held


def idle_flood(script: Path, url: str, svc: Service, results: list, rounds: int = 3) -> None:
    """modelSelect (wrk, 8 connections, 5 s) without and then with the flood open, `rounds` times (the flood is
    closed by the server after the header timeout, so each round opens a fresh one); medians of each."""
    settings = get_settings()  # the timeouts `serve` gave granian and the app (the same environment)
    raise_open_file_limit()  # this process holds the 1,200 sockets
    without, during, held = [], [], []
    for _ in range(rounds):
        without.append(wrk(script, url, 5, 8))
        opened = open_flood(svc, 1_100, 100)
        during.append(wrk(script, url, 5, 8))  # within the header timeout: every flood socket is open meanwhile
        held.append(seconds_held(opened))
    rps = statistics.median(r["rps"] for r in during)
    ratio = rps / statistics.median(r["rps"] for r in without)
    errors = sum(r["socket_errors"] + r["non2xx"] for r in during)
    idle_held, slow_held = max(max(h[:1_100]) for h in held), max(max(h[1_100:]) for h in held)
    print(f"1,100 idle + 100 slow-body connections ({rounds} rounds): modelSelect {rps:.0f}/s, {ratio:.2f} of the "
          f"rate without them, p50 {statistics.median(r['p50'] for r in during):.2f} ms, p99 "
          f"{statistics.median(r['p99'] for r in during):.2f} ms, {errors:.0f} errors; idle ones held at most "
          f"{idle_held:.1f} s, slow-body ones {slow_held:.1f} s", flush=True)
    results.append(("modelSelect throughput with 1,200 hostile connections open, over without", ratio, 0.7, "ratio"))
    results.append(("socket errors and non-2xx answers during that flood", errors, 0.0, "errors"))
    results.append(("longest an idle connection was held", idle_held, settings.http_header_timeout_s + 5, "s"))
    results.append(("longest a connection that never sent its body was held", slow_held,
                    settings.http_body_idle_timeout_s + 5, "s"))


def revocation_delay(svc: Service) -> float:
    out = subprocess.run([str(BIN / "switchboard"), "keys", "create", "--user", "revoke-me"], env=svc.env,
                         capture_output=True, text=True, check=True).stdout
    key = out.strip().splitlines()[-1]
    headers = {"Authorization": f"Bearer {key}"}
    body = {"messages": "hi", "llm_providers": [{"provider": p, "model": m} for p, m in MODELS]}
    url = f"{svc.api_url}/v2/modelRouter/modelSelect"
    assert httpx.post(url, json=body, headers=headers).status_code == 200  # the key is now in the auth cache
    subprocess.run([str(BIN / "switchboard"), "keys", "revoke", key], env=svc.env, capture_output=True, check=True)
    revoked = time.monotonic()
    while httpx.post(url, json=body, headers=headers).status_code == 200:
        if time.monotonic() - revoked > 60:
            return float("inf")
        time.sleep(0.02)
    return time.monotonic() - revoked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=20, help="seconds of each loaded measurement")
    parser.add_argument("--only", choices=["large-content", "idle-flood", "pool-exhaustion", "large-body"],
                        help="measure only this figure")
    args = parser.parse_args()
    if args.only in ("pool-exhaustion", "large-body"):  # the bare API with fake providers: no wrk, no Prefect
        raise_open_file_limit()  # the attack holds 1,000 connections
        return report(pool_exhaustion(args.seconds) if args.only == "pool-exhaustion" else large_bodies(args.seconds))
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: `apt-get install -y wrk` (Debian package)")
    data = Path(tempfile.mkdtemp(prefix="switchboard-hostile-")) / "data"
    svc = start_service(data, free_port(), free_port())
    results: list[tuple[str, float, float, str]] = []  # (figure, value, target, unit)
    try:
        url = f"{svc.api_url}/v2/modelRouter/modelSelect"
        providers = json.dumps([{"provider": p, "model": m} for p, m in CANDIDATES])
        script = data.parent / "select.lua"
        script.write_text(LUA.replace("%s", providers, 1).replace("Bearer %s", f"Bearer {svc.admin_key}"))
        wrk(script, url, 3, 8)  # warm-up
        if args.only == "idle-flood":
            idle_flood(script, url, svc, results)
            return report(results)
        results += large_content(svc, script, url, args.seconds)
        if args.only == "large-content":
            return report(results)

        quiet = wrk(script, url, args.seconds, 16)
        print(f"quiet: p50 {quiet['p50']:.2f} ms, p99 {quiet['p99']:.2f} ms, {quiet['rps']:.0f}/s", flush=True)

        stop, durations = threading.Event(), []
        uploader = threading.Thread(target=keep_uploading, args=(svc, stop, durations))
        uploader.start()
        during = wrk(script, url, args.seconds, 16)
        stop.set()
        uploader.join()
        print(f"during {len(durations)} uploads of ~5 MB: p50 {during['p50']:.2f} ms, p99 {during['p99']:.2f} ms",
              flush=True)
        results.append(("modelSelect p99 while uploads are parsed (16 connections)", during["p99"], 30.0, "ms"))

        stop, statuses = threading.Event(), {}
        flooder = threading.Thread(target=flood, args=(url, 250, stop, statuses))
        flooder.start()
        flooded = wrk(script, url, args.seconds, 8)
        stop.set()
        flooder.join()
        print(f"during a random-key flood ({sum(statuses.values())} requests, statuses {statuses}): "
              f"p50 {flooded['p50']:.2f} ms, p99 {flooded['p99']:.2f} ms", flush=True)
        results.append(("another user's modelSelect p50 during a 250/s random-key flood", flooded["p50"], 5.0, "ms"))

        owner = svc.parts()["store"]
        os.killpg(owner, signal.SIGSTOP)  # the whole group: granian serves from a worker process
        try:
            started = time.monotonic()
            unknown = httpx.post(url, json={"messages": "hi", "llm_providers": [dict(zip(("provider", "model"), m))
                                                                                for m in MODELS]},
                                 headers={"Authorization": "Bearer sb-never-issued"}, timeout=30)
            unknown_s = time.monotonic() - started
            paused = wrk(script, url, min(args.seconds, 10), 8)
        finally:
            os.killpg(owner, signal.SIGCONT)
        print(f"store owner paused: unknown key -> {unknown.status_code} in {unknown_s:.2f} s; cached keys p50 "
              f"{paused['p50']:.2f} ms, p99 {paused['p99']:.2f} ms, non-2xx {paused['non2xx']:.0f}", flush=True)
        results.append(("unknown key answered while the owner is paused", unknown_s, 2.5, "s"))
        results.append(("cached keys' p99 while the owner is paused", paused["p99"], 30.0, "ms"))
        if unknown.status_code != 503:
            results.append(("unknown key's status while the owner is paused (503 expected)", unknown.status_code,
                            503, ""))

        delay = revocation_delay(svc)
        results.append(("revocation reaches the API", delay, 1.0, "s"))

        idle_flood(script, url, svc, results)
    finally:
        svc.stop()
    raise_open_file_limit()
    results += pool_exhaustion(args.seconds) + large_bodies(args.seconds)
    return report(results)


def report(results: list[tuple[str, float, float, str]]) -> int:
    ok = True
    print(f"\nhostile load on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}:")
    for figure, value, target, unit in results:
        op = "=" if unit == "" else ">=" if unit == "ratio" else "<="
        met = value == target if op == "=" else value >= target if op == ">=" else value <= target
        ok &= met
        print(f"  {figure}: {value:.2f} {unit} (target {op} {target:g} {unit}) {'met' if met else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
