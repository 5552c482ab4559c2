"""The owner RPC against the real API served by granian in a separate process.

DuckDB admits one read-write process per file: the API owns it and everyone else (flow runs, the CLI) goes
through `/internal/rpc`. The key test here has the API and another process write at the same time.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx
import msgspec
import pytest

from api.cli.processes import free_port
from storage import owner
from storage.errors import DatabaseLocked
from storage.keys import hash_key
from storage.records import ApiKeyInfo, IssuedKey, Job, Preference, PreferenceChanges
from storage.rpc import RemoteStore, RemoteStoreError
from storage.store import LocalStore
from tests.support.api_server import PYTHON, REPO, ApiServer, child_env

CREATE = "/v2/preferences/userPreferenceCreate"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ApiServer(tmp_path_factory.mktemp("rpc") / "data")
    try:
        yield srv
    finally:
        try:
            srv.terminate(timeout=20)
        except Exception:
            pass
        srv.kill()


@pytest.fixture(scope="module")
def remote(server) -> RemoteStore:
    store = owner.open_store(server.db_path, server.run_dir)
    yield store
    store.close()


@pytest.fixture
def fresh_server(tmp_path):
    srv = ApiServer(tmp_path / "data")
    try:
        yield srv
    finally:
        srv.kill()


# --- discovery --------------------------------------------------------------------------------


def test_open_store_finds_the_live_owner(server, remote):
    assert isinstance(remote, RemoteStore)
    info = owner.live_owner(server.run_dir)
    assert info is not None and info.url == server.url and info.pid != os.getpid()
    assert oct(owner.owner_file(server.run_dir).stat().st_mode & 0o777) == "0o600"  # the token is a secret


def test_the_owners_file_cannot_be_opened_directly_while_it_runs(server):
    with pytest.raises(DatabaseLocked, match="opened for writing by another process"):
        LocalStore(server.db_path)


def test_open_store_without_an_owner_opens_the_file(tmp_path):
    store = owner.open_store(tmp_path / "db.duckdb", tmp_path / "run")
    try:
        assert isinstance(store, LocalStore)
    finally:
        store.close()


def test_a_stale_owner_file_is_ignored(tmp_path):
    owner.publish(tmp_path / "run", f"http://127.0.0.1:{free_port()}", "dead-token")  # nobody listens there
    assert owner.live_owner(tmp_path / "run") is None
    store = owner.open_store(tmp_path / "db.duckdb", tmp_path / "run")
    try:
        assert isinstance(store, LocalStore)
    finally:
        store.close()


def test_withdraw_only_removes_our_own_owner_file(tmp_path):
    run = tmp_path / "run"
    owner.publish(run, "http://127.0.0.1:1", "t")
    info = msgspec.json.decode(owner.owner_file(run).read_bytes(), type=owner.OwnerInfo)
    assert info.pid == os.getpid()
    # Another process's file is left alone ...
    owner.owner_file(run).write_bytes(msgspec.json.encode(owner.OwnerInfo(url=info.url, token="t", pid=1)))
    owner.withdraw(run)
    assert owner.owner_file(run).exists()
    # ... ours is removed.
    owner.publish(run, "http://127.0.0.1:1", "t")
    owner.withdraw(run)
    assert not owner.owner_file(run).exists()
    owner.withdraw(run)  # idempotent


# --- typed round trips ------------------------------------------------------------------------


def test_issue_key_round_trips_with_types(server, remote):
    issued = remote.accounts.issue_key("rpc-alice", organization_id="acme", tier="startup", prompt_optimization=True)
    assert isinstance(issued, IssuedKey)
    assert isinstance(issued.info.created_at, datetime) and issued.info.created_at.tzinfo is not None
    assert (issued.user.organization_id, issued.user.tier, issued.user.prompt_optimization) == \
        ("acme", "startup", True)
    assert remote.accounts.user_for_key(hash_key(issued.key)) == issued.user
    keys = remote.accounts.list_keys()
    assert all(isinstance(k, ApiKeyInfo) for k in keys)
    assert issued.info.key_id in {k.key_id for k in keys}
    # The key works against the same API.
    r = httpx.post(server.url + CREATE, json={"name": "via http"}, headers={"Authorization": f"Bearer {issued.key}"})
    assert r.status_code == 200, r.text
    pref = remote.preferences.get("rpc-alice", r.json()["preference_id"])
    assert isinstance(pref, Preference) and pref.name == "via http"


def test_preference_round_trips_and_none_differs_from_unset(remote):
    pref = remote.preferences.create("rpc-bob", "Remote")
    assert isinstance(pref, Preference) and isinstance(pref.created_at, datetime)
    assert remote.preferences.get("rpc-bob", pref.preference_id) == pref
    assert remote.preferences.get("someone-else", pref.preference_id) is None
    set_ = remote.preferences.update("rpc-bob", pref.preference_id,
                                    PreferenceChanges(tradeoff="cost", max_model_depth=2))
    assert isinstance(set_, Preference) and (set_.tradeoff, set_.max_model_depth) == ("cost", 2)
    # An explicit None crosses the wire as a clear; UNSET fields are left alone.
    cleared = remote.preferences.update("rpc-bob", pref.preference_id, changes=PreferenceChanges(tradeoff=None))
    assert (cleared.name, cleared.tradeoff, cleared.max_model_depth) == ("Remote", None, 2)
    assert remote.preferences.update("someone-else", pref.preference_id, PreferenceChanges(name="x")) is None
    assert remote.preferences.delete("rpc-bob", pref.preference_id) == []
    assert remote.preferences.get("rpc-bob", pref.preference_id) is None


def test_job_round_trips(remote):
    job = remote.jobs.create("train-custom-router", "rpc-carol", "pref-x")
    assert isinstance(job, Job) and job.status == "created" and isinstance(job.updated_at, datetime)
    flow_run = str(uuid.uuid4())
    moved = remote.jobs.update(job.job_id, status="processing", flow_run_id=flow_run)
    assert isinstance(moved, Job) and (moved.status, moved.flow_run_id) == ("processing", flow_run)
    assert moved.updated_at >= job.updated_at
    assert job.job_id in {j.job_id for j in remote.jobs.list_open()}
    done = remote.jobs.update(job.job_id, status="completed")
    late = remote.jobs.update(job.job_id, status="failed", error="late", only_if_open=True)
    assert (done.status, late.status, late.error) == ("completed", "completed", None)
    assert remote.jobs.update(str(uuid.uuid4()), status="failed") is None
    assert remote.jobs.get(job.job_id) == late


def test_store_errors_surface_with_the_owners_message(remote):
    with pytest.raises(RemoteStoreError, match="no API key matches 'no-such-key'"):
        remote.accounts.revoke_key("no-such-key")
    with pytest.raises(RemoteStoreError, match="unknown job status 'bogus'"):
        remote.jobs.create("k", "u", None, status="bogus")
    with pytest.raises(RemoteStoreError, match="must not be empty"):
        remote.accounts.issue_key("  ")


def test_a_bad_call_fails_on_the_client_before_any_request(remote):
    with pytest.raises(AttributeError):
        remote._run  # private methods are not exposed
    with pytest.raises(TypeError):
        remote.preferences.create("only-user-id")  # missing argument, caught by the signature


def test_a_wrong_token_is_refused(server):
    intruder = RemoteStore(server.url, "not-the-token", retries=0)
    try:
        with pytest.raises(RemoteStoreError, match="owner token required"):
            intruder.accounts.list_keys()
    finally:
        intruder.close()


def test_an_unreachable_owner_raises_a_transport_error(tmp_path):
    gone = RemoteStore(f"http://127.0.0.1:{free_port()}", "t", timeout=2.0, retries=0)
    try:
        with pytest.raises(httpx.TransportError):
            gone.accounts.list_keys()
    finally:
        gone.close()


def test_revoking_through_the_owner_takes_effect_at_once(server, remote):
    issued = remote.accounts.issue_key("rpc-dave")
    headers = {"Authorization": f"Bearer {issued.key}"}
    assert httpx.post(server.url + CREATE, json={}, headers=headers).status_code == 200  # now cached
    remote.accounts.revoke_key(issued.info.key_prefix)
    r = httpx.post(server.url + CREATE, json={}, headers=headers)
    assert r.status_code == 401 and r.json()["error"]["code"] == "UNAUTHORIZED"


# --- the key test: two writers, no "database is locked" -----------------------------------------

WRITER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from storage.owner import open_store
    from storage.rpc import RemoteStore
    from storage.errors import DatabaseLocked
    from storage.store import LocalStore

    data, m, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    try:
        LocalStore(data / "switchboard.duckdb").close()
        sys.exit("opened the owner's database directly: the one-writer rule is not enforced")
    except DatabaseLocked:
        pass
    store = open_store(data / "switchboard.duckdb", data / "run")
    if not isinstance(store, RemoteStore):
        sys.exit(f"expected a RemoteStore, got {type(store).__name__}")
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("never told to go")
        time.sleep(0.01)
    ids = []
    for i in range(m):
        job = store.jobs.create("optimize-prompt", "flow-user", f"run-{i}")
        job = store.jobs.update(job.job_id, status="processing", flow_run_id=f"fr-{i}")
        ids.append(job.job_id)
    print(json.dumps(ids), flush=True)
""")


