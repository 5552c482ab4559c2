"""The event logs go through a pyarrow filesystem (storage/events.py): the same appends, listing, reading,
compaction and dead letters, and the readers of the logs, on a local folder given as a path, the same folder given as
a file:// URI, and a filesystem object as an object store is given (fsspec's in-memory filesystem behind pyarrow's
PyFileSystem standing in for S3: not local, no renames, no fsync, no network)."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import fsspec
import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from pyarrow.fs import FSSpecHandler

from api.prompt_optimization.usage_log import run_usage
from api.selection.sessions import SessionLog, new_session_id
from storage import analytics, events
from storage.event_buffer import EventBuffer
from storage.event_schemas import USAGE_SCHEMA

TODAY = date(2026, 3, 10)


def rows(start: int, count: int) -> pa.Table:
    return pa.table({"session_id": [f"s{i}" for i in range(start, start + count)],
                     "n": list(range(start, start + count))})


@pytest.fixture(params=["path", "file-uri", "object-store"])
def events_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str | pafs.FileSystem:
    if request.param == "path":
        return tmp_path / "events"
    if request.param == "file-uri":
        return f"file://{tmp_path}/events"
    return object_store(f"/bucket-{uuid.uuid4().hex}/switchboard/events")  # fsspec names memory paths from /


def object_store(root: str, handler: type[FSSpecHandler] = FSSpecHandler) -> pafs.FileSystem:
    """As one would pass S3: a filesystem rooted at the bucket's prefix. fsspec's memory filesystem is one store per
    process, hence a bucket of its own per test."""
    return pafs.SubTreeFileSystem(root, pafs.PyFileSystem(handler(fsspec.filesystem("memory"))))


def test_appended_parts_are_listed_and_read_back(events_dir):
    first = events.append(events_dir, "sessions", rows(0, 3), day=TODAY)
    second = events.append(events_dir, "sessions", rows(3, 2), day=TODAY)
    listed = events.parts(events_dir, "sessions")
    assert listed == sorted([first, second]) and len(set(listed)) == 2
    if isinstance(events_dir, pafs.FileSystem):  # named inside the bucket's prefix; nothing touched the disk
        assert all(str(p).startswith("sessions/day=2026-03-10/part-") for p in listed)
    read = pa.concat_tables(events.read(events_dir, listed))
    assert sorted(read.column("n").to_pylist()) == [0, 1, 2, 3, 4]
    assert events.parts(events_dir, "feedback") == []


def test_compaction_merges_finished_days_on_any_filesystem(events_dir):
    old = TODAY - timedelta(days=3)
    for start in (0, 2, 4):
        events.append(events_dir, "feedback", rows(start, 2), day=old)
    events.append(events_dir, "feedback", rows(6, 1), day=TODAY)
    assert events.compact(events_dir, "feedback", today=TODAY) == 3
    listed = events.parts(events_dir, "feedback")
    assert len(listed) == 2  # one merged file for the old day, today's untouched
    merged = [t for t in events.read(events_dir, listed) if t.num_rows == 6]
    assert len(merged) == 1 and sorted(merged[0].column("n").to_pylist()) == list(range(6))


def test_readers_count_each_row_once_at_every_step_of_a_compaction(events_dir, tmp_path):
    """A reader that lists while housekeeping compacts a day (the merged file written, its parts being deleted one
    by one) reads every row once: checked before each deletion, through the pyarrow readers and, on a local
    folder, through the analysts' DuckDB view, which lists the folder again at each query."""
    old, checked = TODAY - timedelta(days=3), []
    for start in (0, 2, 4):
        events.append(events_dir, "feedback", rows(start, 2), day=old)
    events.append(events_dir, "feedback", rows(6, 1), day=TODAY)
    local = not isinstance(events_dir, pafs.FileSystem)

    def readers_see_every_row_once() -> None:
        ns = [pa.concat_tables(events.read(events_dir, events.parts(events_dir, "feedback"))).column("n"),
              events.dataset(events_dir, "feedback", pa.schema([("n", pa.int64())])).to_table().column("n")]
        if local:
            folder = Path(events.location(events_dir)[1])
            ns.append(pa.chunked_array([[r[0] for r in duckdb.sql(
                f"SELECT n FROM ({events.duckdb_scan(folder, 'feedback')})").fetchall()]], pa.int64()))
        for n in ns:
            assert sorted(n.to_pylist()) == list(range(7))
        checked.append(len(ns))

    class Watched(FSSpecHandler):
        def delete_file(self, path: str) -> None:
            readers_see_every_row_once()
            super().delete_file(path)

    # The same folder or bucket, its deletions watched.
    compactor = (pafs.SubTreeFileSystem(events.location(events_dir)[1], pafs.PyFileSystem(Watched(
        fsspec.filesystem("file")))) if local else object_store(events_dir.base_path, Watched))
    assert events.compact(compactor, "feedback", today=TODAY) == 3
    assert len(checked) == 3  # after the merged file appeared, and after each of the first two deletions
    readers_see_every_row_once()
    # A compaction that died before its deletions left parts that readers ignore; the next run removes them.
    events.append(events_dir, "feedback", rows(7, 1), day=old - timedelta(days=1))
    events.append(events_dir, "feedback", rows(8, 1), day=old - timedelta(days=1))
    assert events.compact(events_dir, "feedback", today=TODAY) == 2
    assert len(events.parts(events_dir, "feedback")) == 3 and events.compact(events_dir, "feedback", today=TODAY) == 0


