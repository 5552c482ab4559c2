"""The learn-from-traffic flow end to end: traffic and feedback through the real app, the flow on a real (throw-away)
Prefect server, the promoted correction served by a new API process' worth of app, and hashed sessions nowhere in
what was learned."""

from __future__ import annotations

import msgspec
import pytest
from litestar.testing import TestClient

from api.settings import get_settings

# Prefect is imported inside the test (tests/flows/test_housekeeping.py says why).
pytestmark = pytest.mark.usefixtures("prefect_harness")

SELECT = "/v2/modelRouter/modelSelect"
FEEDBACK = "/v2/report/metrics/feedback"
STRONG = {"provider": "openai", "model": "gpt-4o"}
CHEAP = {"provider": "openai", "model": "gpt-4o-mini"}
SECRET = "walrus-sapphire-9041"


def maths(i: int) -> str:
    return f"Compute the definite integral of x^{i % 7 + 2} * sin({i % 5 + 1}x) from 0 to pi, showing every step."


def poem(i: int) -> str:
    return f"Write a cheerful four-line poem about a {['cat', 'kite', 'river', 'lamp', 'garden'][i % 5]} in spring."


def app_client() -> TestClient:
    from api.app import create_app

    return TestClient(create_app(publish_owner=False), raise_server_exceptions=False)


def route(client, h, prompt, pid, t, **extra):
    r = client.post(SELECT, headers=h, json={"messages": [{"role": "user", "content": prompt}],
                                             "llm_providers": [STRONG, CHEAP], "preference_id": pid,
                                             "cost_quality_tradeoff": t, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def test_feedback_becomes_a_promoted_correction_that_every_worker_serves(data_dir):
    from flows.learning.flow import learn_from_traffic
    from flows.learning.table import load_evidence
    from storage import analytics
    from storage.store import LocalStore

    with app_client() as client:
        h = {"Authorization": f"Bearer {client.app.state.services.store.accounts.issue_key('alice').key}"}
        pid = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=h).json()["preference_id"]
        assert client.put("/v2/preferences/userPreferenceUpdate", headers=h,
                          json={"preference_id": pid, "exploration_rate": 0.1}).status_code == 200
        selection = client.app.state.services.selection
        selection.rng.seed(5)
        # The dial calibrates on a background thread, whose timing would make the traffic (and so the labels)
        # differ from run to run: the router's stored schedule makes the run repeatable.
        selection.dial = None
        # The strong model fails poems, which the router sends it at cost_quality_tradeoff 0; the cheap one, rated
        # near it there, is explored one time in ten and passes them. Maths: both pass.
        for i in range(800):
            prompt = maths(i) if i % 2 else poem(i)
            body = route(client, h, prompt, pid, 0)
            pick = body["providers"][0]
            label = 1 if pick["model"] == CHEAP["model"] or i % 2 == 1 else 0
            assert client.post(FEEDBACK, headers=h, json={"session_id": body["session_id"], "provider": pick,
                                                          "feedback": {"accuracy": label}}).status_code == 200
        hashed = [route(client, h, f"{maths(i)} My key is {SECRET}.", pid, 5, hash_content=True)["session_id"]
                  for i in range(20)]
        before = [route(client, h, poem(i), pid, t)["providers"][0]["model"] for i in range(1000, 1010)
                  for t in range(11)]

    decisions = learn_from_traffic(preference_id=pid, min_new_labels=100)
    assert decisions == {pid: "promoted"}
    store = LocalStore(get_settings().db_path)
    try:
        [version] = store.learning.versions(pid)
        evaluation = msgspec.json.decode(version.evaluation)
        assert version.is_live and version.labels == 800 and evaluation["decision"] == "promoted"
        assert evaluation["dr"]["difference"]["low"] > 0 and evaluation["learning_curve"]
        assert SECRET not in version.parameters and SECRET not in version.evaluation
    finally:
        store.close()
    with analytics.connect(get_settings().data_dir) as conn:
        evidence = load_evidence(conn, pid)
        assert len(evidence) == 800 and not set(hashed) & set(evidence.session_ids)
        # the view gives hashed sessions no features, and nothing of theirs carries the text
        assert conn.execute("SELECT count(*) FROM decision_evidence WHERE hashed AND features IS NOT NULL"
                            ).fetchone()[0] == 0

    with app_client() as client:  # a fresh API process loads the live correction from the store
        h = {"Authorization": f"Bearer {client.app.state.services.store.accounts.issue_key('alice').key}"}
        client.app.state.services.selection.dial = None
        after = [route(client, h, poem(i), pid, t) for i in range(1000, 1010) for t in range(11)]
        assert sum(b["providers"][0]["model"] == STRONG["model"] for b in after) < \
            sum(m == STRONG["model"] for m in before)
        sessions = client.app.state.services.sessions
        sessions.sessions.flush()
    import pyarrow.parquet as pq

    rows = [r for part in sorted((get_settings().events_dir / "sessions").glob("day=*/*.parquet"))
            for r in pq.read_table(part).to_pylist() if r["session_id"] in {b["session_id"] for b in after}]
    assert rows and all(r["correction_version"] == version.version_id for r in rows)
