from __future__ import annotations

import uuid


def create(client, headers, body=None):
    response = client.post("/v2/preferences/userPreferenceCreate", json=body if body is not None else {},
                           headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["preference_id"]


def test_create_with_and_without_name(client, auth):
    h = auth()
    named = create(client, h, {"name": "Support bot"})
    unnamed = create(client, h)
    assert uuid.UUID(named) and uuid.UUID(unnamed) and named != unnamed
    store = client.app.state.services.store
    assert store.preferences.get("alice", named).name == "Support bot"
    assert store.preferences.get("alice", unnamed).name.startswith("Preference 20")


def test_update_sets_and_clears_routing_defaults(client, auth):
    h = auth()
    pid = create(client, h)
    r = client.put("/v2/preferences/userPreferenceUpdate", headers=h,
                   json={"preference_id": pid, "name": "Prod", "cost_quality_tradeoff": 4, "max_model_depth": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["name"], body["cost_quality_tradeoff"], body["max_model_depth"], body["tradeoff"]) == \
        ("Prod", 4, 3, None)
    # Omitted fields stay; explicit null clears.
    r = client.put("/v2/preferences/userPreferenceUpdate", headers=h,
                   json={"preference_id": pid, "cost_quality_tradeoff": None, "tradeoff": "latency"})
    body = r.json()
    assert (body["name"], body["cost_quality_tradeoff"], body["max_model_depth"], body["tradeoff"]) == \
        ("Prod", None, 3, "latency")


def test_update_rejects_both_tradeoffs(client, auth):
    h = auth()
    pid = create(client, h)
    client.put("/v2/preferences/userPreferenceUpdate", headers=h, json={"preference_id": pid, "tradeoff": "cost"})
    r = client.put("/v2/preferences/userPreferenceUpdate", headers=h,
                   json={"preference_id": pid, "cost_quality_tradeoff": 2})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "INVALID_PREFERENCE"
    assert client.app.state.services.store.preferences.get("alice", pid).tradeoff == "cost"  # nothing changed


def test_update_validation_errors_are_422(client, auth):
    h = auth()
    pid = create(client, h)
    for bad in ({"preference_id": pid, "cost_quality_tradeoff": 11},
                {"preference_id": pid, "cost_quality_tradeoff": "high"},
                {"preference_id": pid, "tradeoff": "speed"},
                {"preference_id": pid, "name": ""},
                {"name": "no id"}):
        r = client.put("/v2/preferences/userPreferenceUpdate", headers=h, json=bad)
        assert r.status_code == 422, (bad, r.text)
        items = r.json()["detail"]
        assert items and {"loc", "msg", "type"} <= set(items[0])
        assert items[0]["loc"][0] == "body"


def test_other_users_preference_is_404(client, auth):
    alice, bob = auth("alice"), auth("bob")
    pid = create(client, alice)
    r = client.put("/v2/preferences/userPreferenceUpdate", headers=bob, json={"preference_id": pid, "name": "mine"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "PREFERENCE_NOT_FOUND"
    r = client.delete(f"/v2/preferences/userPreferenceDelete/{pid}", headers=bob)
    assert r.status_code == 404
    assert client.app.state.services.store.preferences.get("alice", pid) is not None  # untouched


def test_delete_removes_preference_and_its_custom_router(client, auth, data_dir):
    h = auth()
    pid = create(client, h)
    store = client.app.state.services.store
    artefact = data_dir / "artefacts" / "routers" / pid / "v1"
    artefact.mkdir(parents=True)
    (artefact / "router.json").write_text("{}")
    store.database.run("INSERT INTO custom_routers VALUES ('r1', ?, NULL, ?, true, now())", [pid, str(artefact)])
    upload = data_dir / "uploads" / "router_training" / "d1.parquet"
    upload.parent.mkdir(parents=True)
    upload.write_bytes(b"PAR1")
    store.routers.start_training("alice", pid, str(upload), "english", True, "[]", 30)
    assert store.preferences.get("alice", pid).has_custom_router
    r = client.delete(f"/v2/preferences/userPreferenceDelete/{pid}", headers=h)
    assert r.status_code == 200
    assert r.json() == {"preference_id": pid, "deleted": True, "custom_routers_removed": 1}
    assert store.preferences.get("alice", pid) is None
    assert not artefact.exists() and not upload.exists()  # the team's uploaded data goes with the preference
    assert store.database.rows("SELECT count(*) FROM custom_routers")[0][0] == 0
    assert client.delete(f"/v2/preferences/userPreferenceDelete/{pid}", headers=h).status_code == 404


def test_delete_never_removes_files_outside_the_data_dir(client, auth, tmp_path):
    h = auth()
    pid = create(client, h)
    outside = tmp_path / "precious"
    outside.mkdir()
    client.app.state.services.store.database.run(
        "INSERT INTO custom_routers VALUES ('r2', ?, NULL, ?, true, now())", [pid, str(outside)])
    assert client.delete(f"/v2/preferences/userPreferenceDelete/{pid}", headers=h).status_code == 200
    assert outside.exists()
