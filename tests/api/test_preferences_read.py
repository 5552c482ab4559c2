"""Preferences you can read: GET /v2/preferences/{id} (defaults, custom router, learning state) and GET
/v2/preferences (the caller's own, paged), isolation between users, and userPreferenceUpdate taking llm_providers
in the shapes modelSelect takes. (A trained custom router's summary and routing among its models: tests/flows/
test_preference_custom_router.py.)"""

from __future__ import annotations

import pytest

from tests.api.test_preferences import create

UPDATE = "/v2/preferences/userPreferenceUpdate"


def test_a_preference_reads_back_with_its_defaults_and_no_router(client, auth):
    h = auth()
    pid = create(client, h, {"name": "Support bot"})
    client.put(UPDATE, headers=h, json={"preference_id": pid, "cost_quality_tradeoff": 3,
                                        "llm_providers": ["openai/gpt-4o", "openai/gpt-4o-mini"]})
    got = client.get(f"/v2/preferences/{pid}", headers=h)
    assert got.status_code == 200, got.text
    body = got.json()
    assert (body["preference_id"], body["name"], body["cost_quality_tradeoff"]) == (pid, "Support bot", 3)
    assert body["llm_providers"] == ["openai/gpt-4o", "openai/gpt-4o-mini"]
    assert body["has_custom_router"] is False and body["custom_router"] is None and body["training_status"] is None
    assert body["learning"] == {"versions": 0, "live_version": None, "live_labels": None, "live_since": None}
    assert body["created_at"] <= body["updated_at"]


def test_the_learning_state_names_the_live_version(client, auth):
    h = auth()
    pid = create(client, h)
    store = client.app.state.services.store
    store.learning.record_version(pid, 42, "{}", "{}", promote=True)
    learning = client.get(f"/v2/preferences/{pid}", headers=h).json()["learning"]
    assert learning["versions"] == 1 and learning["live_labels"] == 42 and learning["live_version"]


def test_another_users_preference_is_404_to_read_and_absent_from_the_list(client, auth):
    alice, bob = auth("alice"), auth("bob")
    mine = create(client, alice, {"name": "mine"})
    other = client.get(f"/v2/preferences/{mine}", headers=bob)
    assert other.status_code == 404 and other.json()["error"]["code"] == "PREFERENCE_NOT_FOUND"
    assert client.get("/v2/preferences", headers=bob).json() == {"preferences": [], "total": 0, "next_offset": None}
    assert client.get("/v2/preferences/no-such-id", headers=alice).status_code == 404
    assert client.get(f"/v2/preferences/{mine}").status_code == 401


def test_the_list_is_the_callers_own_page_by_page(client, auth):
    h = auth()
    made = [create(client, h, {"name": f"p{i}"}) for i in range(5)]
    first = client.get("/v2/preferences", headers=h, params={"limit": 2}).json()
    assert [p["preference_id"] for p in first["preferences"]] == made[:2]  # oldest first
    assert first["total"] == 5 and first["next_offset"] == 2
    last = client.get("/v2/preferences", headers=h, params={"offset": 4, "limit": 2}).json()
    assert [p["name"] for p in last["preferences"]] == ["p4"] and last["next_offset"] is None
    bad = client.get("/v2/preferences", headers=h, params={"limit": 0})
    assert bad.status_code in (400, 422) and "limit" in bad.text


def test_update_takes_llm_providers_as_objects_like_model_select(client, auth):
    h = auth()
    pid = create(client, h)
    local = {"provider": "local", "model": "llama3-8b", "is_custom": True, "context_length": 8192,
             "input_price": 0.0, "output_price": 0.0, "latency": 0.5}
    r = client.put(UPDATE, headers=h, json={"preference_id": pid, "llm_providers": [
        {"provider": "openai", "model": "gpt-4o-mini"}, "openai/gpt-4o", local]})
    assert r.status_code == 200, r.text
    assert r.json()["llm_providers"] == ["openai/gpt-4o-mini", "openai/gpt-4o", local]
    assert client.get(f"/v2/preferences/{pid}", headers=h).json()["llm_providers"][2] == local
    bad = client.put(UPDATE, headers=h, json={"preference_id": pid, "llm_providers": [{"provider": "openai"}]})
    assert bad.status_code == 422 and "model" in bad.text


def test_the_official_notdiamond_client_keeps_working(client, auth):
    from notdiamond import NotDiamond, NotFoundError

    key = auth()["Authorization"].split()[1]
    nd = NotDiamond(api_key=key, base_url=str(client.base_url), http_client=client, max_retries=0)
    created = nd.preferences.create(name="nd")
    updated = nd.preferences.update(preference_id=created.preference_id, name="renamed",
                                    extra_body={"llm_providers": [{"provider": "openai", "model": "gpt-4o"}]})
    assert updated is not None
    assert client.get(f"/v2/preferences/{created.preference_id}", headers=auth()).json()["name"] == "renamed"
    nd.preferences.delete(created.preference_id)
    with pytest.raises(NotFoundError):
        nd.preferences.delete(created.preference_id)
