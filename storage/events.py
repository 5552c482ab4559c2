"""Append-only Parquet event logs: events/<table>/day=YYYY-MM-DD/part-*.parquet.

Writers never share a file (one file per flush, named by time, pid and a random suffix), so any number of
processes can append without locks, and analysts can read the logs while the service runs. Housekeeping
compacts finished days into one file.
"""

from __future__ import annotations

import os
import secrets
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def table_dir(events_dir: Path, table: str) -> Path:
    if not table.replace("_", "").isalnum():
        raise ValueError(f"bad event table name {table!r}")
    return events_dir / table


def append(events_dir: Path, table: str, rows: pa.Table, day: date | None = None) -> Path | None:
    """Write rows as a new part file; durable (fsynced) when this returns."""
    if rows.num_rows == 0:
        return None
    day = day or datetime.now(timezone.utc).date()
    folder = table_dir(events_dir, table) / f"day={day.isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"part-{time.time_ns()}-{os.getpid()}-{secrets.token_hex(3)}.parquet"
    tmp = folder / f".{name}.tmp"
    try:
        pq.write_table(rows, tmp, compression="zstd")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        final = folder / name
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)  # readers ignore dot-files, but a full disk should not keep filling up
        raise
    return final


def parts(events_dir: Path, table: str) -> list[Path]:
    root = table_dir(events_dir, table)
    return sorted(root.glob("day=*/part-*.parquet")) if root.exists() else []


def glob(events_dir: Path, table: str) -> str:
    """A read_parquet() pattern for DuckDB (hive partitioning gives a `day` column)."""
    return str(table_dir(events_dir, table) / "day=*" / "*.parquet")


def compact(events_dir: Path, table: str, today: date | None = None, min_files: int = 2) -> int:
    """Merge the part files of days before yesterday (no writer touches them any more) into one file per
    day. Returns the number of files removed."""
    today = today or datetime.now(timezone.utc).date()
    root = table_dir(events_dir, table)
    removed = 0
    for folder in sorted(root.glob("day=*")) if root.exists() else []:
        day = date.fromisoformat(folder.name.removeprefix("day="))
        files = sorted(folder.glob("part-*.parquet"))
        if day >= today - timedelta(days=1) or len(files) < min_files:
            continue
        merged = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
        append(events_dir, table, merged, day=day)
        for f in files:
            f.unlink()
        removed += len(files)
    return removed
