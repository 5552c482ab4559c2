"""What the budget check costs a gateway call (issue 34): the store work of one call's reservation and settlement
(api/budgets.py -> storage/repositories/budgets.py), timed per engine, with no budget and with a key budget.

    .venv/bin/python -m benchmarks.budget_check            # 300 calls per case
    .venv/bin/python -m benchmarks.budget_check --calls 1000

Engines: DuckDB in this process (the store's owner, as the API with one worker is), DuckDB through a store owner's
RPC (as API workers behind `switchboard store`; the owner runs in a subprocess), and PostgreSQL (the suite's embedded
server, on a Unix socket). Prints the median and p99 of `reserve` (in the caller's path, before the upstream call)
and of `settle` (after the answer is sent, in a background thread), one call per transaction and in batches.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from storage.budget_records import Settlement, Spender
from storage.interfaces import Store


BATCH = 50


@contextmanager
def engine(name: str) -> Iterator[Store]:
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-budget-bench-")) / "data"
    if name == "duckdb":
        from storage.store import LocalStore

        data_dir.mkdir(parents=True)
        store: Store = LocalStore(data_dir / "switchboard.duckdb")
        try:
            yield store
        finally:
            store.close()
    elif name == "duckdb-rpc":
        from storage import owner
        from tests.support.api_server import ApiServer

        server = ApiServer(data_dir)  # the API owning the file, serving the owner RPC
        store = owner.open_store(server.db_path, server.run_dir)
        try:
            yield store
        finally:
            store.close()
            server.terminate(timeout=20)
    else:
        from storage.postgres_store import PostgresStore
        from tests.support.postgres import drop_database, new_database

        url = new_database()
        data_dir.mkdir(parents=True)
        store = PostgresStore(url, data_dir)
        try:
            yield store
        finally:
            store.close()
            drop_database(url)


def timed(fn: Callable[[], object], calls: int) -> np.ndarray:
    out = np.empty(calls)
    for i in range(calls):
        began = time.perf_counter()
        fn()
        out[i] = (time.perf_counter() - began) * 1000
    return out


def measure(name: str, store: Store, calls: int) -> None:
    issued = store.accounts.issue_key("bench", organization_id="bench-org")
    who = Spender(issued.info.key_id, "bench", "bench-org")
    for budgeted in (False, True):
        if budgeted:
            store.budgets.set_budget("bench", "bench-org", "key", who.key_id, "day", 1e9)
        held = []
        reserve = timed(lambda: held.append(store.budgets.reserve(who, 0.01)), calls)
        pending = iter(held)
        settle = timed(lambda: store.budgets.settle(who, next(pending), 0.005), calls)
        # As the API settles under load: the calls that ended meanwhile, BATCH at a time, one transaction each.
        for _ in range(calls // BATCH):
            held.extend(store.budgets.reserve(who, 0.01) for _ in range(BATCH))
        batches = iter([Settlement(who, held.pop(), 0.005) for _ in range(BATCH)] for _ in range(calls // BATCH))
        batched = timed(lambda: store.budgets.settle_many(next(batches)), calls // BATCH) / BATCH
        label = "key budget" if budgeted else "no budget"
        print(f"{name:10} {label:10}  reserve p50 {np.median(reserve):6.3f} ms  p99 "
              f"{np.percentile(reserve, 99):6.3f} ms   settle p50 {np.median(settle):6.3f} ms  p99 "
              f"{np.percentile(settle, 99):6.3f} ms   settle in batches of {BATCH}: "
              f"{np.median(batched):6.3f} ms a call")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--engines", default="duckdb,duckdb-rpc,postgres")
    args = parser.parse_args()
    for name in args.engines.split(","):
        with engine(name) as store:
            measure(name, store, args.calls)


if __name__ == "__main__":
    main()