def test_api_and_another_process_write_at_the_same_time(fresh_server, tmp_path):
    srv, n_prefs, m_jobs = fresh_server, 60, 60
    remote = owner.open_store(srv.db_path, srv.run_dir)
    assert isinstance(remote, RemoteStore)
    key = remote.accounts.issue_key("api-user").key
    remote.close()

    go = tmp_path / "go"
    writer = subprocess.Popen([PYTHON, "-c", WRITER, str(srv.data_dir), str(m_jobs), str(go)],
                              env=child_env(srv.data_dir), cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()

        def create(i: int) -> tuple[int, str]:
            r = http.post(CREATE, json={"name": f"concurrent {i}"}, headers={"Authorization": f"Bearer {key}"})
            return r.status_code, r.text

        with httpx.Client(base_url=srv.url, timeout=30) as http, ThreadPoolExecutor(8) as pool:
            go.touch()  # both writers start together
            results = list(pool.map(create, range(n_prefs)))
        out, err = writer.communicate(timeout=120)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()

    assert writer.returncode == 0, err
    assert "locked" not in err.lower()
    failures = [(code, text) for code, text in results if code != 200]
    assert failures == []
    pref_ids = {json.loads(text)["preference_id"] for _, text in results}
    job_ids = json.loads(out.strip().splitlines()[-1])
    assert len(pref_ids) == n_prefs and len(set(job_ids)) == m_jobs

    # Every acknowledged write is visible through the owner ...
    check = owner.open_store(srv.db_path, srv.run_dir)
    try:
        assert {p.preference_id for p in check.preferences.for_user("api-user")} == pref_ids
        jobs = [check.jobs.get(j) for j in job_ids]
        assert all(j is not None and j.status == "processing" for j in jobs)
    finally:
        check.close()

    # ... and survives a clean stop: the owner withdraws, closes DuckDB, and a plain Store sees it all.
    assert srv.terminate() == 0
    assert not owner.owner_file(srv.run_dir).exists()
    log = srv.log_text().lower()
    assert "database is locked" not in log and "could not set lock" not in log and "traceback" not in log
    store = LocalStore(srv.db_path)
    try:
        assert store.database.applied_migrations == []
        assert {p.preference_id for p in store.preferences.for_user("api-user")} == pref_ids
        rows = store.database.rows("SELECT job_id, status, flow_run_id FROM jobs WHERE user_id = 'flow-user'")
        assert {r[0] for r in rows} == set(job_ids)
        assert all(r[1] == "processing" and r[2].startswith("fr-") for r in rows)
        assert store.database.rows("SELECT count(*) FROM preferences")[0][0] == n_prefs
    finally:
        store.close()


def test_stopping_the_process_group_like_serve_does_is_clean(fresh_server):
    srv = fresh_server
    remote = owner.open_store(srv.db_path, srv.run_dir)
    pref = remote.preferences.create("grp", "acknowledged")
    remote.close()
    srv.terminate(group=True)
    assert not owner.owner_file(srv.run_dir).exists()
    store = LocalStore(srv.db_path)
    try:
        assert store.preferences.get("grp", pref.preference_id).name == "acknowledged"
    finally:
        store.close()


def test_acknowledged_writes_survive_a_killed_owner(fresh_server):
    """SIGKILL gives the owner no chance to checkpoint: DuckDB's WAL must still hold every acknowledged write."""
    srv = fresh_server
    remote = owner.open_store(srv.db_path, srv.run_dir)
    issued = remote.accounts.issue_key("crash")
    pref = remote.preferences.create("crash", "before the crash")
    remote.close()
    srv.kill()
    # The owner file is left behind, but nobody answers there, so open_store() opens the file itself.
    assert owner.owner_file(srv.run_dir).exists()
    store = owner.open_store(srv.db_path, srv.run_dir)
    try:
        assert isinstance(store, LocalStore)
        assert store.accounts.user_for_key(hash_key(issued.key)).user_id == "crash"
        assert store.preferences.get("crash", pref.preference_id).name == "before the crash"
    finally:
        store.close()


def test_budgets_and_key_management_round_trip_through_the_owner(remote):
    """Issue 34: API workers behind a store owner reserve, settle and read budgets over the RPC, and admins manage
    keys through it; the records keep their types (datetimes, nested refusals)."""
    from storage.budget_records import Spender

    issued = remote.accounts.issue_key("rpc-budget", organization_id="rpc-org")
    who = Spender(issued.info.key_id, "rpc-budget", "rpc-org")
    remote.budgets.set_budget("admin", "rpc-org", "key", who.key_id, "day", 0.5)
    held = remote.budgets.reserve(who, 0.3)
    assert held.reservation_id and held.refused is None
    refused = remote.budgets.reserve(who, 0.3)
    assert refused.refused is not None and refused.refused.resets_at.tzinfo is not None
    remote.budgets.settle(who, held, 0.25)
    [status] = remote.budgets.status(who)
    assert status.spent_usd == pytest.approx(0.25) and status.reserved_usd == pytest.approx(0.0)
    rotated = remote.accounts.rotate_key(who.key_id, 60, actor="admin")
    assert rotated.user.key_id == rotated.info.key_id
    details = {k.key_id: k for k in remote.accounts.key_details("rpc-org")}
    assert details[who.key_id].expires_at is not None and details[who.key_id].spent_today_usd == pytest.approx(0.25)
    assert [e.action for e in remote.accounts.audit("rpc-org")][:2] == ["key.rotate", "budget.set"]
