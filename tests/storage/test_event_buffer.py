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


def test_a_row_that_does_not_fit_is_set_aside_and_the_others_are_written(tmp_path):
    buf = EventBuffer(tmp_path, "t", SCHEMA)
    buf.add({"id": "before", "count": 1})
    buf.add({"id": "poison", "count": 2**31})  # encodes as JSON, but no int32 column holds it
    buf.add({"id": "after", "count": 3})
    assert buf.flush() == 2 and buf.pending() == 0
    assert [r["id"] for r in read_all(tmp_path)] == ["before", "after"]
    letters = buf.dead_letters()
    assert [(d["row"]["id"], d["table"]) for d in letters] == [("poison", "t")]
    assert "int32" in letters[0]["error"]
    buf.add({"id": "later", "count": 4})  # the log keeps working
    buf.add({"id": "poison-2", "count": -2**31 - 1})
    assert buf.flush() == 1
    # Each flush sets its rows aside in a new file (object stores cannot append); both are read back in order.
    assert len(list((tmp_path / "_dead_letter" / "t").glob("dead-*.jsonl"))) == 2
    assert [d["row"]["id"] for d in buf.dead_letters()] == ["poison", "poison-2"]


def test_rows_kept_through_a_write_outage_are_bounded(tmp_path, monkeypatch):
    buf = EventBuffer(tmp_path, "t", SCHEMA, max_pending_bytes=200)
    monkeypatch.setattr(events, "append", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left")))
    for i in range(20):
        buf.add({"id": f"row-{i:02d}", "text": "x" * 20})
        with pytest.raises(OSError):
            buf.flush()
    assert 0 < buf.pending() < 20 and buf.dropped == 20 - buf.pending()
    monkeypatch.undo()
    buf.flush()
    assert [r["id"] for r in read_all(tmp_path)][-1] == "row-19"  # the newest rows are the ones kept


def test_close_does_not_raise_when_the_last_write_fails(tmp_path, monkeypatch):
    buf = EventBuffer(tmp_path, "t", SCHEMA)
    buf.add({"id": "a"})
    monkeypatch.setattr(events, "append", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left")))
    buf.close()  # logged, not raised: whoever closes several buffers closes them all
    assert buf.pending() == 1


def test_text_columns_kept_aside_round_trip_and_reach_dead_letters(tmp_path):
    at = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
    tricky = 'quotes " and \\ backslashes,\nnewlines, émoji 🚀 and {"json": "inside"}'
    buf = EventBuffer(tmp_path, "t", SCHEMA, text_columns=("text",))
    buf.add({"id": "a", "at": at, "scores": [0.5], "text": tricky})
    buf.add({"id": "b", "text": None})
    buf.add({"id": "c"})  # absent: null
    buf.add({"id": "poison", "count": 2**31, "text": "kept with its row"})
    with pytest.raises(TypeError, match="str or None"):
        buf.add({"id": "x", "text": 5})
    with pytest.raises(UnicodeEncodeError):
        buf.add({"id": "x", "text": "lone \ud800 surrogate"})
    assert buf.flush() == 3
    rows = read_all(tmp_path)
    assert [(r["id"], r["text"]) for r in rows] == [("a", tricky), ("b", None), ("c", None)]
    assert rows[0]["at"] == at and rows[0]["scores"] == [0.5]
    assert [(d["row"]["id"], d["row"]["text"]) for d in buf.dead_letters()] == [("poison", "kept with its row")]
    file = events.parts(tmp_path, "t")[0]
    encodings = pq.ParquetFile(file).metadata.row_group(0).column(SCHEMA.names.index("text")).encodings
    assert not any("DICTIONARY" in e for e in encodings)  # free text is written plain


def test_text_columns_survive_a_write_outage(tmp_path, monkeypatch):
    buf = EventBuffer(tmp_path, "t", SCHEMA, text_columns=("text",))
    monkeypatch.setattr(events, "append", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left")))
    buf.add({"id": "1", "text": "first"})
    with pytest.raises(OSError):
        buf.flush()
    monkeypatch.undo()
    buf.add({"id": "2", "text": "second"})
    assert buf.flush() == 2
    assert [(r["id"], r["text"]) for r in read_all(tmp_path)] == [("1", "first"), ("2", "second")]


def test_only_string_columns_can_be_text_columns(tmp_path):
    with pytest.raises(ValueError, match="string columns"):
        EventBuffer(tmp_path, "t", SCHEMA, text_columns=("count",))
    with pytest.raises(ValueError, match="string columns"):
        EventBuffer(tmp_path, "t", SCHEMA, text_columns=("missing",))
