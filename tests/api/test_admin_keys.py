"""Key management and budgets over HTTP for admin keys (issue 34, item 6), and a caller's own spend (item 3):
create (shown once), list, revoke, rotate with a grace period, rate limits and budgets, every change audited with
its actor; a non-admin key gets 403; another organization's key looks unknown; bad input gets the envelope and
nothing stored is lost."""

from __future__ import annotations

import pytest

from tests.support.envelopes import assert_envelope


@pytest.fixture
def admin(issue_key):
    issued = issue_key("root", organization_id="acme", is_admin=True)
    return {"Authorization": f"Bearer {issued.key}"}


def test_a_non_admin_key_gets_403_on_every_admin_route(client, auth) -> None:
    member = auth("carol", organization_id="acme")
    for method, path, body in [("GET", "/admin/keys", None), ("POST", "/admin/keys", {"user_id": "x"}),
                               ("POST", "/admin/keys/k/revoke", None), ("POST", "/admin/keys/k/rotate", {}),
                               ("PUT", "/admin/keys/k/rateLimit", {"rate_limit_per_minute": 1}),
                               ("PUT", "/admin/budgets", {"scope": "organization", "subject_id": "acme",
                                                          "period": "day", "limit_usd": 1}),
                               ("GET", "/admin/budgets", None), ("GET", "/admin/audit", None)]:
        response = client.request(method, path, json=body, headers=member)
        assert_envelope(response, 403, "ADMIN_REQUIRED", "authorization_error")
    assert client.get("/admin/keys", headers={"Authorization": "Bearer sb-wrong"}).status_code == 401


def test_an_admin_creates_lists_rotates_and_revokes_keys_of_its_organization(client, admin) -> None:
    created = client.post("/admin/keys", json={"user_id": "dave"}, headers=admin)
    assert created.status_code == 200, created.text
    new = created.json()
    assert new["key"].startswith("sb-") and new["organization_id"] == "acme"
    dave = {"Authorization": f"Bearer {new['key']}"}
    assert client.get("/v1/models", headers=dave).status_code == 200
    listed = client.get("/admin/keys", headers=admin).json()["keys"]
    mine = next(k for k in listed if k["key_id"] == new["key_id"])
    assert mine["key_prefix"] == new["key_prefix"] and mine["last_used_at"] is not None
    assert "key" not in mine and all(k["organization_id"] == "acme" for k in listed)

    rotated = client.post(f"/admin/keys/{new['key_id']}/rotate", json={"grace_seconds": 3600}, headers=admin)
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["replaces_key_id"] == new["key_id"] and rotated.json()["old_key_valid_until"]
    assert client.get("/v1/models", headers=dave).status_code == 200  # the grace period
    fresh = {"Authorization": f"Bearer {rotated.json()['key']}"}
    assert client.get("/v1/models", headers=fresh).status_code == 200

    revoked = client.post(f"/admin/keys/{new['key_id']}/revoke", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert client.get("/v1/models", headers=dave).status_code == 401
    limited = client.put(f"/admin/keys/{rotated.json()['key_id']}/rateLimit", json={"rate_limit_per_minute": 1},
                         headers=admin)
    assert limited.json()["rate_limit_per_minute"] == 1
    # the key's own limit replaces the server's at once (the change feed drops the cached key): 1 a minute
    statuses = [client.get("/v1/models", headers=fresh).status_code for _ in range(2)]
    assert statuses == [200, 429]

    audit = client.get("/admin/audit", headers=admin).json()["entries"]
    assert [e["action"] for e in audit[:4]] == ["key.rate_limit", "key.revoke", "key.rotate", "key.create"]
    assert all(e["actor"].startswith("root ") for e in audit[:4])


def test_another_organizations_key_looks_unknown_and_stays_valid(client, admin, issue_key) -> None:
    outsider = issue_key("eve", organization_id="globex")
    for response in (client.post(f"/admin/keys/{outsider.info.key_id}/rotate", json={}, headers=admin),
                     client.post(f"/admin/keys/{outsider.info.key_id}/revoke", headers=admin),
                     client.put("/admin/budgets", json={"scope": "key", "subject_id": outsider.info.key_id,
                                                        "period": "day", "limit_usd": 0}, headers=admin),
                     client.post("/admin/keys", json={"user_id": "eve"}, headers=admin)):
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] in ("KEY_NOT_FOUND", "USER_NOT_FOUND")
    assert client.get("/v1/models", headers={"Authorization": f"Bearer {outsider.key}"}).status_code == 200
    assert client.get("/admin/budgets", headers=admin).json()["budgets"] == []


