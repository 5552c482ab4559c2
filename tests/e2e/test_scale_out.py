"""The production shape, every part its own process: a standalone Prefect server, the system of record, the API
with two granian workers (`switchboard api --workers 2`), and two Prefect workers of a process work pool
(`switchboard deploy --pool`, `prefect worker start`). A router training and a prompt optimization run through them
at the same time, while both API workers take writes, sessions and feedback. Twice: with the store owner
(`switchboard store`, DuckDB), and on PostgreSQL (SWITCHBOARD_DATABASE_URL; the suite's own server,
tests/support/postgres.py) with no owner at all.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from notdiamond import NotDiamond

from api.cli.processes import Child
from tests.support.fakes.openai_server import FakeOpenAI, capital_goldens, teach_goldens
from tests.support.service import BIN, free_port
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

pytestmark = pytest.mark.e2e
POOL = "e2e-process-pool"
DEAR, CHEAP = {"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}
MATH = "Compute 31 * 47 + 512 and then divide the result by 7. Show the arithmetic step by step."
TRIVIA = "Which bridge is famous for being historic? Answer with one short sentence about Japan."


@dataclass
class Shape:
    data_dir: Path
    env: dict[str, str]
    api_url: str
    prefect_url: str
    database_url: str | None = None
    key: str = ""
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.data_dir.parent / f"{name}.log", "ab")
        process = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        path = self.data_dir.parent / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def run(self, *args: str) -> str:
        done = subprocess.run([str(BIN / "switchboard"), *args], env=self.env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def wait_for(self, name: str, url: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.processes[name].poll() is not None:
                raise AssertionError(f"{name} exited:\n{self.log(name)[-3000:]}")
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise AssertionError(f"{name} not ready within {timeout}s:\n{self.log(name)[-3000:]}")

    def stop(self) -> dict[str, int | None]:
        codes: dict[str, int | None] = {}
        for name, process in reversed(list(self.processes.items())):
            Child(name, process).stop(timeout=30)  # SIGTERM to its process group, SIGKILL after the timeout
            codes[name] = process.returncode
        return codes


@pytest.fixture(scope="module", params=["owner", "postgres"])
def shape(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          fake_llm_server: FakeOpenAI) -> Iterator[Shape]:
    root = tmp_path_factory.mktemp("scale-out")
    data = root / "data"
    data.mkdir()
    api_port, prefect_port, store_port = free_port(), free_port(), free_port()
    env = dict(os.environ)
    env.update(SWITCHBOARD_DATA_DIR=str(data), SWITCHBOARD_STORE_PORT=str(store_port),
               PREFECT_API_URL=f"http://127.0.0.1:{prefect_port}/api", PREFECT_HOME=str(root / "prefect"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_WORKER_QUERY_SECONDS="1",
               LITELLM_LOCAL_MODEL_COST_MAP="True", SWITCHBOARD_LLM_API_BASE=fake_llm_server.base_url,
               SWITCHBOARD_AUTH_CACHE_SECONDS="2", SWITCHBOARD_RATE_LIMIT_PER_MINUTE="0")
    shape = Shape(data, env, f"http://127.0.0.1:{api_port}", env["PREFECT_API_URL"])
    if request.param == "postgres":
        from tests.support.postgres import new_database

        shape.database_url = env["SWITCHBOARD_DATABASE_URL"] = new_database()
    try:
        # Independent first steps overlap: the Prefect server and the store owner start together.
        shape.spawn("prefect-server", [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                       "--port", str(prefect_port)])
        if shape.database_url is None:
            shape.spawn("store", [str(BIN / "switchboard"), "store"])
            shape.wait_for("store", f"http://127.0.0.1:{store_port}/internal/health")
        shape.spawn("api", [str(BIN / "switchboard"), "api", "--workers", "2", "--port", str(api_port)])
        out = shape.run("keys", "create", "--user", "scale-out", "--tier", "enterprise", "--prompt-optimization")
        shape.key = out.strip().splitlines()[-1]
        shape.wait_for("prefect-server", f"{shape.prefect_url}/health", timeout=120)
        assert "deployed to work pool" in shape.run("deploy", "--pool", POOL)
        for n in (1, 2):
            shape.spawn(f"worker-{n}", [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--type", "process",
                                        "--name", f"e2e-worker-{n}"])
        shape.wait_for("api", f"{shape.api_url}/internal/health")
        yield shape
    finally:
        shape.stop()


def test_training_and_optimization_run_on_the_work_pool_behind_two_api_workers(
        shape: Shape, fake_llm_server: FakeOpenAI) -> None:
    client = NotDiamond(api_key=shape.key, base_url=shape.api_url, max_retries=0)
    headers = {"Authorization": f"Bearer {shape.key}"}
    train, test = capital_goldens(25, start=300), capital_goldens(6, start=325)
    teach_goldens(fake_llm_server, train + test)
    started = time.monotonic()
    trained = client.custom_router.train_custom_router(
        dataset_file=("evals.csv", csv_bytes(80), "text/csv"), language="english", llm_providers=LLM_PROVIDERS,
        maximize=True, prompt_column="prompt")
    run_id = client.prompt_optimization.optimize(
        system_prompt="You are a geography assistant.", template="Question: {question}", fields=["question"],
        train_goldens=train, test_goldens=test, target_models=[CHEAP], origin_model=DEAR,
        origin_model_evaluation_score=0.5, evaluation_metric="LLMaaJ:Sem_Sim_1").optimization_run_id
    pid = trained.preference_id

    def select(text: str) -> httpx.Response:
        return httpx.post(f"{shape.api_url}/v2/modelRouter/modelSelect", headers=headers, timeout=30,
                          json={"messages": text, "llm_providers": [DEAR, CHEAP], "preference_id": pid})

    router_live = optimized = None
    while router_live is None or optimized is None:
        assert time.monotonic() - started < 140, (f"router live: {router_live}, optimization: {optimized}\n"
                                                  + shape.log("worker-1")[-2000:] + shape.log("worker-2")[-2000:])
        if router_live is None:
            r = select(MATH)
            assert r.status_code in (200, 409), r.text
            router_live = time.monotonic() - started if r.status_code == 200 else None
        if optimized is None:
            status = client.prompt_optimization.get_optimziation_status(run_id).status
            assert status != "failed", client.prompt_optimization.get_optimization_results(run_id)
            optimized = time.monotonic() - started if status == "completed" else None
        time.sleep(0.5)

    # The new router answers on every API worker (published by a flow process, heard through the change feed).
    assert all(select(MATH).json()["providers"][0] == DEAR for _ in range(12))
    assert all(select(TRIVIA).json()["providers"][0] == CHEAP for _ in range(12))
    results = client.prompt_optimization.get_optimization_results(run_id)
    assert [t.result_status for t in results.target_models] == ["completed"]
    assert results.target_models[0].post_optimization_score == 1.0

    # Both flow runs were executed by the work pool's workers, not by a runner.
    from storage.owner import open_store

    store = open_store(shape.data_dir / "switchboard.duckdb", shape.data_dir / "run", database_url=shape.database_url)
    try:
        flow_runs = [store.routers.state(pid).job.flow_run_id, store.jobs.get(run_id).flow_run_id]
    finally:
        store.close()
    assert [pool for pool, _ in read_flow_runs(shape.prefect_url, flow_runs)] == [POOL, POOL]
    assert {state for _, state in read_flow_runs(shape.prefect_url, flow_runs)} == {"COMPLETED"}


def read_flow_runs(prefect_url: str, ids: list[str]) -> list[tuple[str, str]]:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def read() -> list[tuple[str, str]]:
        async with get_client() as client:
            runs = [await client.read_flow_run(i) for i in ids]
        return [(run.work_pool_name, run.state.type.value) for run in runs]

    with temporary_settings({PREFECT_API_URL: prefect_url}):
        return asyncio.run(read())


def test_two_api_workers_share_writes_sessions_feedback_and_revocations(shape: Shape) -> None:
    headers = {"Authorization": f"Bearer {shape.key}"}

    def post(path: str, body: dict, key: str | None = None) -> httpx.Response:
        # A new connection per request: the kernel spreads connections over the workers, a kept-alive one would not.
        auth = {"Authorization": f"Bearer {key}"} if key else headers
        return httpx.post(f"{shape.api_url}{path}", json=body, headers=auth, timeout=30)

    def select(pid: str, text: str, candidates: list[dict]) -> dict:
        r = post("/v2/modelRouter/modelSelect", {"messages": text, "llm_providers": candidates, "preference_id": pid})
        assert r.status_code == 200, r.text
        return r.json()

    with ThreadPoolExecutor(8) as pool:
        def create(i: int) -> str:
            r = post("/v2/preferences/userPreferenceCreate", {"name": f"shared {i}"})
            assert r.status_code == 200, r.text
            return r.json()["preference_id"]

        pids = list(pool.map(create, range(40)))

        def select_then_feedback(i: int) -> int:
            # The feedback often lands on the other worker before the first has flushed the session.
            picked = select(pids[i], f"{MATH} ({i})", [DEAR, CHEAP])
            return post("/v2/report/metrics/feedback", {"session_id": picked["session_id"],
                                                         "provider": picked["providers"][0],
                                                         "feedback": {"accuracy": 1}}).status_code

        assert list(pool.map(select_then_feedback, range(40))) == [200] * 40

    # A preference change reaches every worker's preference cache. Warm both caches first, listing last the model
    # the router picks; with max_model_depth=1 only the first listed can be chosen.
    pid = pids[0]
    usual = select(pid, MATH, [DEAR, CHEAP])["providers"][0]
    order = [CHEAP, DEAR] if usual == DEAR else [DEAR, CHEAP]
    assert [select(pid, MATH, order)["providers"][0] for _ in range(10)] == [usual] * 10
    changed = httpx.put(f"{shape.api_url}/v2/preferences/userPreferenceUpdate", headers=headers, timeout=30,
                        json={"preference_id": pid, "max_model_depth": 1})
    assert changed.status_code == 200, changed.text
    time.sleep(1.0)  # the change feed is polled every 0.5 s
    assert [select(pid, MATH, order)["providers"][0] for _ in range(10)] == [order[0]] * 10

    # Every acknowledged write is in the one database, and both workers served (their pids name their files).
    from storage.owner import open_store

    store = open_store(shape.data_dir / "switchboard.duckdb", shape.data_dir / "run", database_url=shape.database_url)
    try:
        assert set(pids) <= {p.preference_id for p in store.preferences.for_user("scale-out")}
    finally:
        store.close()
    time.sleep(1.5)  # one flush interval
    writers = {re.match(r"part-\d+-(\d+)-", f.name).group(1)
               for f in (shape.data_dir / "events" / "sessions").glob("day=*/part-*.parquet")}
    assert len(writers) == 2, writers

    # A revoked key stops working on every worker once their auth caches expire (2 s in this test).
    doomed = shape.run("keys", "create", "--user", "scale-out").strip().splitlines()[-1]
    assert {post("/v2/preferences/userPreferenceCreate", {}, doomed).status_code for _ in range(10)} == {200}
    shape.run("keys", "revoke", doomed)
    time.sleep(2.5)
    assert {post("/v2/preferences/userPreferenceCreate", {}, doomed).status_code for _ in range(10)} == {401}

    if shape.database_url is not None:  # no owner, and no DuckDB file was ever opened
        assert "store" not in shape.processes and not (shape.data_dir / "switchboard.duckdb").exists()
    for name in ("store", "api"):
        text = shape.log(name).lower()
        assert "locked" not in text and "traceback" not in text, shape.log(name)[-3000:]
