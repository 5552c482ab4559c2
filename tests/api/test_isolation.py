"""Tenant isolation: for every endpoint that takes an id, another user's id gets the status the /v2 interface gives (404, or
403 RUN_ID_NOT_OWNED where the spec names it), never the other user's data. The owner gets 200 on the same call,
so a refusal is about ownership and not a broken request.

The matrix is checked against the app itself: every public route with a path parameter, and every operation whose
body carries an id, must be in MATRIX, so a new route cannot be forgotten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from tests.support.envelopes import assert_envelope
from tests.support.fakes.launcher import FakeLauncher
from tests.support.optimization import body as optimize_body
from tests.support.routes import public_routes_with_path_parameters
from tests.support.synthetic import LLM_PROVIDERS, MODELS, csv_bytes

pytestmark = pytest.mark.usefixtures("providers_reachable")  # before `client`: alice's optimization run is accepted

PROVIDERS = [{"provider": p, "model": m} for p, m in MODELS]
NOT_FOUND = (404, "not_found_error")
NOT_OWNED = (403, "authorization_error")


@dataclass(frozen=True)
class Case:
    operation_id: str
    method: str
    path: str  # route template as the app names it
    call: Callable[[Any, dict, dict], Any]  # (client, ids of the owner, headers) -> response
    refused: tuple[int, str, str]  # status, type, code for another user's id


def _select(client, ids, headers, **extra):
    return client.post("/v2/modelRouter/modelSelect", headers=headers,
                       json={"messages": "What is 2+2?", "llm_providers": PROVIDERS, **extra})


def _train(client, ids, headers):
    form = {"language": "english", "llm_providers": LLM_PROVIDERS, "prompt_column": "prompt", "maximize": "true",
            "preference_id": ids["preference_id"]}
    return client.post("/v2/pzn/trainCustomRouter", data=form, headers=headers,
                       files={"dataset_file": ("evals.csv", csv_bytes(), "text/csv")})


def _publish(client, ids, headers):
    """Publishing onboarded figures is the decision of an admin of the run's organization (alice holds one); an admin
    of another organization (bob) does not find the run."""
    return client.post(f"/v2/models/onboard/{ids['onboarding_run']}/publish", headers=headers, json={})


MATRIX = [
    Case("userPreferenceUpdate", "PUT", "/v2/preferences/userPreferenceUpdate",
         lambda c, ids, h: c.put("/v2/preferences/userPreferenceUpdate", headers=h,
                                 json={"preference_id": ids["preference_id"], "name": "taken over"}),
         (*NOT_FOUND, "PREFERENCE_NOT_FOUND")),
    Case("modelSelect", "POST", "/v2/modelRouter/modelSelect",
         lambda c, ids, h: _select(c, ids, h, preference_id=ids["preference_id"]),
         (*NOT_FOUND, "PREFERENCE_NOT_FOUND")),
    Case("reportFeedback", "POST", "/v2/report/metrics/feedback",
         lambda c, ids, h: c.post("/v2/report/metrics/feedback", headers=h, json={
             "session_id": ids["session_id"], "provider": ids["chosen"], "feedback": {"accuracy": 1}}),
         (*NOT_FOUND, "SESSION_NOT_FOUND")),
    Case("trainCustomRouter", "POST", "/v2/pzn/trainCustomRouter", _train, (*NOT_FOUND, "PREFERENCE_NOT_FOUND")),
    Case("optimizeStatus", "GET", "/v2/prompt/optimizeStatus/{optimization_run_id:str}",
         lambda c, ids, h: c.get(f"/v2/prompt/optimizeStatus/{ids['run_id']}", headers=h),
         (*NOT_FOUND, "RUN_ID_NOT_FOUND")),  # the spec gives status no 403
    Case("adaptStatus", "GET", "/v2/prompt/adaptStatus/{adaptation_run_id:str}",
         lambda c, ids, h: c.get(f"/v2/prompt/adaptStatus/{ids['run_id']}", headers=h),
         (*NOT_FOUND, "RUN_ID_NOT_FOUND")),
    Case("optimizeResults", "GET", "/v2/prompt/optimizeResults/{optimization_run_id:str}",
         lambda c, ids, h: c.get(f"/v2/prompt/optimizeResults/{ids['run_id']}", headers=h),
         (*NOT_OWNED, "RUN_ID_NOT_OWNED")),
    Case("adaptResults", "GET", "/v2/prompt/adaptResults/{adaptation_run_id:str}",
         lambda c, ids, h: c.get(f"/v2/prompt/adaptResults/{ids['run_id']}", headers=h),
         (*NOT_OWNED, "RUN_ID_NOT_OWNED")),
    Case("optimizeCosts", "GET", "/v2/prompt/optimize/{optimization_run_id:str}/costs",
         lambda c, ids, h: c.get(f"/v2/prompt/optimize/{ids['run_id']}/costs", headers=h),
         (*NOT_OWNED, "RUN_ID_NOT_OWNED")),
    Case("onboardingStatus", "GET", "/v2/models/onboard/{run_id:str}",
         lambda c, ids, h: c.get(f"/v2/models/onboard/{ids['onboarding_run']}", headers=h),
         (*NOT_FOUND, "ONBOARDING_NOT_FOUND")),
    Case("publishOnboarding", "POST", "/v2/models/onboard/{run_id:str}/publish", _publish,
         (*NOT_FOUND, "ONBOARDING_NOT_FOUND")),
    # Key management (issue 34): an admin key of another organization finds neither the key nor the user.
    Case("adminKeyCreate", "POST", "/admin/keys",
         lambda c, ids, h: c.post("/admin/keys", headers=h, json={"user_id": ids["user_id"]}),
         (*NOT_FOUND, "USER_NOT_FOUND")),
    Case("adminBudgetSet", "PUT", "/admin/budgets",
         lambda c, ids, h: c.put("/admin/budgets", headers=h, json={"scope": "key", "subject_id": ids["key_id"],
                                                                   "period": "day", "limit_usd": 100}),
         (*NOT_FOUND, "KEY_NOT_FOUND")),
    Case("adminKeyRateLimit", "PUT", "/admin/keys/{key_id:str}/rateLimit",
         lambda c, ids, h: c.put(f"/admin/keys/{ids['key_id']}/rateLimit", headers=h,
                                 json={"rate_limit_per_minute": None}),
         (*NOT_FOUND, "KEY_NOT_FOUND")),
    Case("adminKeyRotate", "POST", "/admin/keys/{key_id:str}/rotate",
         lambda c, ids, h: c.post(f"/admin/keys/{ids['key_id']}/rotate", headers=h, json={"grace_seconds": 3600}),
         (*NOT_FOUND, "KEY_NOT_FOUND")),
    Case("adminKeyRevoke", "POST", "/admin/keys/{key_id:str}/revoke",
         lambda c, ids, h: c.post(f"/admin/keys/{ids['key_id']}/revoke", headers=h),
         (*NOT_FOUND, "KEY_NOT_FOUND")),
    # Last: a successful delete by the owner removes the preference the other cases use.
    Case("getPreference", "GET", "/v2/preferences/{preference_id:str}",
         lambda c, ids, h: c.get(f"/v2/preferences/{ids['preference_id']}", headers=h),
         (*NOT_FOUND, "PREFERENCE_NOT_FOUND")),
    Case("userPreferenceDelete", "DELETE", "/v2/preferences/userPreferenceDelete/{preference_id:str}",
         lambda c, ids, h: c.delete(f"/v2/preferences/userPreferenceDelete/{ids['preference_id']}", headers=h),
         (*NOT_FOUND, "PREFERENCE_NOT_FOUND")),
]
# Ids in bodies that are never refused: `previous_session` keeps the model of the caller's own earlier session
# (api/selection/sticky.py); another user's or an unknown id is as if none were sent (tested below).
LINK_ONLY = {("modelSelect", "previous_session")}


def operations_with_body_ids(openapi: dict) -> set[tuple[str, str]]:
    """(operationId, field) for every request body field that names an id or a session."""
    out = set()
    for item in openapi["paths"].values():
        for operation in item.values():
            for media in (operation.get("requestBody") or {}).get("content", {}).values():
                schema = media["schema"]
                if "$ref" in schema:
                    schema = openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
                for field in schema.get("properties", {}):
                    if field.endswith("_id") or field.endswith("session"):
                        out.add((operation["operationId"], field))
    return out


@pytest.fixture
def world(client, auth, issue_key):
    """alice owns a preference, a routing session, an optimization run and a spare key; bob is another user with full
    access. Both hold admin keys of their own organizations (the admin routes' owner and outsider)."""
    services = client.app.state.services
    services.authenticator.rate_limiter = None
    services.router_training.launcher = FakeLauncher()
    services.prompt_optimization.launcher = FakeLauncher()
    alice = auth("alice", tier="enterprise", prompt_optimization=True, is_admin=True)
    bob = auth("bob", tier="enterprise", prompt_optimization=True, is_admin=True)
    spare = issue_key("alice")
    preference_id = client.post("/v2/preferences/userPreferenceCreate", json={"name": "alice's"},
                                headers=alice).json()["preference_id"]
    selected = _select(client, {}, alice).json()
    run = client.post("/v2/prompt/optimize", json=optimize_body(), headers=alice)
    assert run.status_code == 200, run.text
    onboarding = services.store.model_figures.start_onboarding("alice", "alice", "acme", "m-1", 1.0, 1.0).run
    services.store.model_figures.begin_onboarding(onboarding.run_id)
    services.store.model_figures.finish_onboarding(onboarding.run_id, "completed", 30, 0.01, "[]")
    return {"alice": alice, "bob": bob,
            "ids": {"preference_id": preference_id, "session_id": selected["session_id"],
                    "chosen": selected["providers"][0],
                    "run_id": run.json()["optimization_run_id"], "onboarding_run": onboarding.run_id,
                    "owner": alice,
                    "key_id": spare.info.key_id, "user_id": "alice"}}


def test_matrix_covers_every_route_with_a_path_parameter(client):
    covered = {case.path for case in MATRIX}
    missing = public_routes_with_path_parameters(client.app) - covered
    assert not missing, f"add these routes to the isolation MATRIX: {sorted(missing)}"


def test_matrix_covers_every_operation_with_an_id_in_its_body(client):
    openapi = client.get("/schema/openapi.json").json()
    covered = {case.operation_id for case in MATRIX}
    missing = {(op, f) for op, f in operations_with_body_ids(openapi) if op not in covered} - LINK_ONLY
    assert not missing, f"add these operations to the isolation MATRIX: {sorted(missing)}"


@pytest.mark.parametrize("case", MATRIX, ids=lambda c: c.operation_id)
def test_another_users_id_is_refused_and_the_owner_is_served(client, world, case):
    ids = world["ids"]
    refused = case.call(client, ids, world["bob"])
    status, type_, code = case.refused
    error = assert_envelope(refused, status, code, type_)
    leaked = json.dumps(refused.json())
    assert "alice" not in leaked and "taken over" not in leaked
    owner = case.call(client, ids, world["alice"])
    assert owner.status_code == 200, (case.operation_id, owner.text)
    assert error["request_id"] != owner.headers["x-request-id"]


def _custom(model: str, price: float) -> dict:
    return {"provider": "acme", "model": model, "is_custom": True, "context_length": 128000, "input_price": price,
            "output_price": price, "latency": 1.0}


# Pure cost (utility: minus the log price normalised over the candidates): the router's first choice is sticky-a,
# and sticky-b is within the stickiness margin of it (0.002 apart, sticky-c spanning the scale).
CHEAP, NEAR, DEAR = _custom("sticky-a", 1.0), _custom("sticky-b", 1.01), _custom("sticky-c", 100.0)


def _turn(client, headers, providers, **extra):
    response = client.post("/v2/modelRouter/modelSelect", headers=headers,
                           json={"messages": "Plan a trip to Rome.", "llm_providers": providers,
                                 "cost_quality_tradeoff": 10, **extra})
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"providers", "session_id"}
    return response.json()["providers"][0]["model"], response.json()["session_id"]


def test_previous_session_keeps_the_callers_own_model_and_nothing_of_another_users(client, world):
    earlier = _turn(client, world["alice"], [NEAR])[1]  # alice's earlier turn: sticky-b, the only candidate
    assert _turn(client, world["alice"], [CHEAP, NEAR, DEAR])[0] == "sticky-a"  # without it, the router's choice
    model, session_id = _turn(client, world["alice"], [CHEAP, NEAR, DEAR], previous_session=earlier)
    assert model == "sticky-b" and session_id != earlier  # her conversation stays on its model
    # bob naming alice's session, or an id nobody has: no error, no stickiness, nothing of alice's in the answer.
    for previous in (earlier, "0190c0de-0000-7000-8000-000000000000"):
        model, session_id = _turn(client, world["bob"], [CHEAP, NEAR, DEAR], previous_session=previous)
        assert model == "sticky-a" and session_id != earlier


def test_preference_survives_the_other_users_attempts(client, world):
    for case in MATRIX:
        case.call(client, world["ids"], world["bob"])
    store = client.app.state.services.store
    pref = store.preferences.get("alice", world["ids"]["preference_id"])
    assert pref is not None and pref.name == "alice's"
    assert store.preferences.get("bob", world["ids"]["preference_id"]) is None
