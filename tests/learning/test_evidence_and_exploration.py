"""Evidence on the decision path and opt-in exploration, through the real app (real DuckDB, Parquet logs, router)."""

from __future__ import annotations

import random

import pyarrow.parquet as pq

from api.selection.exploration import explore

SELECT = "/v2/modelRouter/modelSelect"
UPDATE = "/v2/preferences/userPreferenceUpdate"
STRONG = {"provider": "openai", "model": "gpt-4o"}
CHEAP = {"provider": "openai", "model": "gpt-4o-mini"}
TINY = {"provider": "acme", "model": "tiny-context", "is_custom": True, "context_length": 16, "input_price": 0.01,
        "output_price": 0.01, "latency": 0.1}
PROMPTS = [f"Question {i}: what is {i} times {i + 3}? Explain each step of the multiplication." for i in range(40)]


def sessions(client) -> list[dict]:
    log = client.app.state.services.sessions
    log.sessions.flush()
    return [row for part in sorted((log.events_dir / "sessions").glob("day=*/*.parquet"))
            for row in pq.read_table(part).to_pylist()]


def new_preference(client, h, **fields) -> str:
    pid = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=h).json()["preference_id"]
    if fields:
        r = client.put(UPDATE, json={"preference_id": pid, **fields}, headers=h)
        assert r.status_code == 200, r.text
    return pid


def route(client, h, prompt: str, **body) -> str:
    r = client.post(SELECT, headers=h, json={"messages": [{"role": "user", "content": prompt}],
                                             "llm_providers": [STRONG, CHEAP, TINY], **body})
    assert r.status_code == 200, r.text
    return r.json()["providers"][0]["model"]


def test_explore_draws_only_near_best_ranked_positions_and_says_how_likely():
    rng = random.Random(7)
    assert explore([0.9, 0.85], 0.0, rng) == (0, 1.0)
    assert explore([0.9, 0.5], 0.1, rng) == (0, 1.0)  # nothing near: never explored
    seen = {}
    for _ in range(4000):
        position, p = explore([0.9, 0.88, 0.85, 0.2], 0.1, rng)
        seen.setdefault(position, set()).add(p)
    assert set(seen) == {0, 1, 2}
    assert seen[0] == {0.9} and seen[1] == {0.05} and seen[2] == {0.05}


def test_every_decision_logs_its_evidence(client, auth):
    h = auth()
    route(client, h, PROMPTS[0])
    route(client, h, PROMPTS[1], hash_content=True)
    plain, hashed = sessions(client)
    assert plain["propensity"] == 1.0 and plain["explored"] is False and plain["exploration_rate"] == 0.0
    assert len(plain["router_quality"]) == len(plain["eligible"]) == len(plain["penalty_position"]) == 2
    assert plain["policy_lambda"] == 0.0 and plain["correction_version"] is None
    assert hashed["hashed"] and hashed["content"] is None and hashed["propensity"] == 1.0


class NoDraws(random.Random):
    def random(self) -> float:
        raise AssertionError("exploration drew a number for a preference that did not opt in")


def test_exploration_is_off_by_default_and_a_preference_without_it_routes_as_before(client, auth):
    h = auth()
    client.app.state.services.selection.rng = NoDraws()
    plain = new_preference(client, h)
    zero = new_preference(client, h, exploration_rate=0)
    # The dial calibrates per preference (api/routing/dial.py): two preferences given the same traffic in the same
    # order decide alike, and at the ends of the dial so does a request without one.
    decided = {pid: [route(client, h, p, preference_id=pid, cost_quality_tradeoff=t) for t in (0, 5, 10)
                     for p in PROMPTS[:10]] for pid in (plain, zero)}
    assert decided[plain] == decided[zero]
    for t in (0, 10):
        assert [route(client, h, p, preference_id=plain, cost_quality_tradeoff=t) for p in PROMPTS[:10]] == \
            [route(client, h, p, cost_quality_tradeoff=t) for p in PROMPTS[:10]]
    assert all(row["propensity"] == 1.0 and not row["explored"] for row in sessions(client))


def test_exploration_stays_among_listed_candidates_whose_context_holds_the_prompt(client, auth):
    h = auth()
    pid = new_preference(client, h, exploration_rate=0.1)
    client.app.state.services.selection.rng.seed(3)
    picks = {route(client, h, p, preference_id=pid, cost_quality_tradeoff=t) for p in PROMPTS for t in (0, 1, 2)}
    assert picks <= {"gpt-4o", "gpt-4o-mini"}  # never TINY: the prompt does not fit its 16 tokens
    rows = [r for r in sessions(client) if r["preference_id"] == pid]
    explored = [r for r in rows if r["explored"]]
    assert explored, "120 decisions at rate 0.1 with a near alternative explored none"
    for r in rows:
        assert "acme/tiny-context" not in r["eligible"] and r["exploration_rate"] > 0.09
        assert 0 < r["propensity"] <= 1.0
        assert (r["propensity"] < 0.5) == r["explored"]  # explored: rate / alternatives; else 1 - rate or 1


def test_exploration_rate_is_validated_with_the_error_envelope(client, auth):
    h = auth()
    pid = new_preference(client, h)
    for bad in (0.5, -0.01, "often"):
        r = client.put(UPDATE, json={"preference_id": pid, "exploration_rate": bad}, headers=h)
        assert r.status_code in (400, 422), r.text
        body = r.json()
        assert "exploration_rate" in r.text and ("error" in body or "detail" in body)
    r = client.put(UPDATE, json={"preference_id": pid, "exploration_rate": 0.05}, headers=h)
    assert r.status_code == 200 and r.json()["exploration_rate"] == 0.05
