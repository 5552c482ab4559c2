"""kill -9 each part of a real `switchboard serve` in turn (the store owner with the API, the flow runner, the
Prefect server) while a router training and a prompt optimization are running. The supervisor restarts the part
(and the parts that go with it, see api/cli/restarts.py); afterwards every acknowledged session, preference,
feedback, usage record and job is still there, no job stays open: runs resume (store owner, API) or end `failed`
with a reason (runner, Prefect), and modelSelect kept answering whenever the API itself was up.

One service for all the kills keeps the test near three minutes on a busy 2-core machine."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fakes.openai_server import FakeOpenAI, capital_goldens, teach_goldens
from tests.support.service import Service, free_port, start_service
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

pytestmark = pytest.mark.e2e
CANDIDATES = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]
T0 = time.monotonic()
BUFFER_WINDOW_S = 1.0  # docs/routing.md, "Sessions, privacy and durability": decisions younger than this may be lost


def wait_for(what: str, check: Callable[[], object], timeout: float, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = check()
        except (httpx.HTTPError, OSError):
            result = None
        if result:
            return result
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


class Client:
    """What the test acknowledged: each of these must survive every kill."""

    def __init__(self, service: Service, fake: FakeOpenAI) -> None:
        self.svc, self.fake, self.headers = service, fake, {"Authorization": f"Bearer {service.admin_key}"}
        self.sessions: list[str] = []
        self.preferences: dict[str, str] = {}  # id -> name last acknowledged
        self.usage: dict[str, int] = {}  # optimization run -> usage records seen
        self.choices: dict[str, dict] = {}  # session -> the model it chose (feedback must name it)

    def call(self, method: str, path: str, **kw) -> httpx.Response:
        return httpx.request(method, self.svc.api_url + path, headers=self.headers, timeout=30, **kw)

    def select(self) -> httpx.Response:
        r = self.call("POST", "/v2/modelRouter/modelSelect",
                      json={"messages": "What is 17 * 23? Explain briefly.", "llm_providers": CANDIDATES})
        if r.status_code == 200:
            self.sessions.append(r.json()["session_id"])
            self.choices[r.json()["session_id"]] = r.json()["providers"][0]
        return r

    def preference(self, name: str) -> None:
        r = self.call("POST", "/v2/preferences/userPreferenceCreate", json={"name": name})
        assert r.status_code == 200, r.text
        pid = r.json()["preference_id"]
        r = self.call("PUT", "/v2/preferences/userPreferenceUpdate", json={"preference_id": pid, "name": name + "!"})
        assert r.status_code == 200, r.text
        self.preferences[pid] = name + "!"

    def remote_store(self):
        from storage.owner import live_owner
        from storage.rpc import RemoteStore

        info = live_owner(self.svc.data_dir / "run")  # never opens the file: the service owns it
        return RemoteStore(info.url, info.token) if info else None

    def start_training(self) -> str:
        r = self.call("POST", "/v2/pzn/trainCustomRouter", files={"dataset_file": ("e.csv", csv_bytes(2000))},
                      data={"language": "english", "llm_providers": LLM_PROVIDERS, "maximize": "true",
                            "prompt_column": "prompt"})
        assert r.status_code == 200, r.text
        return r.json()["preference_id"]

    def training_job(self, preference_id: str):
        store = self.remote_store()
        return store.routers.state(preference_id).job if store else None

    def start_optimization(self, start: int) -> str:
        train, test = capital_goldens(25, start=start), capital_goldens(4, start=start + 25)
        teach_goldens(self.fake, train + test)
        r = self.call("POST", "/v2/prompt/optimize", json={
            "system_prompt": "You are a geography assistant.", "template": "Question: {question}",
            "fields": ["question"], "train_goldens": train, "test_goldens": test,
            "target_models": [{"provider": "openai", "model": "gpt-4o-mini"}],
            "origin_model": {"provider": "openai", "model": "gpt-4o"}, "evaluation_metric": "LLMaaJ:Sem_Sim_1"})
        assert r.status_code == 200, r.text
        return r.json()["optimization_run_id"]

    def origin_scored(self, run_id: str) -> bool:
        results = self.call("GET", f"/v2/prompt/optimizeResults/{run_id}").json()
        origin = results.get("origin_model") or {}
        return origin.get("result_status") == "completed"

    def costs(self, run_id: str) -> int:
        r = self.call("GET", f"/v2/prompt/optimize/{run_id}/costs")
        assert r.status_code == 200, r.text
        return len(r.json()["usage_records"])

    def check_everything_survived(self) -> None:
        for pid, name in self.preferences.items():
            r = self.call("PUT", "/v2/preferences/userPreferenceUpdate", json={"preference_id": pid, "name": name})
            assert r.status_code == 200 and r.json()["name"] == name, r.text
        for sid in self.sessions:  # feedback finds the session only if its decision was stored
            r = self.call("POST", "/v2/report/metrics/feedback", json={
                "session_id": sid, "provider": self.choices[sid], "feedback": {"accuracy": 1}})
            assert r.status_code == 200, (sid, r.text)
        for run_id, seen in self.usage.items():
            assert self.costs(run_id) >= seen, run_id


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    fake = FakeOpenAI().start()
    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", fake.base_url)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_THREADS", "2")
    svc = start_service(tmp_path / "data", free_port(), free_port())
    try:
        yield Client(svc, fake)
    finally:
        svc.stop(signal.SIGINT, timeout=90)
        fake.stop()


def acknowledge_some_work(client: Client, label: str) -> None:
    client.preference(f"pref {label}")
    for _ in range(3):
        r = client.select()
        assert r.status_code == 200, r.text
    first = client.sessions[-3]
    r = client.call("POST", "/v2/report/metrics/feedback",
                    json={"session_id": first, "provider": client.choices[first], "feedback": {"accuracy": 0}})
    assert r.status_code == 200, r.text


def start_jobs_and_kill(client: Client, parts: tuple[str, ...], n: int, with_usage: bool) -> tuple[str, str]:
    """Start a training and an optimization, wait until both run (`with_usage`: and the origin baseline, with its
    usage records, is stored), acknowledge more work, wait out the buffer window, then kill -9 `parts`."""
    client.fake.delay_s = 0.5  # slow enough that the optimization is still going at the kill
    run_id = client.start_optimization(start=100 * n)
    if with_usage:
        wait_for("the optimization's origin baseline", lambda: client.origin_scored(run_id), 120)
        client.usage[run_id] = client.costs(run_id)
        assert client.usage[run_id] > 0
    pref = client.start_training()  # trains for about 25 s here: long enough to be killed in the middle
    acknowledge_some_work(client, f"before killing {parts}")
    wait_for("the training job to be processing",
             lambda: getattr(client.training_job(pref), "status", None) == "processing", 120, every=0.2)
    wait_for("the optimization to be processing", lambda: client.call(
        "GET", f"/v2/prompt/optimizeStatus/{run_id}").json()["status"] == "processing", 60, every=0.2)
    time.sleep(BUFFER_WINDOW_S + 0.2)  # the sessions above are now past the buffer window
    assert client.training_job(pref).status == "processing"
    victims = client.svc.parts()
    for part in parts:
        os.kill(victims[part], signal.SIGKILL)
    print(f"{time.monotonic() - T0:6.1f}s kill -9 {parts}")
    client.fake.delay_s = 0.0  # what is left of a resumed optimization goes fast
    return pref, run_id


def wait_restarted(client: Client, parts: tuple[str, ...], old: dict[str, int], keep_selecting: bool) -> None:
    done_before = "".join(client.svc.output).count("all running again")

    def restarted() -> bool:
        now = client.svc.parts()
        return all(now.get(p) not in (None, old[p]) for p in parts) and \
            "".join(client.svc.output).count("all running again") >= done_before + len(parts)

    def select_meanwhile() -> bool:
        if keep_selecting:  # the API is not the part that died: modelSelect must keep answering
            assert client.select().status_code == 200
        return restarted()

    wait_for(f"{parts} to be restarted", select_meanwhile, 150)
    print(f"{time.monotonic() - T0:6.1f}s restarted {parts}")


def wait_closed(client: Client, pref: str, run_id: str):
    def closed():
        job = client.training_job(pref)
        status = client.call("GET", f"/v2/prompt/optimizeStatus/{run_id}").json()
        return (job, status) if job and job.status not in ("created", "queued", "processing") and \
            status["status"] not in ("queued", "processing") else None

    return wait_for("both jobs to be closed", closed, 120)


def check_resumed(client: Client, pref: str, run_id: str) -> None:
    job, status = wait_closed(client, pref, run_id)
    assert job.status == "completed", (job.status, job.error)
    assert status["status"] == "completed", status

    def routed() -> httpx.Response | None:  # API workers learn of the router from the owner's change feed
        r = client.call("POST", "/v2/modelRouter/modelSelect",
                        json={"messages": "hi", "llm_providers": CANDIDATES, "preference_id": pref})
        return None if r.status_code == 409 else r

    r = wait_for("the API to serve the resumed training's router", routed, 30)
    assert r.status_code == 200, r.text


def check_interrupted(client: Client, pref: str, run_id: str, reason: str | None) -> None:
    """Both jobs ended `failed` with a reason (`reason` when the test knows which part wrote it)."""
    job, _ = wait_closed(client, pref, run_id)
    assert job.status == "failed" and job.error and (reason or "") in job.error, job
    status = client.call("GET", f"/v2/prompt/optimizeStatus/{run_id}").json()
    assert status["status"] == "failed" and status["error"] and (reason or "") in status["error"], status
    results = client.call("GET", f"/v2/prompt/optimizeResults/{run_id}").json()
    assert all(t["result_status"] == "failed" for t in results["target_models"]), results
    if run_id in client.usage:  # its origin baseline had completed before the kill: it stays completed
        assert results["origin_model"]["result_status"] == "completed"
    def refused() -> httpx.Response | None:  # the API learns of the failure from the owner's change feed (~0.5 s)
        r = client.call("POST", "/v2/modelRouter/modelSelect",
                        json={"messages": "hi", "llm_providers": CANDIDATES, "preference_id": pref})
        return None if r.status_code == 409 else r

    r = wait_for("the API to see the training failed", refused, 10)
    assert r.status_code == 400 and r.json()["error"]["code"] == "ROUTER_TRAINING_FAILED", r.text
    store = client.remote_store()
    assert not [j for j in store.jobs.list_open() if j.status == "processing"]


@pytest.mark.timeout(540)  # 2.5 min at load average 3 on 2 cores, 6.5 min at 10
def test_kill_9_each_part_during_a_training_and_an_optimization(served: Client) -> None:
    client = served
    acknowledge_some_work(client, "at start")

    # 1. The store owner and the API: both restarted alone; flow runs wait for the owner and go on.
    pids = client.svc.parts()
    pref, run_id = start_jobs_and_kill(client, ("store", "api"), 1, with_usage=True)
    wait_restarted(client, ("store", "api"), pids, keep_selecting=False)
    check_resumed(client, pref, run_id)
    assert pids["runner"] == client.svc.parts()["runner"], "the runner must not restart for an owner crash"
    client.check_everything_survived()

    # 2. The runner alone (its flow subprocesses are orphaned): the API keeps answering, the orphans are killed
    #    and their flow runs crashed, housekeeping fails the jobs.
    pids = client.svc.parts()
    pref, run_id = start_jobs_and_kill(client, ("runner",), 2, with_usage=False)
    wait_restarted(client, ("runner",), pids, keep_selecting=True)
    check_interrupted(client, pref, run_id, "the flow runner stopped")
    assert pids["api"] == client.svc.parts()["api"], "the API must not restart for a runner crash"
    client.check_everything_survived()

    # 3. The Prefect server: restarted with the runner; the API (and modelSelect) keep running.
    pids = client.svc.parts()
    pref, run_id = start_jobs_and_kill(client, ("prefect",), 3, with_usage=False)
    wait_restarted(client, ("prefect",), pids, keep_selecting=True)
    check_interrupted(client, pref, run_id, None)  # the flow may see Prefect go and fail itself first
    assert pids["api"] == client.svc.parts()["api"]
    client.check_everything_survived()

    assert client.svc.stop(signal.SIGINT, timeout=90) == 0


def test_without_prefect_job_endpoints_answer_503_and_model_select_works(tmp_path: Path) -> None:
    """The API alone with a Prefect URL that refuses connections: starting a job is a clean 503 in the error
    envelope (the job is recorded `failed` with the reason), while modelSelect answers as usual."""
    from api.cli.supervisor import api_argv
    from storage.store import LocalStore

    data = tmp_path / "data"
    store = LocalStore(data / "switchboard.duckdb")
    key = store.accounts.issue_key("ops", tier="enterprise", prompt_optimization=True).key
    store.close()
    port = free_port()
    # The providers get a base URL that is never called (the runs are refused before any flow), so the
    # optimization requests pass the credentials check (api/prompt_optimization/credentials.py) and reach Prefect.
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(data), PREFECT_API_URL=f"http://127.0.0.1:{free_port()}/api",
               LITELLM_LOCAL_MODEL_COST_MAP="True", SWITCHBOARD_LLM_API_BASE="http://127.0.0.1:9/v1")
    api = subprocess.Popen(api_argv("127.0.0.1", port, 1), env=env, start_new_session=True)
    base, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {key}"}
    try:
        wait_for("the API", lambda: httpx.get(f"{base}/internal/health", timeout=2).status_code == 200, 90)
        optimize = {"system_prompt": "Be brief.", "template": "Q: {question}", "fields": ["question"],
                    "train_goldens": capital_goldens(25), "test_goldens": capital_goldens(3, start=25),
                    "target_models": [{"provider": "openai", "model": "gpt-4o-mini"}]}
        for path in ("/v2/prompt/optimize", "/v2/prompt/adapt"):
            started = time.monotonic()
            r = httpx.post(base + path, headers=headers, json=optimize, timeout=60)
            assert r.status_code == 503, r.text
            error = r.json()["error"]
            assert error["code"] == "FLOW_UNAVAILABLE" and error["type"] == "api_error" and error["request_id"]
            assert time.monotonic() - started < 15  # refused at once, not after minutes of retries
        r = httpx.post(base + "/v2/pzn/trainCustomRouter", headers=headers, timeout=60,
                       files={"dataset_file": ("e.csv", csv_bytes(60))},
                       data={"language": "english", "llm_providers": LLM_PROVIDERS, "maximize": "true",
                             "prompt_column": "prompt"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "FLOW_UNAVAILABLE", r.text
        for _ in range(20):
            r = httpx.post(base + "/v2/modelRouter/modelSelect", headers=headers, timeout=30,
                           json={"messages": "What is 2 + 2?", "llm_providers": CANDIDATES})
            assert r.status_code == 200, r.text
        # Another optimization may start at once: the refused one did not stay open (one run per user).
        r = httpx.post(base + "/v2/prompt/optimize", headers=headers, json=optimize, timeout=60)
        assert r.status_code == 503 and r.json()["error"]["code"] == "FLOW_UNAVAILABLE", r.text
    finally:
        os.killpg(api.pid, signal.SIGTERM)
        api.wait(timeout=60)
