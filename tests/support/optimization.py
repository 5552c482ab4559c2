"""Prompt-optimization requests and runs for tests: a valid request body, and a run stored the way
POST /v2/prompt/optimize stores it (for flow tests that run the flow in-process)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from api.catalogue import load_catalogue
from api.prompt_optimization.usage_log import run_usage
from api.prompt_optimization.validation import validate
from api.schemas.prompt_optimization import OptimizeRequest
from api.settings import get_settings
from storage.store import LocalStore
from tests.support.fakes.openai_server import FakeOpenAI, capital_goldens, teach_goldens

OPTIMIZE = "/v2/prompt/optimize"


def body(n_train: int = 25, n_test: int = 5, **extra: Any) -> dict[str, Any]:
    return {"system_prompt": "You are a geography assistant.", "template": "Question: {question}",
            "fields": ["question"], "train_goldens": capital_goldens(n_train),
            "test_goldens": capital_goldens(n_test, start=n_train),
            "target_models": [{"provider": "openai", "model": "gpt-4o-mini"}], **extra}


TEMPLATE = "Answer the question.\nQuestion: {question}"


def start_run(targets: list[tuple[str, str]], origin: tuple[str, str] | None = ("openai", "gpt-4o"),
              fake: FakeOpenAI | None = None, as_json: bool = False, **extra) -> str:
    """What POST /v2/prompt/optimize stores (validated the same way); the flow then opens the file itself."""
    train, test = capital_goldens(25, as_json=as_json), capital_goldens(8, start=25, as_json=as_json)
    if fake is not None:
        teach_goldens(fake, train + test)
    request = msgspec.convert({
        "system_prompt": "You are a geography assistant.", "template": TEMPLATE, "fields": ["question"],
        "train_goldens": train, "test_goldens": test,
        "target_models": [{"provider": p, "model": m} for p, m in targets],
        "origin_model": {"provider": origin[0], "model": origin[1]} if origin else None, **extra}, OptimizeRequest)
    store = LocalStore(get_settings().db_path)
    try:
        user = store.accounts.issue_key("alice", tier="enterprise", prompt_optimization=True).user
        valid = validate(request, user, load_catalogue())
        run = store.optimizations.start(user.user_id, user.organization_id, json.dumps(valid.spec),
                                       valid.evaluation_metric, valid.evaluation_config, False,
                                       valid.spec["origin"], valid.spec["targets"]).run
        assert run is not None
        store.jobs.mark_queued(run.run_id, "flow-run")
    finally:
        store.close()
    return run.run_id


def run_flow(run_id: str):
    """Run the optimize-prompt flow in-process: (its final Prefect state, the summary it returned)."""
    # lazy: Prefect and DSPy load only for the tests that run the flow
    from flows.optimize_prompt import optimize_prompt

    state = optimize_prompt(run_id, return_state=True)
    return state, state.result(raise_on_failure=False)


def stored(run_id: str):
    store = LocalStore(get_settings().db_path)
    try:
        return store.optimizations.get(run_id), run_usage(get_settings().events_dir, run_id)
    finally:
        store.close()
