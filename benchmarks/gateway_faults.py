"""What a caller sees when the router's first choice fails: the gateway's bounded fallbacks, measured.

    .venv/bin/python -m benchmarks.gateway_faults                  # 8 clients, 200 requests per scenario and mode
    .venv/bin/python -m benchmarks.gateway_faults --requests 400

The real API (granian, one worker, tests/support/service.py) in front of the suite's fake OpenAI-compatible upstream
(tests/support/fakes/openai_server.py, in a process of its own, 20 ms per answer), every provider pointed at it and
SWITCHBOARD_GATEWAY_FIRST_BYTE_TIMEOUT_S=0.5. Three custom candidates priced 1 / 2 / 4 with
`cost_quality_tradeoff: 10`, so the router's first choice is always fault-a. Scenarios, each non-streaming and
streaming, 8 client threads:
- 30 %: fault-a fails 3 calls in 10, in a fixed cycle (a 500, a 429, a stall past the timeout);
- every call: fault-a fails every call, 500, 429 and stall in turn.
Printed per scenario: requests, errors the client saw (any non-200 or a stream that did not end in [DONE]),
requests answered by another candidate, attempts per request (most, from `x-switchboard-attempts`; the bound is
SWITCHBOARD_GATEWAY_MAX_ATTEMPTS, 3), and p50/p99 latency (to the whole answer; a stall costs the timeout).
Targets (issue 22): 30 % failing: 0 errors; every call failing: every request answered by another candidate,
<= N attempts each.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from collections import Counter
from multiprocessing.connection import Connection

import httpx
import numpy as np

from benchmarks.gateway_overhead import concurrently
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import running_api

MAX_ATTEMPTS = 3
TIMEOUT_S = 0.5
SCENARIOS = {"30 % failing": ["500", "ok", "ok", "429", "ok", "ok", "stall", "ok", "ok", "ok"],
             "every call failing": ["500", "429", "stall"]}


def custom(model: str, price: float) -> dict:
    return {"provider": "acme", "model": model, "is_custom": True, "context_length": 128000, "input_price": price,
            "output_price": price, "latency": 1.0}


BODY = {"model": "switchboard", "messages": [{"role": "user", "content": "Name the capital of Country007."}],
        "llm_providers": [custom("fault-a", 1.0), custom("fault-b", 2.0), custom("fault-c", 4.0)],
        "cost_quality_tradeoff": 10}


def serve_upstream(pipe: Connection) -> None:
    """The upstream in its own process; commands over the pipe set fault-a's failure cycle."""
    fake = FakeOpenAI(delay_s=0.02, keep_alive=True)
    fake.stall_s = TIMEOUT_S * 3
    fake.start()
    pipe.send(fake.base_url)
    while True:
        command = pipe.recv()
        if command == "stop":
            break
        fake.fault_cycle = {"fault-a": command}
        fake._cycle_calls.clear()
        pipe.send("ok")
    fake.stop()


def one(client: httpx.Client, url: str, headers: dict, stream: bool) -> tuple[bool, str, int, float]:
    """(answered without error, the model that answered, attempts, seconds)."""
    began = time.perf_counter()
    if not stream:
        response = client.post(url, json=BODY, headers=headers)
        ok = response.status_code == 200 and response.json().get("choices") is not None
    else:
        with client.stream("POST", url, json={**BODY, "stream": True}, headers=headers) as response:
            events = [line for line in response.iter_lines() if line.startswith("data:")]
        ok = response.status_code == 200 and bool(events) and events[-1] == "data: [DONE]" \
            and not any('"error"' in e for e in events)
    return (ok, response.headers.get("x-switchboard-model", ""), int(response.headers.get("x-switchboard-attempts", 0)),
            time.perf_counter() - began)


def run(url: str, headers: dict, clients: int, per_client: int, stream: bool) -> list[tuple[bool, str, int, float]]:
    return concurrently(clients, per_client, lambda c: one(c, url, headers, stream))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200, help="per scenario and mode, over all clients")
    args = parser.parse_args()
    per_client = max(1, args.requests // args.clients)

    ours, theirs = multiprocessing.Pipe()
    upstream = multiprocessing.get_context("spawn").Process(target=serve_upstream, args=(theirs,))
    upstream.start()
    base_url = ours.recv()
    env = {"SWITCHBOARD_LLM_API_BASE": base_url, "SWITCHBOARD_LLM_API_KEY": "sk-bench-0123456789",
           "SWITCHBOARD_GATEWAY_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
           "SWITCHBOARD_GATEWAY_FIRST_BYTE_TIMEOUT_S": str(TIMEOUT_S)}
    lines = []
    with running_api(env) as api:
        url = f"{api.base}/v1/chat/completions"
        run(url, api.headers, 2, 2, False)  # warm-up, no faults yet
        for name, cycle in SCENARIOS.items():
            for stream in (False, True):
                ours.send(cycle)
                ours.recv()
                results = run(url, api.headers, args.clients, per_client, stream)
                errors = sum(not ok for ok, _, _, _ in results)
                by_other = sum(ok and model != "acme/fault-a" for ok, model, _, _ in results)
                attempts = Counter(n for _, _, n, _ in results)
                ms = np.array([s for _, _, _, s in results]) * 1000
                lines.append(f"{name:<20} {'stream' if stream else 'create':<7} {len(results):>5} {errors:>7} "
                             f"{by_other:>9} {max(attempts):>9}   {dict(sorted(attempts.items()))!s:<22} "
                             f"{np.percentile(ms, 50):>8.1f} {np.percentile(ms, 99):>8.1f}")
    ours.send("stop")
    upstream.join(timeout=10)
    print(f"gateway faults: {args.clients} clients, upstream 20 ms per answer, first-byte timeout {TIMEOUT_S} s, "
          f"max attempts {MAX_ATTEMPTS}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'scenario':<20} {'mode':<7} {'reqs':>5} {'errors':>7} {'by other':>9} {'most att.':>9}   "
          f"{'attempts: requests':<22} {'p50 ms':>8} {'p99 ms':>8}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
