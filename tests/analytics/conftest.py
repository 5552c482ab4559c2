"""A data dir seeded the way the service fills one: the real train-custom-router and optimize-prompt flows under
Prefect's test harness (small synthetic data, LLM calls answered by the fake OpenAI-compatible server), then real
modelSelect and feedback calls through Litestar's test client. Built once; views, notebooks and the report read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.settings import reset_settings
from tests.support.fakes.provider import fake_provider

SELECT, FEEDBACK = "/v2/modelRouter/modelSelect", "/v2/report/metrics/feedback"
MATH = "Compute 31 * 47 + 512 and then divide the result by 7. Show the arithmetic step by step."
TRIVIA = "Which bridge is famous for being historic? Answer with one short sentence about Japan."
DEAR, CHEAP = {"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}
HAIKU = {"provider": "anthropic", "model": "claude-haiku-4-5"}


@dataclass(frozen=True)
class Seeded:
    data_dir: Path
    preference_id: str
    training_job_id: str
    training_flow_run_id: str
    optimization_run_id: str
    optimization_flow_run_id: str
    decisions: int          # modelSelect calls made
    custom_decisions: int   # of which with the custom router's preference
    feedback: list[tuple[str, int]]  # (chosen provider/model, accuracy) per report


def _route_and_report(preference_id: str) -> tuple[int, int, list[tuple[str, int]]]:
    from api.app import create_app

    decisions, custom, reports = 0, 0, []
    with TestClient(create_app(publish_owner=False)) as client:
        store = client.app.state.services.store
        alice = {"Authorization": f"Bearer {store.accounts.issue_key('alice').key}"}
        bob = {"Authorization": f"Bearer {store.accounts.issue_key('bob', organization_id='acme').key}"}
        calls = [(alice, MATH, [DEAR, CHEAP], {"preference_id": preference_id}),
                 (alice, TRIVIA, [DEAR, CHEAP], {"preference_id": preference_id}),
                 (alice, MATH, [DEAR, CHEAP], {"preference_id": preference_id, "cost_quality_tradeoff": 10}),
                 (bob, MATH, [DEAR, CHEAP, HAIKU], {}),
                 (bob, TRIVIA, [DEAR, CHEAP, HAIKU], {"cost_quality_tradeoff": 5}),
                 (bob, "Say hello.", [DEAR, CHEAP, HAIKU], {"cost_quality_tradeoff": 10})]
        for headers, text, providers, extra in calls:
            r = client.post(SELECT, headers=headers, json={"messages": text, "llm_providers": providers, **extra})
            assert r.status_code == 200, r.text
            decisions += 1
            custom += "preference_id" in extra
            if text != MATH:  # feedback on some decisions: accurate for trivia, not for the greeting
                chosen = r.json()["providers"][0]
                accuracy = int(text == TRIVIA)
                f = client.post(FEEDBACK, headers=headers, json={"session_id": r.json()["session_id"],
                                                                "provider": chosen,
                                                                "feedback": {"accuracy": accuracy}})
                assert f.status_code == 200, f.text
                reports.append((f"{chosen['provider']}/{chosen['model']}", accuracy))
    return decisions, custom, reports  # leaving the client closed the app: every event is flushed


@pytest.fixture(scope="session")
def seeded(prefect_harness, tmp_path_factory) -> Iterator[Seeded]:
    # Reused, not copied: the flow tests' own set-up, which stores what the API would before a flow starts.
    from flows.optimize_prompt import optimize_prompt
    from flows.train_custom_router import train_custom_router
    from tests.support.custom_training import prepare
    from tests.support.optimization import start_run

    data_dir = tmp_path_factory.mktemp("analytics") / "data"
    with pytest.MonkeyPatch.context() as mp:  # undone before the tests run: they get the path, not the env
        mp.setenv("SWITCHBOARD_DATA_DIR", str(data_dir))
        reset_settings()
        params, _ = prepare()
        trained = train_custom_router(**params, return_state=True)
        assert trained.is_completed(), trained

        with fake_provider(mp, retries=1) as fake:
            run_id = start_run([("openai", "gpt-4o-mini")], fake=fake)
            optimized = optimize_prompt(run_id, return_state=True)
        assert optimized.is_completed(), optimized

        decisions, custom, reports = _route_and_report(params["preference_id"])
    reset_settings()
    yield Seeded(data_dir, params["preference_id"], params["job_id"], str(trained.state_details.flow_run_id),
                 run_id, str(optimized.state_details.flow_run_id), decisions, custom, reports)
