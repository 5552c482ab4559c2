"""The system of record on both engines (tests/storage/conftest.py): keys and users, preferences, jobs; and, on
DuckDB, durability and the one-writer rule."""

from __future__ import annotations

import os
import subprocess
import textwrap
import uuid
from datetime import datetime, timezone
from pathlib import Path

import msgspec
import pytest

from storage import keys as keyfmt
from storage.errors import DatabaseLocked, StoreError
from storage.keys import display_prefix, hash_key
from storage.records import Job, Preference, PreferenceChanges, User
from storage.store import LocalStore

REPO = Path(__file__).resolve().parents[2]
PYTHON = str(REPO / ".venv" / "bin" / "python")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    return env


# --- keys and users ---------------------------------------------------------------------------


def test_issue_creates_a_user_with_defaults(store):
    issued = store.accounts.issue_key("alice")
    assert issued.user == User(user_id="alice", organization_id="alice", tier="free", prompt_optimization=False,
                               is_admin=False, key_id=issued.info.key_id)
    assert issued.key.startswith(keyfmt.KEY_PREFIX) and len(issued.key) > 40
    assert issued.info.user_id == "alice" and issued.info.revoked_at is None
    assert issued.info.key_prefix == display_prefix(issued.key) == issued.key[:9]
    assert issued.info.created_at.tzinfo is not None
    assert store.accounts.user_for_key(hash_key(issued.key)) == issued.user


def test_issue_with_attributes_for_a_new_user(store):
    user = store.accounts.issue_key("bob", organization_id="acme", tier="enterprise", prompt_optimization=True,
                           is_admin=True).user
    assert (user.organization_id, user.tier, user.prompt_optimization, user.is_admin) == \
        ("acme", "enterprise", True, True)


def test_second_issue_updates_only_the_attributes_given(store):
    first = store.accounts.issue_key("carol", organization_id="acme", tier="starter", prompt_optimization=True)
    second = store.accounts.issue_key("carol", tier="startup")
    assert second.user == User("carol", "acme", "startup", True, False, key_id=second.info.key_id)
    third = store.accounts.issue_key("carol", prompt_optimization=False)
    assert third.user == User("carol", "acme", "startup", False, False, key_id=third.info.key_id)
    store.accounts.issue_key("carol", is_admin=True)
    assert store.accounts.issue_key("carol").user.is_admin  # admin is never silently taken away
    # Every key stays valid and points at the current user record.
    for issued in (first, second, third):
        assert store.accounts.user_for_key(hash_key(issued.key)) == User("carol", "acme", "startup", False, True,
                                                                         key_id=issued.info.key_id)
    assert len({first.key, second.key, third.key}) == 3


@pytest.mark.parametrize("user_id", ["", "   "])
def test_empty_user_id_is_refused(store, user_id):
    with pytest.raises(StoreError, match="must not be empty"):
        store.accounts.issue_key(user_id)
    assert store.accounts.list_keys() == []


def test_unknown_key_has_no_user(store):
    store.accounts.issue_key("alice")
    assert store.accounts.user_for_key(hash_key("sb-nope")) is None
    assert store.accounts.user_for_key("") is None


def test_list_shows_prefixes_never_keys(store):
    issued = [store.accounts.issue_key(u) for u in ("alice", "bob", "alice")]
    listed = store.accounts.list_keys()
    assert [k.key_id for k in listed] == [i.info.key_id for i in issued]  # oldest first
    assert [k.key_prefix for k in listed] == [i.key[:9] for i in issued]
    encoded = msgspec.json.encode(listed)
    for i in issued:
        assert i.key.encode() not in encoded
        assert hash_key(i.key).encode() not in encoded  # the hash is not handed out either
    assert store.accounts.count_active_keys() == 3


@pytest.mark.parametrize("by", ["key_id", "prefix", "key"])
def test_revoke_by_id_prefix_or_key(store, by):
    target, other = store.accounts.issue_key("alice"), store.accounts.issue_key("alice")
    ref = {"key_id": target.info.key_id, "prefix": target.info.key_prefix, "key": target.key}[by]
    info = store.accounts.revoke_key(ref)
    assert info.key_id == target.info.key_id and info.revoked_at is not None
    assert store.accounts.user_for_key(hash_key(target.key)) is None
    assert store.accounts.user_for_key(hash_key(other.key)) is not None
    assert store.accounts.count_active_keys() == 1
    assert [k.revoked_at is not None for k in store.accounts.list_keys()] == [True, False]


