"""The API on PostgreSQL (SWITCHBOARD_DATABASE_URL): no store owner, another process's writes reach it through
LISTEN/NOTIFY (a revoked key stops working without waiting for the auth cache), a lost listening connection comes
back with a full reload, a database that stops answering is a clear 503 the client may retry, and analysts read
the catalogue from it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from litestar.testing import TestClient

from api.settings import reset_settings
from storage.postgres_store import PostgresStore
from storage.records import PreferenceChanges

DEADLINE_S = 10.0  # generous: the assertion is that the change arrives at all, not how fast (benchmarks measure it)


@pytest.fixture
def pg_client(data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", postgres_url)
    monkeypatch.setenv("SWITCHBOARD_AUTH_CACHE_SECONDS", "3600")  # only the change feed can drop a cached key
    reset_settings()
    from api.app import create_app

    with TestClient(create_app(publish_owner=False), raise_server_exceptions=False) as client:
        yield client
    reset_settings()


@pytest.fixture
def other_process(postgres_url: str, data_dir: Path) -> Iterator[PostgresStore]:
    """What a CLI call or another API worker holds: its own connection to the same database."""
    store = PostgresStore(postgres_url, data_dir)
    yield store
    store.close()


def eventually(check, deadline_s: float = DEADLINE_S) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_the_api_runs_on_postgres_without_an_owner(pg_client, other_process, data_dir):
    services = pg_client.app.state.services
    assert isinstance(services.store, PostgresStore) and not services.store.owns_file
    assert not (data_dir / "switchboard.duckdb").exists()
    key = other_process.accounts.issue_key("alice").key
    headers = {"Authorization": f"Bearer {key}"}
    created = pg_client.post("/v2/preferences/userPreferenceCreate", json={"name": "p"}, headers=headers)
    assert created.status_code == 200, created.text
    pid = created.json()["preference_id"]
    assert other_process.preferences.get("alice", pid).name == "p"  # written to PostgreSQL, seen by the other
    assert pg_client.get("/internal/changes").status_code == 404  # no process serves the owner routes


def test_a_key_revoked_elsewhere_stops_working(pg_client, other_process):
    issued = other_process.accounts.issue_key("alice")
    headers = {"Authorization": f"Bearer {issued.key}"}
    ok = pg_client.post("/v2/preferences/userPreferenceCreate", json={}, headers=headers)
    assert ok.status_code == 200, ok.text  # now cached for an hour by this worker
    other_process.accounts.revoke_key(issued.info.key_id)
    assert eventually(lambda: pg_client.post("/v2/preferences/userPreferenceCreate", json={},
                                             headers=headers).status_code == 401)


def test_a_database_that_stops_answering_is_a_503_with_retry_after(pg_client, other_process, postgres_url):
    issued = other_process.accounts.issue_key("alice")
    headers = {"Authorization": f"Bearer {issued.key}"}
    assert pg_client.post("/v2/preferences/userPreferenceCreate", json={}, headers=headers).status_code == 200
    from tests.support.postgres import drop_database

    drop_database(postgres_url)  # terminates every connection to it: what a server going away looks like here
    response = pg_client.post("/v2/preferences/userPreferenceCreate", json={}, headers=headers)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    assert "database is unavailable" in response.json()["error"]["message"]
    assert "postgres" not in response.text.lower()  # no server detail leaks


def test_analysts_read_the_catalogue_from_postgres(other_process, postgres_url, data_dir, monkeypatch):
    pref = other_process.preferences.create("alice", "from postgres")
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", postgres_url)
    from storage import analytics

    conn = analytics.connect(data_dir)
    try:
        rows = conn.execute("SELECT preference_id, name FROM store.preferences").fetchall()
    finally:
        conn.close()
    assert rows == [(pref.preference_id, "from postgres")]


def test_a_lost_listening_connection_reconnects_and_reloads_everything(postgres_url, data_dir, other_process):
    worker = PostgresStore(postgres_url, data_dir)
    heard: list[str] = []
    reloads: list[int] = []
    try:
        worker.subscribe(heard.append, lambda: reloads.append(1))
        # What a PostgreSQL restart or a network cut does to the worker's LISTEN connection.
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                   " WHERE datname = current_database() AND query LIKE 'LISTEN%'").fetchall()
        assert killed == [(True,)]
        assert eventually(lambda: reloads == [1])  # notifications sent meanwhile are lost: a full reload
        pref = other_process.preferences.create("alice", "after the cut")
        other_process.preferences.update("alice", pref.preference_id, PreferenceChanges(name="renamed"))
        assert eventually(lambda: pref.preference_id in heard)  # and it listens again
    finally:
        worker.close()


def test_after_its_connections_are_cut_the_api_recovers_without_a_restart(pg_client, other_process, postgres_url):
    issued = other_process.accounts.issue_key("alice")
    headers = {"Authorization": f"Bearer {issued.key}"}
    create = "/v2/preferences/userPreferenceCreate"
    assert pg_client.post(create, json={}, headers=headers).status_code == 200
    # What a PostgreSQL restart does to every open connection; the pools notice and reconnect by themselves.
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                      " WHERE datname = current_database() AND pid <> pg_backend_pid()")
    answers: list[int] = []

    def served() -> bool:
        answers.append(pg_client.post(create, json={"name": "after"}, headers=headers).status_code)
        return answers[-1] == 200

    assert eventually(served)
    assert set(answers) <= {200, 503}  # a request on a cut connection fails clearly, never as a 500
