"""modelSelect and feedback over HTTP through the real app (real DuckDB, real Parquet logs, real router)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow.parquet as pq

SELECT = "/v2/modelRouter/modelSelect"
FEEDBACK = "/v2/report/metrics/feedback"
STRONG = {"provider": "openai", "model": "gpt-4o"}
CHEAP = {"provider": "openai", "model": "gpt-4o-mini"}
PAIR = [STRONG, CHEAP]


def select(client, headers, params=None, **body):
    body.setdefault("messages", [{"role": "user", "content": "Prove that the square root of 2 is irrational."}])
    body.setdefault("llm_providers", PAIR)
    return client.post(SELECT, json=body, headers=headers, params=params)


def chosen(response) -> dict:
    assert response.status_code == 200, response.text
    body = response.json()
    assert uuid.UUID(body["session_id"])
    assert len(body["providers"]) == 1
    return body["providers"][0]


def sessions(client) -> list[dict]:
    log = client.app.state.services.sessions
    log.sessions.flush()
    return [row for part in sorted((log.events_dir / "sessions").glob("day=*/*.parquet"))
            for row in pq.read_table(part).to_pylist()]


def test_selects_one_of_the_candidates_and_records_the_decision(client, auth):
    h = auth()
    pick = chosen(select(client, h))
    assert pick in PAIR
    [row] = sessions(client)
    assert row["user_id"] == "alice" and row["chosen"] == f"{pick['provider']}/{pick['model']}"
    assert row["candidates"] == ["openai/gpt-4o", "openai/gpt-4o-mini"] and len(row["predicted_quality"]) == 2
    assert "irrational" in row["content"] and row["router"] == "default"


def test_message_forms(client, auth):
    h = auth()
    assert chosen(select(client, h, messages="a bare string prompt")) in PAIR
    parts = [{"role": "user", "content": [{"type": "text", "text": "describe this"},
                                          {"type": "image_url", "image_url": {"url": "data:..."}}]}]
    assert chosen(select(client, h, messages=parts)) in PAIR
    r = select(client, h, messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
    assert r.status_code == 400 and r.json()["error"]["code"] == "EMPTY_MESSAGES"


def test_cost_quality_tradeoff_extremes(client, auth):
    h = auth()
    assert chosen(select(client, h, cost_quality_tradeoff=10)) == CHEAP
    assert chosen(select(client, h, cost_quality_tradeoff=0)) == STRONG


def test_aggregator_format_in_and_out(client, auth):
    h = auth()
    cat = client.app.state.services.selection.catalogue
    ids = [cat.get("openai", "gpt-4o").aggregator_model, cat.get("openai", "gpt-4o-mini").aggregator_model]
    for type_ in ("openrouter", "aggregator"):
        pick = chosen(select(client, h, params={"type": type_}, cost_quality_tradeoff=10,
                             llm_providers=[{"model": i} for i in ids]))
        assert pick == {"provider": "openai", "model": ids[1]}


def test_custom_models(client, auth):
    h = auth()
    r = select(client, h, llm_providers=[STRONG, {"provider": "acme", "model": "m", "is_custom": True}])
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_CUSTOM_MODEL"
    custom = {"provider": "acme", "model": "tiny", "is_custom": True, "context_length": 8000,
              "input_price": 0.01, "output_price": 0.02, "latency": 0.2}
    assert chosen(select(client, h, llm_providers=[STRONG, custom], cost_quality_tradeoff=10)) == \
        {"provider": "acme", "model": "tiny"}


def test_bad_requests_are_400_with_codes(client, auth):
    h = auth()
    cases = [
        (dict(llm_providers=[{"provider": "openai", "model": "gpt-99"}]), "UNSUPPORTED_MODEL"),
        (dict(tradeoff="cost", cost_quality_tradeoff=3), "INVALID_TRADEOFF"),
        (dict(metric="bleu"), "UNSUPPORTED_METRIC"),
    ]
    for body, code in cases:
        r = select(client, h, **body)
        assert r.status_code == 400 and r.json()["error"]["code"] == code, (body, r.text)
    assert "gpt-99" in select(client, h, llm_providers=[{"provider": "openai", "model": "gpt-99"}]).text
    for body in (dict(llm_providers=[]), dict(cost_quality_tradeoff=11), dict(tradeoff="speed"),
                 dict(max_model_depth=0), dict(messages=42)):
        assert select(client, h, **body).status_code == 422, body
    assert select(client, h, params={"type": "bogus"}).status_code == 400
    assert sessions(client) == []  # nothing recorded for rejected requests


def test_tools_and_context_window(client, auth):
    h = auth()
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    cat = client.app.state.services.selection.catalogue
    no_fc = next(m for m in cat.list()[0] if not m.supports_function_calling)
    r = select(client, h, tools=tools, llm_providers=[{"provider": no_fc.provider, "model": no_fc.model}])
    assert r.status_code == 400 and r.json()["error"]["details"]["reason"] == "tools"
    pick = chosen(select(client, h, tools=tools, llm_providers=[{"provider": no_fc.provider, "model": no_fc.model},
                                                                CHEAP]))
    assert pick == CHEAP
    small = {"provider": "acme", "model": "small", "is_custom": True, "context_length": 50, "input_price": 0.0,
             "output_price": 0.0, "latency": 0.1}
    long_prompt = "word " * 400
    assert chosen(select(client, h, messages=long_prompt, llm_providers=[small, STRONG],
                         cost_quality_tradeoff=10)) == STRONG


def test_max_model_depth_considers_the_first_n(client, auth):
    h = auth()
    assert chosen(select(client, h, max_model_depth=1, cost_quality_tradeoff=10)) == STRONG


def test_preferences_404_and_defaults(client, auth):
    alice, bob = auth("alice"), auth("bob")
    assert select(client, alice, preference_id=str(uuid.uuid4())).status_code == 404
    pid = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=alice).json()["preference_id"]
    assert select(client, bob, preference_id=pid).status_code == 404
    client.put("/v2/preferences/userPreferenceUpdate", json={"preference_id": pid, "cost_quality_tradeoff": 10},
               headers=alice)
    assert chosen(select(client, alice, preference_id=pid)) == CHEAP          # the preference's default
    assert chosen(select(client, alice, preference_id=pid, cost_quality_tradeoff=0)) == STRONG  # request wins


def test_hash_content_leaves_no_plaintext_in_the_data_dir(data_dir, auth, client):
    secret = "zebra-quokka-" + uuid.uuid4().hex
    h = auth()
    session_id = select(client, h, hash_content=True, messages=f"my secret is {secret}").json()["session_id"]
    r = client.post(FEEDBACK, headers=h, json={"session_id": session_id, "provider": STRONG,
                                               "feedback": {"accuracy": 1}})
    assert r.status_code == 400 and r.json()["error"]["code"] == "FEEDBACK_NOT_ALLOWED"
    client.app.state.services.sessions.close()
    row = next(s for s in sessions(client) if s["session_id"] == session_id)
    assert row["hashed"] and row["content"] is None and len(row["content_hash"]) == 64
    for path in Path(data_dir).rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_feedback_rules(client, auth):
    alice, bob = auth("alice"), auth("bob")
    session_id = select(client, alice, cost_quality_tradeoff=10).json()["session_id"]
    ok = client.post(FEEDBACK, headers=alice, json={"session_id": session_id, "provider": CHEAP,
                                                    "feedback": {"accuracy": 0}})
    assert ok.status_code == 200 and ok.json()["accepted"] is True
    wrong = client.post(FEEDBACK, headers=alice, json={"session_id": session_id, "provider": STRONG,
                                                       "feedback": {"accuracy": 1}})
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "PROVIDER_MISMATCH"
    other = client.post(FEEDBACK, headers=bob, json={"session_id": session_id, "provider": CHEAP,
                                                     "feedback": {"accuracy": 1}})
    assert other.status_code == 404
    unknown = client.post(FEEDBACK, headers=alice, json={"session_id": str(uuid.uuid4()), "provider": CHEAP,
                                                         "feedback": {"accuracy": 1}})
    assert unknown.status_code == 404
    bad = client.post(FEEDBACK, headers=alice, json={"session_id": session_id, "provider": CHEAP,
                                                     "feedback": {"accuracy": 2}})
    assert bad.status_code == 422


def test_feedback_moves_routing_only_once_the_flow_promotes_the_residual(client, auth):
    """Feedback alone never moves routing (docs/routing.md, "Feedback and personalisation"); once the
    learn-from-traffic flow has promoted the nearest-neighbour residual for a preference, that preference's feedback
    moves similar queries at once and nothing else; rolled back, the router serves alone again."""
    import msgspec

    from api.routing.features import FEATURE_VERSION
    from flows.learning.learn import residual_parameters

    h = auth()
    pref_a = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=h).json()["preference_id"]
    pref_b = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=h).json()["preference_id"]

    def poem(i: int) -> str:
        return f"Write a short rhyming poem about autumn leaves falling in the park, version {i}."

    assert chosen(select(client, h, preference_id=pref_a, messages=poem(0))) == STRONG
    for i in range(8):  # thumbs-down whenever the strong model answered, thumbs-up for the cheap one
        for provider, label in ((STRONG, 0), (CHEAP, 1)):
            sid = select(client, h, preference_id=pref_a, messages=poem(i), llm_providers=[provider]).json()
            r = client.post(FEEDBACK, headers=h, json={"session_id": sid["session_id"], "provider": provider,
                                                       "feedback": {"accuracy": label}})
            assert r.status_code == 200
    assert chosen(select(client, h, preference_id=pref_a, messages=poem(99))) == STRONG  # not promoted: unmoved
    learning = client.app.state.services.store.learning
    learning.record_version(pref_a, 16, msgspec.json.encode(residual_parameters(FEATURE_VERSION)).decode(), "{}",
                            promote=True)
    assert chosen(select(client, h, preference_id=pref_a, messages=poem(99))) == CHEAP   # shifted
    assert chosen(select(client, h, preference_id=pref_b, messages=poem(99))) == STRONG  # other preference
    maths = "Compute the eigenvalues of the matrix [[2, 1], [1, 3]] and show every step."
    assert chosen(select(client, h, preference_id=pref_a, messages=maths)) == STRONG     # dissimilar query
    assert learning.rollback(pref_a) is None
    assert chosen(select(client, h, preference_id=pref_a, messages=poem(99))) == STRONG  # the router alone again


def test_acknowledged_sessions_survive_a_clean_restart(data_dir, auth, client):
    from litestar.testing import TestClient

    from api.app import create_app

    h = auth()
    first = select(client, h)
    pick, session_id = chosen(first), first.json()["session_id"]
    client.app.state.services.sessions.close()   # what the app's shutdown does
    client.app.state.services.store.close()
    with TestClient(create_app(publish_owner=False)) as second:
        r = second.post(FEEDBACK, headers=h, json={"session_id": session_id, "provider": pick,
                                                   "feedback": {"accuracy": 1}})
        assert r.status_code == 200, r.text


def test_a_prompt_at_a_context_limit_is_counted_exactly(client, auth):
    """Eligibility reads the exact token count (api/routing/token_count.py on ASCII, tiktoken otherwise): a window
    of exactly the prompt's tokens fits, one token fewer does not, whatever a characters-per-token guess says."""
    from api.routing.text import get_encoding

    h = auth()
    prompts = ["x=1;y=2;" * 30 + " def f(a,b): return a**b  # 2,048 tokens? no", "naïve café, 日本語のテキスト " * 12]
    for prompt in prompts:
        exact = len(get_encoding().encode_ordinary(prompt))
        assert exact not in (len(prompt) // 4, len(prompt.encode()) // 4)  # a guess would be off here
        for window, fits in ((exact, True), (exact - 1, False)):
            free = {"provider": "acme", "model": f"edge-{window}", "is_custom": True, "context_length": window,
                    "input_price": 0.0, "output_price": 0.0, "latency": 0.1}
            pick = chosen(select(client, h, messages=prompt, llm_providers=[free, STRONG], cost_quality_tradeoff=10))
            assert (pick["model"] == free["model"]) is fits, (prompt[:20], window)
    assert [row["prompt_tokens"] for row in sessions(client)[-4:]] == [
        len(get_encoding().encode_ordinary(p)) for p in prompts for _ in range(2)]