def test_revoking_twice_keeps_the_first_revocation_time(store):
    issued = store.accounts.issue_key("alice")
    first = store.accounts.revoke_key(issued.info.key_id).revoked_at
    again = store.accounts.revoke_key(issued.info.key_id).revoked_at
    assert again == first


def test_revoke_unknown_ref_errors(store):
    store.accounts.issue_key("alice")
    with pytest.raises(StoreError, match="no API key matches 'sb-zzzzzz'"):
        store.accounts.revoke_key("sb-zzzzzz")
    assert store.accounts.count_active_keys() == 1


def test_revoke_ambiguous_prefix_errors_and_revokes_nothing(store, monkeypatch):
    minted = iter(["sb-SAMEPFX" + "a" * 40, "sb-SAMEPFX" + "b" * 40])
    monkeypatch.setattr(keyfmt, "new_key", lambda: next(minted))
    one, two = store.accounts.issue_key("alice"), store.accounts.issue_key("bob")
    assert one.info.key_prefix == two.info.key_prefix == "sb-SAMEPF"
    with pytest.raises(StoreError, match="matches 2 keys; revoke by key id"):
        store.accounts.revoke_key("sb-SAMEPF")
    assert store.accounts.count_active_keys() == 2
    store.accounts.revoke_key(two.key)  # the full key is never ambiguous
    assert store.accounts.user_for_key(hash_key(one.key)).user_id == "alice"
    assert store.accounts.user_for_key(hash_key(two.key)) is None


def test_plaintext_is_not_stored(store, db):
    issued = store.accounts.issue_key("alice")
    rows = store.database.rows("SELECT * FROM api_keys")
    assert issued.key not in repr(rows)
    assert hash_key(issued.key) in repr(rows)


# --- preferences ------------------------------------------------------------------------------


def test_preference_crud(store):
    pref = store.preferences.create("alice", "Support")
    assert isinstance(pref, Preference)
    assert uuid.UUID(pref.preference_id)
    assert (pref.user_id, pref.name, pref.tradeoff, pref.cost_quality_tradeoff, pref.max_model_depth,
            pref.hash_content, pref.has_custom_router) == ("alice", "Support", None, None, None, None, False)
    assert pref.created_at == pref.updated_at and pref.created_at.tzinfo is not None
    assert store.preferences.get("alice", pref.preference_id) == pref

    updated = store.preferences.update("alice", pref.preference_id,
                                      PreferenceChanges(name="Prod", cost_quality_tradeoff=3, hash_content=True))
    assert (updated.name, updated.cost_quality_tradeoff, updated.hash_content, updated.tradeoff) == \
        ("Prod", 3, True, None)
    assert updated.updated_at >= pref.updated_at and updated.created_at == pref.created_at

    # UNSET leaves a field alone; None clears it.
    cleared = store.preferences.update("alice", pref.preference_id,
                                      PreferenceChanges(cost_quality_tradeoff=None, tradeoff="latency"))
    assert (cleared.name, cleared.cost_quality_tradeoff, cleared.hash_content, cleared.tradeoff) == \
        ("Prod", None, True, "latency")
    # An empty change set changes nothing.
    assert store.preferences.update("alice", pref.preference_id, PreferenceChanges()) == cleared

    assert store.preferences.delete("alice", pref.preference_id) == []
    assert store.preferences.get("alice", pref.preference_id) is None
    assert store.preferences.delete("alice", pref.preference_id) is None


def test_preferences_belong_to_their_user(store):
    mine = store.preferences.create("alice", "mine")
    theirs = store.preferences.create("bob", "theirs")
    assert store.preferences.get("bob", mine.preference_id) is None
    assert store.preferences.update("bob", mine.preference_id, PreferenceChanges(name="stolen")) is None
    assert store.preferences.delete("bob", mine.preference_id) is None
    assert store.preferences.get("alice", mine.preference_id).name == "mine"
    assert [p.preference_id for p in store.preferences.for_user("alice")] == [mine.preference_id]
    assert [p.preference_id for p in store.preferences.for_user("bob")] == [theirs.preference_id]
    assert store.preferences.for_user("nobody") == []


