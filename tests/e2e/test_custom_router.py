"""Custom router training end to end: the official client uploads, the served flow trains, modelSelect routes."""

from __future__ import annotations

import time

import httpx
import pytest
from notdiamond import NotDiamond

from tests.support.service import Service
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

pytestmark = pytest.mark.e2e
DEAR, CHEAP = {"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}
MATH = "Compute 31 * 47 + 512 and then divide the result by 7. Show the arithmetic step by step."
TRIVIA = "Which bridge is famous for being historic? Answer with one short sentence about Japan."


def test_official_client_trains_a_router_that_model_select_then_uses(service: Service) -> None:
    client = NotDiamond(api_key=service.admin_key, base_url=service.api_url, max_retries=0)
    started = time.monotonic()
    trained = client.custom_router.train_custom_router(
        dataset_file=("evals.csv", csv_bytes(80), "text/csv"), language="english", llm_providers=LLM_PROVIDERS,
        maximize=True, prompt_column="prompt")
    pid = trained.preference_id
    headers = {"Authorization": f"Bearer {service.admin_key}"}

    def select(text: str) -> httpx.Response:
        return httpx.post(f"{service.api_url}/v2/modelRouter/modelSelect", headers=headers, timeout=30,
                          json={"messages": text, "llm_providers": [DEAR, CHEAP], "preference_id": pid})

    seen = set()
    while True:  # the spec's way to discover readiness: use the preference until it stops asking to wait
        r = select(MATH)
        if r.status_code != 409:
            break
        seen.add(r.json()["error"]["code"])
        wait = int(r.headers["retry-after"])  # the likely seconds left (docs/api.md, "Waiting for a custom router")
        assert 1 <= wait <= 60 and r.json()["error"]["details"]["retry_after_seconds"] == wait
        assert time.monotonic() - started < 120, "training did not finish in 2 minutes"
        time.sleep(0.5)
    assert r.status_code == 200, r.text
    assert seen <= {"ROUTER_TRAINING_IN_PROGRESS"}
    assert r.json()["providers"][0] == DEAR
    assert select(TRIVIA).json()["providers"][0] == CHEAP

    # The same preference through the official client's own select_model.
    result = client.model_router.select_model(messages=[{"role": "user", "content": TRIVIA}],
                                              llm_providers=[DEAR, CHEAP], preference_id=pid)
    assert result.providers[0].model == CHEAP["model"]