def test_a_negative_budget_is_a_400_and_the_budget_set_before_stays(client, admin) -> None:
    body = {"scope": "organization", "subject_id": "acme", "period": "month", "limit_usd": 5.0}
    assert client.put("/admin/budgets", json=body, headers=admin).status_code == 200
    refused = client.put("/admin/budgets", json={**body, "limit_usd": -1}, headers=admin)
    error = assert_envelope(refused, 400, "INVALID_BUDGET", "validation_error")
    assert "limit_usd" in error["message"]
    assert [b["limit_usd"] for b in client.get("/admin/budgets", headers=admin).json()["budgets"]] == [5.0]
    assert client.put("/admin/budgets", json={**body, "period": "week"}, headers=admin).status_code in (400, 422)


def test_a_caller_reads_its_own_budgets_and_an_admin_reads_a_member(client, admin, issue_key) -> None:
    member = issue_key("frank", organization_id="acme")
    headers = {"Authorization": f"Bearer {member.key}"}
    client.put("/admin/budgets", json={"scope": "key", "subject_id": member.info.key_id, "period": "day",
                                       "limit_usd": 2.5}, headers=admin)
    own = client.get("/usage/spend", headers=headers).json()
    assert own["key_id"] == member.info.key_id
    [budget] = own["budgets"]
    assert (budget["scope"], budget["limit_usd"], budget["remaining_usd"]) == ("key", 2.5, 2.5)
    assert budget["resets_at"].endswith("Z") or "+00:00" in budget["resets_at"]
    seen = client.get("/usage/spend", params={"user_id": "frank"}, headers=admin)
    assert seen.status_code == 200 and seen.json()["user_id"] == "frank"
    assert client.get("/usage/spend", params={"user_id": "root"}, headers=headers).status_code == 404
    empty = client.get("/usage", headers=headers).json()
    assert empty["rows"] == [] and empty["total"] == 0 and empty["next_offset"] is None
    assert client.get("/usage", params={"limit": 0}, headers=headers).status_code == 400


def test_an_admin_reads_the_runs_of_its_organization_only(providers_reachable, client, issue_key) -> None:
    from tests.support.fakes.launcher import FakeLauncher
    from tests.support.optimization import body

    client.app.state.services.prompt_optimization.launcher = FakeLauncher()

    def headers(user: str, org: str, **extra) -> dict[str, str]:
        key = issue_key(user, organization_id=org, tier="enterprise", prompt_optimization=True, **extra).key
        return {"Authorization": f"Bearer {key}"}

    member, admin, outsider = headers("gina", "acme"), headers("boss", "acme", is_admin=True), \
        headers("other-boss", "globex", is_admin=True)
    run = client.post("/v2/prompt/optimize", json=body(), headers=member)
    assert run.status_code == 200, run.text
    run_id = run.json()["optimization_run_id"]
    for path in (f"optimizeStatus/{run_id}", f"optimizeResults/{run_id}", f"optimize/{run_id}/costs"):
        assert client.get(f"/v2/prompt/{path}", headers=admin).status_code == 200
        assert client.get(f"/v2/prompt/{path}", headers=outsider).status_code in (403, 404)
    assert client.get("/usage/spend", params={"user_id": "gina"}, headers=outsider).status_code == 404


def test_an_optimization_with_no_budget_left_is_refused_at_once(providers_reachable, client, admin, issue_key) -> None:
    from tests.support.fakes.launcher import FakeLauncher
    from tests.support.optimization import body

    launcher = client.app.state.services.prompt_optimization.launcher = FakeLauncher()
    member = issue_key("hal", organization_id="acme", tier="enterprise", prompt_optimization=True)
    headers = {"Authorization": f"Bearer {member.key}"}
    client.put("/admin/budgets", json={"scope": "user", "subject_id": "hal", "period": "month", "limit_usd": 0},
               headers=admin)
    refused = client.post("/v2/prompt/optimize", json=body(), headers=headers)
    error = assert_envelope(refused, 429, "BUDGET_EXCEEDED", "insufficient_quota")
    assert error["details"]["budget"] == {"scope": "user", "subject_id": "hal", "period": "month"}
    assert "monthly budget of user hal" in error["message"] and not launcher.triggered
    client.put("/admin/budgets", json={"scope": "user", "subject_id": "hal", "period": "month", "limit_usd": 1},
               headers=admin)
    assert client.post("/v2/prompt/optimize", json=body(), headers=headers).status_code == 200
    client.app.state.services.budget.drain()
    [status] = client.get("/usage/spend", headers=headers).json()["budgets"]
    assert status["reserved_usd"] == 0 and status["spent_usd"] == 0
