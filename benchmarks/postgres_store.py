"""PostgreSQL as the system of record against the embedded owner shape (docs/benchmarks.md, issue 25).

1. Write throughput: WRITERS writers at once, each with its own store as separate API workers have (a RemoteStore
   to one store owner serving the DuckDB file over RPC; a PostgresStore with its own pool), each doing the same mix
   of writes: create a preference, update it, issue a key. Printed: writes/s of each shape and their ratio.
2. Revocation latency: a key revoked through one PostgresStore, and the time until another PostgresStore's change
   listener hears of it (LISTEN/NOTIFY); p50 and max over REVOCATIONS revocations.
3. modelSelect: benchmarks/model_select_cpu.py (CPU per request, in process) on the embedded shape and with
   SWITCHBOARD_DATABASE_URL, alternating, twice each.

PostgreSQL is the suite's own server (tests/support/postgres.py) with durability turned back on (fsync,
synchronous_commit), like the owner's DuckDB file. Writers are threads of this one process, on one machine.

    .venv/bin/python -m benchmarks.postgres_store
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg

from storage import owner
from storage.interfaces import Store
from storage.keys import hash_key
from storage.postgres_store import PostgresStore
from storage.records import PreferenceChanges, key_subject
from tests.support.api_server import ApiServer
from tests.support.postgres import drop_database, new_database, server_url

WRITERS = 4
ROUNDS = 60  # per writer; each round is 3 writes
REVOCATIONS = 50


def write_mix(store: Store, writer: int) -> int:
    for i in range(ROUNDS):
        pref = store.preferences.create(f"user{writer}", f"p{i}")
        store.preferences.update(pref.user_id, pref.preference_id, PreferenceChanges(max_model_depth=i % 5 + 1))
        store.accounts.issue_key(f"user{writer}")
    return 3 * ROUNDS


def throughput(stores: list[Store]) -> float:
    write_mix(stores[0], 99)  # warm connections and caches
    barrier = threading.Barrier(len(stores))

    def run(i: int) -> tuple[float, int]:
        barrier.wait()
        start = time.perf_counter()
        return start, write_mix(stores[i], i)

    with ThreadPoolExecutor(len(stores)) as pool:
        began = time.perf_counter()
        done = sum(n for _, n in pool.map(run, range(len(stores))))
        return done / (time.perf_counter() - began)


def owner_shape(root: Path) -> float:
    server = ApiServer(root / "owner-data")
    stores: list[Store] = []
    try:
        stores = [owner.open_store(server.db_path, server.run_dir) for _ in range(WRITERS)]
        assert all(not s.owns_file for s in stores)
        return throughput(stores)
    finally:
        for s in stores:
            s.close()
        server.kill()


def postgres_shape(url: str, root: Path) -> float:
    stores = [PostgresStore(url, root, max_connections=2) for _ in range(WRITERS)]
    try:
        return throughput(list(stores))
    finally:
        for s in stores:
            s.close()


def revocation_latency(url: str, root: Path) -> list[float]:
    writer, worker = PostgresStore(url, root), PostgresStore(url, root)
    heard: dict[str, float] = {}
    arrived = threading.Event()

    def listener(subject: str) -> None:
        heard[subject] = time.perf_counter()
        arrived.set()

    worker.subscribe(listener)
    delays = []
    try:
        for _ in range(REVOCATIONS):
            issued = writer.accounts.issue_key("victim")
            arrived.clear()
            subject = key_subject(hash_key(issued.key))
            sent = time.perf_counter()
            writer.accounts.revoke_key(issued.info.key_id)
            while subject not in heard and arrived.wait(5):
                arrived.clear()
            delays.append(heard[subject] - sent)
    finally:
        writer.close()
        worker.close()
    return delays


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="pg-bench-"))
    url = new_database()
    with psycopg.connect(server_url(), autocommit=True) as conn:  # durable commits, as in production
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = on")
        conn.execute("SELECT pg_reload_conf()")
    try:
        pg = postgres_shape(url, root)
        own = owner_shape(root)
        print(f"write throughput, {WRITERS} writers x {ROUNDS} rounds x 3 writes:")
        print(f"  owner shape (DuckDB over RPC): {own:8.0f} writes/s")
        print(f"  PostgreSQL (direct):           {pg:8.0f} writes/s   ratio {pg / own:.2f}x")
        delays = revocation_latency(url, root)
        print(f"key revocation reaching another worker (LISTEN/NOTIFY), {REVOCATIONS} revocations:")
        print(f"  p50 {statistics.median(delays) * 1000:.1f} ms   max {max(delays) * 1000:.1f} ms")
        print("modelSelect, CPU per request (benchmarks/model_select_cpu.py), alternating:")
        for shape in ("embedded", "postgres", "embedded", "postgres"):
            env = dict(os.environ, SWITCHBOARD_DATABASE_URL=url if shape == "postgres" else "")
            done = subprocess.run([sys.executable, "-m", "benchmarks.model_select_cpu"], env=env,
                                  capture_output=True, text=True, check=True)
            print(f"  {shape:9s} {done.stdout.strip().split(': ', 1)[-1]}")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        drop_database(url)


if __name__ == "__main__":
    main()