def test_unknown_preference_is_none(store):
    missing = str(uuid.uuid4())
    assert store.preferences.get("alice", missing) is None
    assert store.preferences.update("alice", missing, PreferenceChanges(name="x")) is None
    assert store.preferences.delete("alice", missing) is None


def test_list_preferences_is_in_creation_order(store):
    ids = [store.preferences.create("alice", f"p{i}").preference_id for i in range(5)]
    assert [p.preference_id for p in store.preferences.for_user("alice")] == ids


def test_delete_returns_custom_router_paths_and_removes_their_rows(store):
    pref = store.preferences.create("alice", "with router")
    other = store.preferences.create("alice", "untouched")
    for i, pid in enumerate([pref.preference_id, pref.preference_id, other.preference_id]):
        store.database.run("INSERT INTO custom_routers VALUES (?, ?, NULL, ?, true, now())", [f"r{i}", pid, f"/a/{i}"])
    assert store.preferences.get("alice", pref.preference_id).has_custom_router
    assert sorted(store.preferences.delete("alice", pref.preference_id)) == ["/a/0", "/a/1"]
    assert store.database.rows("SELECT router_id FROM custom_routers") == [("r2",)]
    assert store.preferences.get("alice", other.preference_id).has_custom_router


# --- jobs -------------------------------------------------------------------------------------


def test_create_and_get_job(store):
    job = store.jobs.create("train-custom-router", "alice", "pref-1")
    assert isinstance(job, Job)
    assert (job.kind, job.user_id, job.subject_id, job.status, job.flow_run_id, job.error) == \
        ("train-custom-router", "alice", "pref-1", "created", None, None)
    assert store.jobs.get(job.job_id) == job
    assert store.jobs.get(str(uuid.uuid4())) is None
    queued = store.jobs.create("optimize-prompt", "alice", None, status="queued")
    assert queued.status == "queued" and queued.subject_id is None


def test_update_job_moves_it_on_and_keeps_what_is_not_given(store):
    job = store.jobs.create("optimize-prompt", "alice", "run-1")
    flow_run = str(uuid.uuid4())
    running = store.jobs.update(job.job_id, status="processing", flow_run_id=flow_run)
    assert (running.status, running.flow_run_id, running.error) == ("processing", flow_run, None)
    assert running.updated_at >= job.updated_at
    failed = store.jobs.update(job.job_id, status="failed", error="boom")
    assert (failed.status, failed.flow_run_id, failed.error) == ("failed", flow_run, "boom")
    assert store.jobs.update(str(uuid.uuid4()), status="failed") is None


def test_only_if_open_never_overwrites_a_final_state(store):
    job = store.jobs.create("optimize-prompt", "alice", "run-1")
    store.jobs.update(job.job_id, status="completed")
    after = store.jobs.update(job.job_id, status="failed", error="late housekeeping", only_if_open=True)
    assert (after.status, after.error) == ("completed", None)
    # An open job is moved.
    other = store.jobs.create("optimize-prompt", "alice", "run-2", status="processing")
    moved = store.jobs.update(other.job_id, status="failed", error="crashed", only_if_open=True)
    assert (moved.status, moved.error) == ("failed", "crashed")


def test_open_jobs_lists_created_queued_and_processing_oldest_first(store):
    made = {s: store.jobs.create("k", "alice", None, status=s)
            for s in ("created", "queued", "processing", "completed", "failed", "cancelled")}
    assert [j.job_id for j in store.jobs.list_open()] == [made[s].job_id for s in ("created", "queued", "processing")]
    store.jobs.update(made["queued"].job_id, status="cancelled")
    assert {j.status for j in store.jobs.list_open()} == {"created", "processing"}


def test_bad_job_status_is_refused(store):
    with pytest.raises(StoreError, match="unknown job status 'done'"):
        store.jobs.create("k", "alice", None, status="done")
    assert store.database.rows("SELECT count(*) FROM jobs")[0][0] == 0
    job = store.jobs.create("k", "alice", None)
    with pytest.raises(StoreError, match="unknown job status"):
        store.jobs.update(job.job_id, status="finished")
    assert store.jobs.get(job.job_id).status == "created"


# --- durability -------------------------------------------------------------------------------


