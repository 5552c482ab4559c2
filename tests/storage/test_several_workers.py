"""Per-process state that several API workers must not let diverge: the session log behind feedback, the feedback
that personalises routing, and the preferences cached for modelSelect. Two objects on one data dir play two
workers."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from api.selection.preference_cache import PreferenceCache
from api.selection.sessions import SessionLog, new_session_id, session_created_s
from storage.records import PreferenceChanges
from storage.store import LocalStore


def session_row(session_id: str, user: str = "u") -> dict:
    return {"session_id": session_id, "created_at": datetime.now(timezone.utc), "user_id": user,
            "organization_id": user, "preference_id": "p", "hashed": False, "content": "[]", "content_hash": "h",
            "candidates": ["openai/gpt-4o"], "eligible": ["openai/gpt-4o"], "predicted_quality": [0.5],
            "estimated_cost_usd": [0.001], "chosen": "openai/gpt-4o", "chosen_label_provider": "openai",
            "chosen_label_model": "gpt-4o"}


def feedback_row(session_id: str, accuracy: int) -> dict:
    return {"feedback_id": f"f-{session_id}-{accuracy}", "created_at": datetime.now(timezone.utc),
            "session_id": session_id, "user_id": "u", "organization_id": "u", "preference_id": "p",
            "model": "openai/gpt-4o", "accuracy": accuracy, "predicted_quality": 0.5, "embedding": [1.0, 0.0]}


def test_session_ids_carry_their_creation_time():
    before = time.time()
    created = session_created_s(new_session_id())
    assert before - 0.01 <= created <= time.time() + 0.01
    assert session_created_s("not-a-uuid") is None
    assert session_created_s("00000000-0000-4000-8000-000000000000") is None  # not our UUIDv7 layout


def test_feedback_on_another_worker_finds_a_session_not_flushed_yet(tmp_path):
    worker_a = SessionLog(tmp_path, flush_seconds=0.3).start()
    worker_b = SessionLog(tmp_path, flush_seconds=0.3).start()
    try:
        sid = new_session_id()
        worker_a.record(session_row(sid))
        started = time.monotonic()
        found = worker_b.find(sid)  # only in A's buffer now: B waits for A's flush, then reads the log
        assert found is not None and found["session_id"] == sid
        assert time.monotonic() - started < 3  # one flush plus grace (0.8 s), with room for a busy machine
        # An unknown but recent id costs at most one flush wait; an old or forged one none.
        started = time.monotonic()
        assert worker_b.find(new_session_id()) is None
        assert time.monotonic() - started < 3
        started = time.monotonic()
        assert worker_b.find("ffffffff-ffff-7fff-bfff-ffffffffffff") is None  # far future: no wait
        assert time.monotonic() - started < 0.3
    finally:
        worker_a.close()
        worker_b.close()


def test_each_worker_reads_the_feedback_the_others_flushed(tmp_path):
    worker_a = SessionLog(tmp_path, flush_seconds=60)
    worker_b = SessionLog(tmp_path, flush_seconds=60)
    assert worker_b.all_feedback().num_rows == 0  # start-up: everything so far
    worker_a.record_feedback(feedback_row("s1", 1))
    worker_a.feedback.flush()
    fresh = worker_b.new_feedback().to_pylist()
    assert [(r["session_id"], r["accuracy"]) for r in fresh] == [("s1", 1)]
    assert worker_b.new_feedback().num_rows == 0  # each file is read once
    worker_a.record_feedback(feedback_row("s1", 0))
    worker_a.feedback.flush()
    assert [(r["session_id"], r["accuracy"]) for r in worker_b.new_feedback().to_pylist()] == [("s1", 0)]


def test_the_preference_cache_serves_hits_and_drops_changed_entries(tmp_path):
    store = LocalStore(tmp_path / "db.duckdb")
    calls = []
    real = store.preferences.get

    def counted(user_id, preference_id):
        calls.append(preference_id)
        return real(user_id, preference_id)

    store.preferences.get = counted  # type: ignore[method-assign]
    try:
        cache = PreferenceCache(store, ttl_seconds=60).attach()
        pref = store.preferences.create("owner", "p")
        calls.clear()  # creating reads the row back through the same method
        assert cache.get_preference("owner", pref.preference_id).name == "p"
        assert cache.get_preference("owner", pref.preference_id).name == "p"
        assert len(calls) == 1  # the second read is a hit
        assert cache.get_preference("intruder", pref.preference_id) is None  # another user's looks unknown
        store.preferences.update("owner", pref.preference_id, PreferenceChanges(name="renamed"))
        assert cache.get_preference("owner", pref.preference_id).name == "renamed"  # the change invalidated it
        assert cache.get_preference("owner", "missing") is None
        assert cache.get_preference("owner", "missing") is None
        assert calls.count("missing") == 2  # unknown ids are not cached: another worker may create them
        expiring = PreferenceCache(store, ttl_seconds=0.05)
        expiring.get_preference("owner", pref.preference_id)
        time.sleep(0.06)
        before = len(calls)
        expiring.get_preference("owner", pref.preference_id)
        assert len(calls) == before + 1  # the TTL bounds staleness when no change notice arrives
    finally:
        store.close()