def test_rows_that_do_not_fit_are_set_aside_in_new_files_on_any_filesystem(events_dir):
    buf = EventBuffer(events_dir, "llm_usage", USAGE_SCHEMA)
    for batch in (["a", "b"], ["c"]):
        for record_id in batch:  # text where the schema wants a number of tokens does not fit
            buf.add(usage(record_id, "run", 1.0) | {"input_tokens": "many"})
        buf.add(usage(f"ok-{batch[0]}", "run", 1.0))
        assert buf.flush() == 1
    assert [d["row"]["id"] for d in buf.dead_letters()] == ["a", "b", "c"]
    assert [r["id"] for r in run_usage(events_dir, "run")] == ["ok-a", "ok-c"]


def test_the_events_uri_setting_moves_the_logs(monkeypatch, tmp_path):
    from api.settings import get_settings, reset_settings

    monkeypatch.setenv("SWITCHBOARD_EVENTS_URI", f"file://{tmp_path}/elsewhere")
    reset_settings()
    try:
        assert get_settings().events_dir == f"file://{tmp_path}/elsewhere"
        events.append(get_settings().events_dir, "llm_usage",
                      pa.Table.from_pylist([usage("x", "run", 1.0)], schema=USAGE_SCHEMA))
        assert len(list((tmp_path / "elsewhere" / "llm_usage").rglob("part-*.parquet"))) == 1
        with analytics.connect(tmp_path / "data") as conn:  # the analysts' default follows the setting
            assert conn.execute("SELECT count(*) FROM events_llm_usage").fetchone() == (1,)
        monkeypatch.setenv("SWITCHBOARD_EVENTS_URI", "my-bucket/events")
        reset_settings()
        with pytest.raises(SystemExit, match="must be a URI"):
            get_settings()
    finally:
        monkeypatch.delenv("SWITCHBOARD_EVENTS_URI")
        reset_settings()


# The readers of the logs (session lookups, feedback following, a run's usage, the analysts' views) on each of them.

def session(session_id: str, user: str = "u") -> dict:
    return {"session_id": session_id, "created_at": datetime.now(timezone.utc), "user_id": user,
            "organization_id": user, "preference_id": "p", "hashed": False, "content": "[]", "content_hash": "h",
            "eligible": ["openai/gpt-4o"], "predicted_quality": [0.5], "chosen": "openai/gpt-4o",
            "chosen_label_provider": "openai", "chosen_label_model": "gpt-4o"}


def feedback(session_id: str) -> dict:
    return {"feedback_id": f"f-{session_id}", "created_at": datetime.now(timezone.utc), "session_id": session_id,
            "user_id": "u", "model": "openai/gpt-4o", "accuracy": 1, "embedding": [1.0, 0.0]}


def test_session_lookup_and_feedback_following_read_through_the_filesystem(events_dir):
    writer, reader = SessionLog(events_dir, flush_seconds=60), SessionLog(events_dir, flush_seconds=60)
    ids = [new_session_id() for _ in range(3)]
    for sid in ids:
        writer.record(session(sid))
        writer.record_feedback(feedback(sid))
    writer.sessions.flush()
    writer.feedback.flush()
    found = reader.find(ids[1])  # not in the reader's memory: read from the log
    assert found["session_id"] == ids[1] and found["user_id"] == "u" and found["eligible"] == ["openai/gpt-4o"]
    assert found["exploration_rate"] is None  # a column the row did not set reads as null
    assert reader.find(str(uuid.uuid4())) is None  # not a time-ordered id: no wait for a flush
    assert reader.new_feedback().column("session_id").to_pylist() == ids
    assert reader.new_feedback().num_rows == 0  # each file once
    writer.record_feedback(feedback("later"))
    writer.feedback.flush()
    assert reader.new_feedback().column("session_id").to_pylist() == ["later"]
    assert reader.all_feedback().num_rows == 4


def usage(record_id: str, run_id: str, at: float) -> dict:
    return {"id": record_id, "user_id": "u", "adaptation_run_id": run_id, "provider": "openai", "model": "gpt-4o",
            "input_tokens": 10, "output_tokens": 2, "total_cost": 0.5, "timestamp": at, "role": "target"}


def test_a_runs_usage_reads_through_the_filesystem(events_dir):
    events.append(events_dir, "llm_usage", pa.Table.from_pylist(
        [usage("b", "run1", 2.0), usage("x", "run2", 1.0), usage("a", "run1", 2.0)], schema=USAGE_SCHEMA))
    events.append(events_dir, "llm_usage", pa.Table.from_pylist([usage("c", "run1", 1.0)], schema=USAGE_SCHEMA))
    rows = run_usage(events_dir, "run1")
    assert [r["id"] for r in rows] == ["c", "a", "b"]  # by timestamp, then id
    assert rows[0]["role"] == "target" and rows[0]["latency_s"] is None and "day" not in rows[0]
    assert run_usage(events_dir, "nothing") == []


def test_the_analysts_views_read_the_logs_through_the_filesystem(events_dir, tmp_path):
    writer = SessionLog(events_dir, flush_seconds=60)
    for sid in (new_session_id(), new_session_id()):
        writer.record(session(sid, user="analyst"))
    writer.sessions.flush()
    with analytics.connect(tmp_path / "data", events_dir=events_dir) as conn:
        assert conn.execute("SELECT count(*), min(user_id), count(DISTINCT day) FROM events_sessions"
                            ).fetchone() == (2, "analyst", 1)
        assert conn.execute("SELECT count(*) FROM events_feedback").fetchone() == (0,)
