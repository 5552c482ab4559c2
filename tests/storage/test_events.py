"""Append-only Parquet event logs: part files, atomic writes, compaction and reading them back with DuckDB."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage import events

TODAY = date(2026, 3, 10)


def rows(start: int, count: int, **extra: list) -> pa.Table:
    columns = {"session_id": [f"s{i}" for i in range(start, start + count)],
               "n": list(range(start, start + count))}
    columns.update(extra)
    return pa.table(columns)


def read_all(events_dir: Path, table: str) -> list[tuple]:
    return duckdb.sql(f"SELECT session_id, n FROM read_parquet('{events.glob(events_dir, table)}', "
                      "hive_partitioning = true) ORDER BY n").fetchall()


def leftovers(events_dir: Path) -> list[Path]:
    return [p for p in events_dir.rglob("*") if p.is_file() and (p.name.startswith(".") or p.suffix == ".tmp")]


def test_append_writes_one_part_file_per_call_under_the_day(tmp_path):
    first = events.append(tmp_path, "sessions", rows(0, 3), day=TODAY)
    second = events.append(tmp_path, "sessions", rows(3, 2), day=TODAY)
    assert first != second
    for path in (first, second):
        assert path.parent == tmp_path / "sessions" / f"day={TODAY.isoformat()}"
        assert path.name.startswith("part-") and path.suffix == ".parquet"
    assert events.parts(tmp_path, "sessions") == sorted([first, second])
    assert pq.read_table(first).num_rows == 3 and pq.read_table(second).num_rows == 2
    assert leftovers(tmp_path) == []  # the temporary file was renamed into place


def test_append_defaults_to_the_utc_day(tmp_path):
    from datetime import datetime, timezone

    before = datetime.now(timezone.utc).date()
    path = events.append(tmp_path, "feedback", rows(0, 1))
    after = datetime.now(timezone.utc).date()
    assert path.parent.name in {f"day={before.isoformat()}", f"day={after.isoformat()}"}


def test_an_empty_batch_writes_nothing(tmp_path):
    assert events.append(tmp_path, "sessions", rows(0, 0), day=TODAY) is None
    assert events.parts(tmp_path, "sessions") == []
    assert not (tmp_path / "sessions").exists()


def test_parts_of_an_unknown_table_is_empty(tmp_path):
    assert events.parts(tmp_path, "never_written") == []


@pytest.mark.parametrize("name", ["../escape", "a/b", "x y", "", "sessions;drop"])
def test_bad_table_names_are_refused(tmp_path, name):
    with pytest.raises(ValueError, match="bad event table name"):
        events.append(tmp_path, name, rows(0, 1), day=TODAY)
    assert list(tmp_path.iterdir()) == []


def test_parts_ignores_temporary_and_foreign_files(tmp_path):
    path = events.append(tmp_path, "sessions", rows(0, 2), day=TODAY)
    # A writer that died mid-write leaves only a hidden temporary file; readers must never pick it up.
    (path.parent / ".part-crashed.parquet.tmp").write_bytes(b"half a file")
    (path.parent / "README.txt").write_text("not data")
    assert events.parts(tmp_path, "sessions") == [path]
    assert read_all(tmp_path, "sessions") == [("s0", 0), ("s1", 1)]


def test_a_failed_write_leaves_no_part_file(tmp_path, monkeypatch):
    def broken_write(table, where, **kwargs):
        Path(where).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(events.pq, "write_table", broken_write)
    with pytest.raises(OSError, match="disk full"):
        events.append(tmp_path, "sessions", rows(0, 5), day=TODAY)
    assert events.parts(tmp_path, "sessions") == []  # no half-written part is visible to readers


def test_duckdb_reads_the_glob_with_a_day_column(tmp_path):
    events.append(tmp_path, "sessions", rows(0, 2), day=TODAY - timedelta(days=1))
    events.append(tmp_path, "sessions", rows(2, 3), day=TODAY)
    got = duckdb.sql(f"SELECT CAST(day AS VARCHAR) AS day, count(*) FROM read_parquet("
                     f"'{events.glob(tmp_path, 'sessions')}', hive_partitioning = true) GROUP BY day ORDER BY day"
                     ).fetchall()
    assert got == [((TODAY - timedelta(days=1)).isoformat(), 2), (TODAY.isoformat(), 3)]
    assert read_all(tmp_path, "sessions") == [(f"s{i}", i) for i in range(5)]


def test_compaction_merges_only_days_before_yesterday_and_keeps_every_row(tmp_path):
    old, older, yesterday = TODAY - timedelta(days=2), TODAY - timedelta(days=5), TODAY - timedelta(days=1)
    n = 0
    for day, batches in ((older, 3), (old, 4), (yesterday, 2), (TODAY, 2)):
        for _ in range(batches):
            events.append(tmp_path, "sessions", rows(n, 10), day=day)
            n += 10
    before = read_all(tmp_path, "sessions")
    assert len(before) == n

    removed = events.compact(tmp_path, "sessions", today=TODAY)
    assert removed == 3 + 4

    by_day: dict[str, int] = {}
    for path in events.parts(tmp_path, "sessions"):
        by_day[path.parent.name] = by_day.get(path.parent.name, 0) + 1
    assert by_day == {f"day={older.isoformat()}": 1, f"day={old.isoformat()}": 1,
                      f"day={yesterday.isoformat()}": 2, f"day={TODAY.isoformat()}": 2}
    assert read_all(tmp_path, "sessions") == before  # every row kept, nothing duplicated
    assert leftovers(tmp_path) == []
    # Compacting again finds nothing to do (a single file per finished day).
    assert events.compact(tmp_path, "sessions", today=TODAY) == 0
    assert read_all(tmp_path, "sessions") == before


def test_compaction_merges_parts_whose_schemas_grew(tmp_path):
    day = TODAY - timedelta(days=3)
    events.append(tmp_path, "feedback", rows(0, 2), day=day)
    events.append(tmp_path, "feedback", rows(2, 2, accuracy=[1, 0]), day=day)  # a column added later
    assert events.compact(tmp_path, "feedback", today=TODAY) == 2
    [merged] = events.parts(tmp_path, "feedback")
    table = pq.read_table(merged)
    assert table.num_rows == 4
    assert sorted(table.column("accuracy").to_pylist(), key=lambda v: (v is not None, v)) == [None, None, 0, 1]


def test_compaction_of_a_missing_table_is_a_no_op(tmp_path):
    assert events.compact(tmp_path, "llm_usage", today=TODAY) == 0
