"""What the API pays once at start-up and per request outside the router: loading the default router and the
catalogue, and one rate-limit check. Prints the figures; the targets are in docs/benchmarks.md.

    .venv/bin/python -m benchmarks.startup_costs [--repeat 5]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time

from api.catalogue import catalogue as catalogue_module
from api.catalogue import load_catalogue
from api.rate_limit import SELECT, Limit, RateLimiter
from api.routing.default_router import load_default_router


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def cold_catalogue() -> None:
    catalogue_module._matched_models.cache_clear()
    load_catalogue(datetime.date.today())


def rate_limit_check_s(n: int = 200_000) -> float:
    limiter = RateLimiter({SELECT: Limit(10**9, 10**9)})
    started = time.perf_counter()
    for _ in range(n):
        limiter.check("k", SELECT)
    return (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    router = timed(load_default_router, args.repeat)
    cold = timed(cold_catalogue, args.repeat)
    warm = timed(lambda: load_catalogue(datetime.date.today()), args.repeat)
    print(f"default router load: median {statistics.median(router) * 1000:.0f} ms, max {max(router) * 1000:.0f} ms"
          " (target <= 2 s)")
    print(f"catalogue load: cold median {statistics.median(cold) * 1000:.0f} ms (target <= 150 ms), "
          f"warm median {statistics.median(warm) * 1000:.1f} ms (target <= 50 ms)")
    print(f"rate-limit check: {rate_limit_check_s() * 1e6:.2f} µs per call (target <= 20 µs)")


if __name__ == "__main__":
    main()
