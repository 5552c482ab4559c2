from __future__ import annotations

import uuid
from datetime import datetime, timezone

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
    assert log.find(ids[2])["chosen"] == "a/b"   # in memory, not yet flushed
    log.close()                                   # clean shutdown flushes
    reopened = SessionLog(tmp_path / "events", flush_seconds=60)
    found = reopened.find(ids[0])
    assert found["session_id"] == ids[0] and list(found["eligible"]) == ["a/b"]
    assert reopened.find(new_session_id()) is None