def test_a_reopened_store_keeps_everything(db):
    store = LocalStore(db)
    issued = store.accounts.issue_key("alice", tier="starter")
    revoked = store.accounts.issue_key("alice")
    store.accounts.revoke_key(revoked.info.key_id)
    pref = store.preferences.create("alice", "kept")
    store.preferences.update("alice", pref.preference_id, PreferenceChanges(max_model_depth=4))
    job = store.jobs.update(store.jobs.create("k", "alice", pref.preference_id).job_id, status="processing",
                           flow_run_id="fr-1")
    store.close()

    again = LocalStore(db)
    try:
        assert again.database.applied_migrations == []
        assert again.accounts.user_for_key(hash_key(issued.key)).tier == "starter"
        assert again.accounts.user_for_key(hash_key(revoked.key)) is None
        assert again.preferences.get("alice", pref.preference_id).max_model_depth == 4
        assert again.jobs.get(job.job_id) == job
        assert len(again.accounts.list_keys()) == 2
    finally:
        again.close()


def test_acknowledged_writes_survive_a_killed_process(db):
    """A process that dies without closing (kill -9 after its writes returned) loses nothing."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        from storage.store import LocalStore
        store = LocalStore(__import__('pathlib').Path({str(db)!r}))
        issued = store.accounts.issue_key("alice")
        pref = store.preferences.create("alice", "survivor")
        job = store.jobs.create("k", "alice", pref.preference_id)
        print(issued.key, pref.preference_id, job.job_id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == -9, done.stderr
    key, pid, job_id = done.stdout.split()
    store = LocalStore(db)
    try:
        assert store.accounts.user_for_key(hash_key(key)).user_id == "alice"
        assert store.preferences.get("alice", pid).name == "survivor"
        assert store.jobs.get(job_id).status == "created"
    finally:
        store.close()


def test_a_second_process_cannot_open_the_file_while_it_is_open(db):
    store = LocalStore(db)
    store.accounts.issue_key("alice")
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from storage.errors import DatabaseLocked
        from storage.store import LocalStore
        try:
            LocalStore(Path({str(db)!r}))
        except DatabaseLocked as exc:
            print(exc)
            sys.exit(3)
        sys.exit(0)
    """)
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == 3, (done.stdout, done.stderr)
    message = done.stdout.strip()
    assert str(db) in message
    assert "opened for writing by another process" in message
    assert issubclass(DatabaseLocked, StoreError)
    # The refused opener damaged nothing; the owner carries on.
    assert store.accounts.count_active_keys() == 1
    store.close()
    # Once the owner closed the file, another process may open it.
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)


def test_store_is_safe_across_threads(store):
    from concurrent.futures import ThreadPoolExecutor

    def work(i: int) -> str:
        pref = store.preferences.create(f"user{i % 4}", f"p{i}")
        store.preferences.update(pref.user_id, pref.preference_id, PreferenceChanges(max_model_depth=i % 7 + 1))
        return pref.preference_id

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(work, range(80)))
    assert len(set(ids)) == 80
    assert store.database.rows("SELECT count(*) FROM preferences")[0][0] == 80
    assert sum(len(store.preferences.for_user(f"user{u}")) for u in range(4)) == 80


def test_timestamps_are_utc_aware(store):
    before = datetime.now(timezone.utc)
    pref = store.preferences.create("alice", "t")
    after = datetime.now(timezone.utc)
    assert before <= pref.created_at <= after


def test_learned_corrections_keep_every_version_and_move_one_pointer(store):
    """Issue 23 (storage/repositories/learning.py): promotion and rollback move the pointer, nothing is deleted."""
    pref = store.preferences.create("alice", "learns")
    pid = pref.preference_id
    first = store.learning.record_version(pid, 300, "{}", "{}", promote=True)
    kept_out = store.learning.record_version(pid, 600, "{}", "{}", promote=False)
    second = store.learning.record_version(pid, 900, "{}", "{}", promote=True)
    assert store.learning.live(pid).version_id == second.version_id
    assert [v.version_id for v in store.learning.all_live()] == [second.version_id]
    assert store.learning.rollback(pid).version_id == first.version_id
    assert store.learning.rollback(pid) is None and store.learning.live(pid) is None
    assert store.learning.promote(pid, kept_out.version_id).is_live
    assert [v.version_id for v in store.learning.versions(pid)] == [first.version_id, kept_out.version_id,
                                                                    second.version_id]
    assert store.preferences.update("alice", pid, PreferenceChanges(exploration_rate=0.05)).exploration_rate == 0.05
    assert store.preferences.delete("alice", pid) == [] and store.learning.versions(pid) == []
