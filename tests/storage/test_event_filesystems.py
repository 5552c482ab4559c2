"""The event logs go through a pyarrow filesystem (storage/events.py): the same appends, listing, reading and
compaction on a local folder given as a path, the same folder given as a file:// URI, and a filesystem object as an
object store is given (pyarrow's in-memory one standing in for S3: no renames, no fsync)."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from storage import events

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
    # As one would pass S3: a filesystem rooted at the bucket's prefix (here pyarrow's in-memory one).
    return pafs.SubTreeFileSystem("bucket/switchboard/events", pafs._MockFileSystem())


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
