from __future__ import annotations

import uuid
from datetime import datetime, timezone

import msgspec
import numpy as np

from api.selection.sessions import SessionLog, new_session_id


def row(session_id: str, **extra):
    base = dict(session_id=session_id, created_at=datetime.now(timezone.utc), user_id="u", organization_id="o",
                preference_id=None, previous_session=None, hashed=False, content='"hi"', content_hash="h",
                prompt_tokens=1, tools_count=0, candidates=["a/b"], eligible=["a/b"], predicted_quality=[0.5],
                estimated_cost_usd=[0.001], chosen="a/b", chosen_label_provider="a", chosen_label_model="b",
                tradeoff=None, cost_quality_tradeoff=None, max_model_depth=None, router="default",
                personalised=False, featurize_us=10, decide_us=20)
    base.update(extra)
    return base


def test_session_ids_are_uuid7_and_time_ordered():
    ids = [new_session_id() for _ in range(2000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 7 for i in ids[:10])


def test_find_serves_recent_rows_then_parquet_after_restart(tmp_path):
    log = SessionLog(tmp_path / "events", flush_seconds=60, recent=2).start()
    ids = [new_session_id() for _ in range(3)]
    for i in ids:
        log.record(row(i))
    recent = log.find(ids[2])                     # in memory, not yet flushed: what feedback needs, not the row
    assert recent["chosen"] == "a/b" and recent["embedding"] is None and "content" not in recent
    assert recent["router_quality"] is None      # not in this row: null, as in the log
    later = new_session_id()
    log.record(row(later, router_quality=[0.25]))
    assert log.find(later)["router_quality"] == [0.25]  # feedback's residual base (api/selection/feedback.py)
    log.close()                                   # clean shutdown flushes
    # A short flush interval: an unknown id younger than one flush is waited for (another worker's, perhaps).
    reopened = SessionLog(tmp_path / "events", flush_seconds=0.1)
    found = reopened.find(ids[0])
    assert found["session_id"] == ids[0] and list(found["eligible"]) == ["a/b"]
    assert reopened.find(new_session_id()) is None


def test_feedback_embedding_is_the_same_from_memory_and_from_the_log(client, auth):
    """Feedback on a recent session uses the embedding taken at decision time; on an older one it embeds the stored
    messages again. Both must give the personalisation memory the same vector."""
    h = auth()
    services = client.app.state.services
    pid = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=h).json()["preference_id"]
    body = {"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Summarise the plot of Hamlet in two sentences."}],
            "llm_providers": [{"provider": "openai", "model": "gpt-4o"}], "preference_id": pid}
    sid = client.post("/v2/modelRouter/modelSelect", json=body, headers=h).json()["session_id"]
    in_memory = services.sessions.find(sid)["embedding"]
    services.sessions.sessions.flush()
    from_log = services.sessions._find_flushed(sid)
    again = services.selection.embed_text(msgspec.json.decode(from_log["content"]))
    np.testing.assert_allclose(in_memory, again, rtol=1e-6, atol=1e-7)
    r = client.post("/v2/report/metrics/feedback", headers=h,
                    json={"session_id": sid, "provider": {"provider": "openai", "model": "gpt-4o"},
                          "feedback": {"accuracy": 1}})
    assert r.status_code == 200, r.text
