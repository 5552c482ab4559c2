"""EventBuffer: rows encoded on arrival, parsed by Arrow at flush, stored exactly as the schema says."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage import events
from storage.event_buffer import EventBuffer

SCHEMA = pa.schema([
    ("id", pa.string()),
    ("at", pa.timestamp("us", tz="UTC")),
    ("flag", pa.bool_()),
    ("small", pa.int8()),
    ("count", pa.int32()),
    ("scores", pa.list_(pa.float32())),
    ("names", pa.list_(pa.string())),
    ("text", pa.string()),
])


def read_all(events_dir, table="t") -> list[dict]:
    files = events.parts(events_dir, table)
    return pa.concat_tables([pq.read_table(f, schema=SCHEMA) for f in files]).to_pylist()


def test_rows_round_trip_with_their_types(tmp_path):
    at = datetime(2026, 11, 21, 11, 0, 0, 123456, tzinfo=timezone.utc)
    tricky = 'quotes " and \\ backslashes,\nnewlines, émoji 🚀 and {"json": "inside"}'
    buf = EventBuffer(tmp_path, "t", SCHEMA)
    buf.add({"id": "a", "at": at, "flag": True, "small": -3, "count": 70000, "scores": [0.25, 1.0],
             "names": ["x", "y"], "text": tricky})
    buf.add({"id": "b", "at": at, "flag": False, "small": 1, "count": 0, "scores": [], "names": [], "text": None})
    buf.add({"id": "c", "at": at})  # absent columns are stored as nulls
    assert buf.flush() == 3 and buf.pending() == 0
    rows = read_all(tmp_path)
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    assert rows[0] == {"id": "a", "at": at, "flag": True, "small": -3, "count": 70000, "scores": [0.25, 1.0],
                       "names": ["x", "y"], "text": tricky}
    assert rows[1]["scores"] == [] and rows[1]["text"] is None
    assert rows[2]["flag"] is None and rows[2]["scores"] is None


def test_a_row_that_cannot_be_stored_is_refused_when_added_not_at_flush(tmp_path):
    buf = EventBuffer(tmp_path, "t", SCHEMA)
    buf.add({"id": "kept"})
    with pytest.raises(ValueError, match="no column"):
        buf.add({"id": "x", "surprise": 1})
    with pytest.raises(TypeError):
        buf.add({"id": "x", "text": object()})
    assert buf.flush() == 1
    assert [r["id"] for r in read_all(tmp_path)] == ["kept"]


def test_a_failed_flush_keeps_the_rows_for_the_next_attempt(tmp_path):
    blocker = tmp_path / "events"
    blocker.write_text("a file where the log directory should be")
    buf = EventBuffer(blocker, "t", SCHEMA)
    buf.add({"id": "1"})
    with pytest.raises(OSError):
        buf.flush()
    buf.add({"id": "2"})
    assert buf.pending() == 2
    blocker.unlink()
    assert buf.flush() == 2
    assert [r["id"] for r in read_all(blocker)] == ["1", "2"]


def test_close_flushes_what_is_buffered_and_a_large_row_fits(tmp_path):
    buf = EventBuffer(tmp_path, "t", SCHEMA, flush_seconds=3600).start()
    big = "y" * (3 * 1024 * 1024)  # larger than Arrow's default JSON block
    for i in range(1000):
        buf.add({"id": str(i), "count": i})
    buf.add({"id": "big", "text": big})
    buf.close()
    rows = read_all(tmp_path)
    assert len(rows) == 1001 and rows[-1]["text"] == big and rows[999]["count"] == 999
