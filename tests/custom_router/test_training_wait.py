"""modelSelect's `Retry-After` while a custom router trains (api/custom_router/training_wait.py): the typical time
from upload to a live router (recent completed trainings of a similar size, storage), less the time since the
upload; never 0 or negative, never more than a minute."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from api.custom_router.training_wait import DEFAULT_EXPECTED_S, MAX_S, retry_after_seconds
from storage.store import LocalStore
from tests.support.envelopes import error
from tests.support.routes import SELECT

PAIR = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]


@pytest.mark.parametrize(("status", "elapsed", "expected", "wait"), [
    ("queued", 0.3, 16.0, 16),        # just uploaded: the whole typical time
    ("created", 0.0, 16.0, 16),
    ("processing", 8.0, 16.0, 8),     # half way
    ("processing", 15.6, 16.0, 1),    # nearly done: small, never 0
    ("processing", 40.0, 16.0, 2),    # later than usual while running: a tenth of the typical time
    ("queued", 40.0, 16.0, 6),        # later than usual, not started (another run goes first): a third
    ("queued", 15.9, 16.0, 2),        # a run that has not started asks again no sooner than 2 s
    ("queued", -5.0, 16.0, 16),       # a clock behind the store's: as if just uploaded
    ("queued", 0.0, None, int(DEFAULT_EXPECTED_S)),    # no completed training yet
    ("queued", 0.0, 0.0, int(DEFAULT_EXPECTED_S)),     # a nonsense history falls back too
    ("queued", 0.0, 3_600.0, MAX_S),  # an hour-long training is asked about once a minute
])
def test_the_wait_follows_the_job(status, elapsed, expected, wait):
    assert retry_after_seconds(status, elapsed, expected) == wait


def test_the_wait_is_always_a_sensible_whole_number_of_seconds():
    for status in ("created", "queued", "processing"):
        for expected in (None, 0.5, 3.0, 16.0, 45.0, 600.0, 1e9):
            for elapsed in (-1e6, -1.0, 0.0, 0.4, 1.0, 9.99, 15.0, 16.0, 59.0, 3_600.0, 1e9):
                wait = retry_after_seconds(status, elapsed, expected)
                assert isinstance(wait, int) and 1 <= wait <= MAX_S, (status, elapsed, expected, wait)


def _complete(store: LocalStore, job_id: str, seconds: float, ended_ago: float = 60.0) -> None:
    """A training that completed `ended_ago` seconds ago, `seconds` after its upload."""
    ended = datetime.now(timezone.utc) - timedelta(seconds=ended_ago)
    store.database.run("UPDATE jobs SET status = 'completed', created_at = ?, updated_at = ? WHERE job_id = ?",
                       [ended - timedelta(seconds=seconds), ended, job_id])


def _training(store: LocalStore, rows: int, user: str = "u") -> str:
    pid = store.preferences.create(user, "p").preference_id
    return store.routers.start_training(user, pid, "/data/x.parquet", "english", True, "[]", rows).job.job_id


def test_the_typical_time_comes_from_completed_trainings_of_a_similar_size(tmp_path):
    store = LocalStore(tmp_path / "db.duckdb")
    try:
        job = _training(store, 1_000)
        assert store.routers.expected_training_seconds(job) is None  # nothing completed yet
        assert store.routers.expected_training_seconds("no-such-job") is None
        for rows, seconds in ((60, 12.0), (80, 14.0), (900, 30.0), (1_200, 40.0), (1_500, 44.0), (50_000, 600.0)):
            _complete(store, _training(store, rows), seconds)
        assert store.routers.expected_training_seconds(job) == 40.0  # 900, 1,200 and 1,500 rows: median 40 s
        small = _training(store, 70)
        assert store.routers.expected_training_seconds(small) == 13.0  # 60 and 80 rows
        odd = _training(store, 10_000)  # nothing within a factor of 2: every recent training
        assert store.routers.expected_training_seconds(odd) == 35.0
        store.jobs.update(odd, status="failed", error="x")  # only completed trainings count
        assert store.routers.expected_training_seconds(small) == 13.0
    finally:
        store.close()


def _select(client, headers, preference_id):
    return client.post(SELECT, headers=headers, json={"messages": "What is 12 * 7?", "llm_providers": PAIR,
                                                     "preference_id": preference_id})


def test_model_select_tells_how_long_the_training_it_waits_for_usually_takes(client, auth, upload):
    store = client.app.state.services.store
    for seconds in (15.0, 16.0, 17.0):  # earlier trainings of a similar size (the upload fixture sends 60 rows)
        _complete(store, _training(store, 60, user="earlier"), seconds)
    h = auth()
    started = time.monotonic()
    pid = upload(h).json()["preference_id"]
    r = _select(client, h, pid)
    waited = time.monotonic() - started  # an upper bound on the job's age when modelSelect answered
    body = error(r, 409, "ROUTER_TRAINING_IN_PROGRESS")
    queued = int(r.headers["retry-after"])
    assert 16 - waited - 1 <= queued <= 16
    assert body["details"] == {"preference_id": pid, "job_status": "queued", "retry_after_seconds": queued}
    assert f"retry in {queued} seconds" in body["message"]

    job = store.routers.state(pid).job
    for age, status, low, high in ((8.0, "processing", 7, 8), (15.6, "processing", 1, 1), (40.0, "processing", 2, 2),
                                   (40.0, "queued", 6, 6)):
        uploaded = datetime.now(timezone.utc) - timedelta(seconds=age)
        store.database.run("UPDATE jobs SET created_at = ? WHERE job_id = ?", [uploaded, job.job_id])
        store.jobs.update(job.job_id, status=status)  # notifies: the registry re-reads the job
        r = _select(client, h, pid)
        error(r, 409, "ROUTER_TRAINING_IN_PROGRESS")
        assert low <= int(r.headers["retry-after"]) <= high, (age, status, r.headers["retry-after"])
