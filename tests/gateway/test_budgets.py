"""Budgets on the gateway through the real server (issue 34, item 3): a key over its budget gets 429
BUDGET_EXCEEDED in OpenAI's error shape, naming the budget, and no provider is called; eight concurrent clients
against a $1.00 key budget, with a fake upstream of known prices, overspend by at most one request's reservation.
On DuckDB (one API worker) and on PostgreSQL (two API workers: the check holds across processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from api.budgets import prompt_tokens_of, worst_case_usd
from api.cli.processes import Child, free_port
from api.cli.supervisor import api_argv
from api.observability.metrics_dir import fresh_metrics_env
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import wait_for_api

ROOT = Path(__file__).resolve().parents[2]
PRICE = 1000.0  # USD per million tokens, in and out: a few cents a call
MAX_TOKENS = 20
ASK = [{"role": "user", "content": "What is the capital of Italy?"}]
MODEL = {"provider": "mine", "model": "priced", "is_custom": True, "context_length": 128000,
         "input_price": PRICE, "output_price": PRICE, "latency": 1.0}
BODY = {"model": "switchboard", "messages": ASK, "max_tokens": MAX_TOKENS, "llm_providers": [MODEL]}
# What the gateway reserves for BODY (api/budgets.py): the bound on overspend.
RESERVATION = worst_case_usd(PRICE, PRICE, prompt_tokens_of(ASK), MAX_TOKENS, 128000, 4096)


@dataclass
class Served:
    base: str
    admin: dict[str, str]
    member: dict[str, str]
    member_key_id: str


@pytest.fixture(scope="module")
def fake_upstream() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module", params=["duckdb", "postgres"])
def served(request: pytest.FixtureRequest, fake_upstream: FakeOpenAI) -> Iterator[Served]:
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-budgets-"))
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(data_dir), LITELLM_LOCAL_MODEL_COST_MAP="True",
               SWITCHBOARD_LLM_API_BASE=fake_upstream.base_url, SWITCHBOARD_SESSION_FLUSH_SECONDS="0.2")
    workers, url = 1, None
    if request.param == "postgres":
        from storage.postgres_store import PostgresStore
        from tests.support.postgres import drop_database, new_database

        url, workers = new_database(), 2
        env["SWITCHBOARD_DATABASE_URL"] = url
        store = PostgresStore(url, data_dir)
    else:
        from storage.store import LocalStore

        store = LocalStore(data_dir / "switchboard.duckdb")
    admin = store.accounts.issue_key("root", organization_id="acme", is_admin=True)
    member = store.accounts.issue_key("member", organization_id="acme")
    store.close()
    env.update(fresh_metrics_env(data_dir / "run"))
    port = free_port()
    server = subprocess.Popen(api_argv("127.0.0.1", port, workers), env=env, cwd=ROOT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_api(base)
        yield Served(base, {"Authorization": f"Bearer {admin.key}"}, {"Authorization": f"Bearer {member.key}"},
                     member.info.key_id)
    finally:
        Child("API", server).stop(timeout=30)
        if url is not None:
            drop_database(url)


def set_budget(served: Served, limit: float | None) -> None:
    response = httpx.put(f"{served.base}/admin/budgets", headers=served.admin, timeout=30, json={
        "scope": "key", "subject_id": served.member_key_id, "period": "day", "limit_usd": limit})
    assert response.status_code == 200, response.text


def spent_today(served: Served) -> float:
    """The member key's settled spend today, as an admin lists it."""
    keys = httpx.get(f"{served.base}/admin/keys", headers=served.admin, timeout=30).json()["keys"]
    return next(k["spent_today_usd"] for k in keys if k["key_id"] == served.member_key_id)


def settled_spend(served: Served, start: float) -> float:
    """Spend since `start`, once the settlements (run just after each answer is sent) have stopped moving it."""
    last, deadline = -1.0, time.monotonic() + 30
    while time.monotonic() < deadline:
        spent = spent_today(served) - start
        if spent == last and spent > 0:
            return spent
        last = spent
        time.sleep(0.5)
    return last


def test_a_key_over_its_budget_is_refused_in_openais_shape_and_no_provider_is_called(
        served: Served, fake_upstream: FakeOpenAI) -> None:
    set_budget(served, RESERVATION / 2)  # less than one call's worst case
    calls_before = len(fake_upstream.calls)
    refused = httpx.post(f"{served.base}/v1/chat/completions", json=BODY, headers=served.member, timeout=30)
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "budget_exceeded" and error["type"] == "insufficient_quota"
    assert "daily budget of key" in error["message"] and "resets at" in error["message"]
    assert int(refused.headers["retry-after"]) >= 1
    assert len(fake_upstream.calls) == calls_before
    metrics = httpx.get(f"{served.base}/metrics", timeout=30).text
    assert 'switchboard_refusals_total{code="BUDGET_EXCEEDED"}' in metrics
    set_budget(served, None)


def test_eight_concurrent_clients_overspend_a_one_dollar_budget_by_at_most_one_reservation(
        served: Served, fake_upstream: FakeOpenAI) -> None:
    limit, start = 1.00, spent_today(served)
    set_budget(served, start + limit)
    outcomes: list[int] = []
    lock = threading.Lock()
    calls_before = len(fake_upstream.calls)

    def client() -> None:
        with httpx.Client(base_url=served.base, headers=served.member, timeout=60) as http:
            while True:
                response = http.post("/v1/chat/completions", json=BODY)
                with lock:
                    outcomes.append(response.status_code)
                if response.status_code == 429:
                    assert response.json()["error"]["code"] == "budget_exceeded"
                    return
                assert response.status_code == 200, response.text

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    answered = outcomes.count(200)
    assert outcomes.count(429) == 8 and answered > 8
    assert len(fake_upstream.calls) - calls_before == answered  # a refused call reached no provider
    spent = settled_spend(served, start)
    print(f"budget ${limit:.2f}: {answered} calls answered, spent ${spent:.4f}, "
          f"one reservation ${RESERVATION:.4f}", file=sys.stderr)
    assert spent <= limit + RESERVATION
    # Calls under way hold their worst case, so concurrent clients are refused before the budget is all spent;
    # once every reservation is settled, calls one at a time spend what is left, down to less than one call's worth.
    status = httpx.get(f"{served.base}/usage/spend", headers=served.member, timeout=30).json()["budgets"]
    assert [b["reserved_usd"] for b in status] == [pytest.approx(0.0, abs=1e-9)]
    while httpx.post(f"{served.base}/v1/chat/completions", json=BODY, headers=served.member,
                     timeout=60).status_code == 200:
        settled_spend(served, start)
    spent = settled_spend(served, start)
    print(f"then one at a time: spent ${spent:.4f}", file=sys.stderr)
    assert limit - RESERVATION < spent <= limit + RESERVATION


def test_a_streamed_call_is_settled_at_its_real_cost(served: Served, fake_upstream: FakeOpenAI) -> None:
    start = spent_today(served)
    set_budget(served, start + 10.0)
    with httpx.stream("POST", f"{served.base}/v1/chat/completions", json={**BODY, "stream": True},
                      headers=served.member, timeout=30) as response:
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    spent = settled_spend(served, start)
    assert 0 < spent < RESERVATION  # the real cost, not the worst case
    [status] = httpx.get(f"{served.base}/usage/spend", headers=served.member, timeout=30).json()["budgets"]
    assert status["reserved_usd"] == pytest.approx(0.0, abs=1e-9)
    set_budget(served, None)
