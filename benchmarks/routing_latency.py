"""Latency and throughput of modelSelect over HTTP on loopback, driven by wrk (a native load generator).

    make bench-latency            # or: .venv/bin/python -m benchmarks.routing_latency --duration 30

Starts the real API (granian, one worker) on a temp data dir, then wrk with 8 connections sends modelSelect
requests with 10 candidates and a ~2,000-character prompt that varies per request (Lua hooks). Prints p50/p99
latency, decisions per second, errors and the server's memory. Targets (issue 3): p50 <= 5 ms, p99 <= 15 ms,
>= 500 decisions/s, server memory <= 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import httpx

from tests.support.service import running_api, tree_rss_mb

CANDIDATES = [("openai", "gpt-4o"), ("openai", "gpt-4o-mini"), ("anthropic", "claude-sonnet-4-5-20250929"),
              ("anthropic", "claude-haiku-4-5-20251001"), ("google", "gemini-2.5-pro"), ("google", "gemini-2.5-flash"),
              ("mistral", "mistral-large-latest"), ("mistral", "mistral-small-latest"), ("deepseek", "deepseek-chat"),
              ("xai", "grok-4.20")]

LUA = r"""
math.randomseed(os.time())
local words = {"explain", "derive", "prove", "summarise", "translate", "compute", "integral", "python", "function",
  "history", "contract", "theorem", "poem", "database", "index", "protein", "market", "equation", "recursion", "law"}
local head = '{"llm_providers": %s, "cost_quality_tradeoff": %d, "messages": [{"role": "user", "content": "'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
request = function()
  local parts = {}
  local n = 0
  while n < 2000 do
    local w = words[math.random(#words)]
    parts[#parts + 1] = w
    n = n + #w + 1
  end
  local body = string.format(head, math.random(0, 10)) .. table.concat(parts, " ") .. '"}]}'
  return wrk.format(nil, nil, nil, body)
end
"""


def to_ms(value: str) -> float:
    """wrk's latency figure ('850.00us', '2.07ms', '1.20s', '1.01m') in milliseconds; NaN when it printed none."""
    found = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", value)
    if found is None:
        return float("nan")
    number, unit = found.groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}[unit]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=30, help="seconds of load")
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: `apt-get install -y wrk` (Debian package), or run `make bench-latency`")

    with running_api() as api:
        providers = json.dumps([{"provider": p, "model": m} for p, m in CANDIDATES])
        url = f"{api.base}/v2/modelRouter/modelSelect"
        probe = httpx.post(url, headers=api.headers,
                           json={"llm_providers": json.loads(providers), "messages": "warm up " * 300})
        probe.raise_for_status()
        script = api.data_dir / "select.lua"
        script.write_text(LUA.replace("%s", providers, 1).replace("Bearer %s", f"Bearer {api.key}"))
        rss_start = tree_rss_mb(api.pid)
        wrk = ["wrk", "-t1", "-c", str(args.connections), "-s", str(script)]
        subprocess.run([*wrk, "-d", "3s", url], capture_output=True, check=True)  # warm-up
        out = subprocess.run([*wrk, "-d", f"{args.duration}s", "--latency", url],
                             capture_output=True, text=True, check=True).stdout
        rss_end = tree_rss_mb(api.pid)

    p50 = to_ms(re.search(r"^\s*50%\s+(\S+)", out, re.M).group(1))
    p99 = to_ms(re.search(r"^\s*99%\s+(\S+)", out, re.M).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    non2xx = int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", out)) else 0
    errors = re.search(r"Socket errors: .*", out)
    print(out)
    print("modelSelect over HTTP, 10 candidates, ~2,000-char prompt, "
          f"{args.connections} connections, {args.duration}s (wrk, loopback, {os.cpu_count()} cores)")
    print(f"  p50 {p50:.2f} ms   (target <= 5)")
    print(f"  p99 {p99:.2f} ms   (target <= 15)")
    print(f"  throughput {rps:.0f} decisions/s   (target >= 500)")
    print(f"  non-2xx {non2xx}; {errors.group(0) if errors else 'no socket errors'}")
    print(f"  server memory {rss_start:.0f} MB at start, {rss_end:.0f} MB at end   (target <= 1024)")
    ok = p50 <= 5 and p99 <= 15 and rps >= 500 and rss_end <= 1024 and non2xx == 0
    print("  all targets met" if ok else "  TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
