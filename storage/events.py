"""Append-only Parquet event logs: <events>/<table>/day=YYYY-MM-DD/part-*.parquet.

Writers never share a file (one file per flush, named by time, pid and a random suffix), so any number of
processes can append without locks, and analysts can read the logs while the service runs. Housekeeping
compacts finished days into one file.

Every read and write goes through a pyarrow filesystem (`location`): the events folder is a local path (the data
dir's events/), or a URI pyarrow resolves, such as s3://bucket/prefix (credentials and region from the AWS_*
variables, AWS_ENDPOINT_URL for an S3-compatible store), gs://bucket/prefix or abfs://container@account/prefix.
On a local disk a part is written under a dot-name, fsynced and renamed into place; on object storage a PUT
appears whole or not at all. Results name files as a local Path, or as a URI on object storage.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TypeAlias

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

# A local folder, a URI (s3://..., gs://..., file:///...), or a pyarrow filesystem rooted at the events folder
# (e.g. SubTreeFileSystem("bucket/prefix", S3FileSystem(...)) for settings a URI cannot carry).
EventsDir: TypeAlias = "Path | str | pafs.FileSystem"


def location(events_dir: EventsDir) -> tuple[pafs.FileSystem, str, str]:
    """(filesystem, root inside it, prefix that turns a path inside it back into what callers pass around)."""
    if isinstance(events_dir, pafs.FileSystem):
        return events_dir, "", ""
    text = str(events_dir)
    if isinstance(events_dir, str) and "://" in text:
        fs, root = pafs.FileSystem.from_uri(text)
        scheme = text.split("://", 1)[0]
        return fs, root.rstrip("/"), "" if isinstance(fs, pafs.LocalFileSystem) else f"{scheme}://"
    return pafs.LocalFileSystem(), str(Path(text).absolute()), ""


def _named(fs: pafs.FileSystem, prefix: str, path: str) -> Path | str:
    return Path(path) if isinstance(fs, pafs.LocalFileSystem) else prefix + path


def _table_root(events_dir: EventsDir, table: str) -> tuple[pafs.FileSystem, str, str]:
    if not table.replace("_", "").isalnum():
        raise ValueError(f"bad event table name {table!r}")
    fs, root, prefix = location(events_dir)
    return fs, f"{root}/{table}" if root else table, prefix


def append(events_dir: EventsDir, table: str, rows: pa.Table, day: date | None = None) -> Path | str | None:
    """Write rows as a new part file; durable (fsynced, or stored by the object store) when this returns."""
    if rows.num_rows == 0:
        return None
    fs, root, prefix = _table_root(events_dir, table)
    day = day or datetime.now(timezone.utc).date()
    folder = f"{root}/day={day.isoformat()}"
    fs.create_dir(folder, recursive=True)
    name = f"part-{time.time_ns()}-{os.getpid()}-{secrets.token_hex(3)}.parquet"
    final = f"{folder}/{name}"
    if not isinstance(fs, pafs.LocalFileSystem):
        pq.write_table(rows, final, filesystem=fs, compression="zstd")
        return _named(fs, prefix, final)
    tmp = f"{folder}/.{name}.tmp"
    try:
        pq.write_table(rows, tmp, filesystem=fs, compression="zstd")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        fs.move(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)  # readers ignore dot-files, but a full disk should not keep filling up
        raise
    return Path(final)


def _listing(fs: pafs.FileSystem, folder: str, recursive: bool) -> list[pafs.FileInfo]:
    return fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True, recursive=recursive))


def _is_part(info: pafs.FileInfo) -> bool:
    return (info.type == pafs.FileType.File and info.base_name.startswith("part-")
            and info.base_name.endswith(".parquet") and info.path.rsplit("/", 2)[-2].startswith("day="))


def parts(events_dir: EventsDir, table: str, days: Iterable[date] | None = None) -> list[Path | str]:
    """The table's part files (only those of the given days' folders, when given)."""
    fs, root, prefix = _table_root(events_dir, table)
    if days is None:
        found = _listing(fs, root, recursive=True)
    else:
        found = [i for day in days for i in _listing(fs, f"{root}/day={day.isoformat()}", recursive=False)]
    return sorted(_named(fs, prefix, i.path) for i in found if _is_part(i))  # type: ignore[type-var]


def _inside(prefix: str, file: Path | str) -> str:
    return str(file).removeprefix(prefix) if prefix else str(file)


def read(events_dir: EventsDir, files: list[Path | str], schema: pa.Schema | None = None) -> list[pa.Table]:
    """The given part files (as `parts` named them), each as a table (with `schema`'s columns, when given)."""
    fs, _, prefix = location(events_dir)
    return [pq.read_table(_inside(prefix, f), filesystem=fs, schema=schema) for f in files]


DAY = pa.field("day", pa.date32())


def dataset(events_dir: EventsDir, table: str, schema: pa.Schema) -> ds.Dataset:
    """Every part file of the table as one dataset read through its filesystem: `schema`'s columns (a part written
    before a column was added reads it as nulls) and `day` from the folder name. A filter on a column skips the row
    groups whose statistics exclude it. The part files are those listed now: a dataset never sees later flushes."""
    fs, root, prefix = _table_root(events_dir, table)
    files = [_inside(prefix, f) for f in parts(events_dir, table)]
    return ds.dataset(files, schema=schema.append(DAY), filesystem=fs, format="parquet",
                      partitioning=ds.partitioning(pa.schema([DAY]), flavor="hive"), partition_base_dir=root)


def glob(events_dir: Path, table: str) -> str:
    """A read_parquet() pattern for DuckDB over a local events folder (hive partitioning gives a `day` column):
    unlike `dataset`, DuckDB lists the files again at every query."""
    _table_root(events_dir, table)  # checks the name
    return str(Path(events_dir) / table / "day=*" / "*.parquet")


def compact(events_dir: EventsDir, table: str, today: date | None = None, min_files: int = 2) -> int:
    """Merge the part files of days before yesterday (no writer touches them any more) into one file per
    day. Returns the number of files removed."""
    today = today or datetime.now(timezone.utc).date()
    fs, root, _ = _table_root(events_dir, table)
    removed = 0
    days = sorted(i.path for i in _listing(fs, root, recursive=False)
                  if i.type == pafs.FileType.Directory and i.base_name.startswith("day="))
    for folder in days:
        day = date.fromisoformat(folder.rsplit("/", 1)[-1].removeprefix("day="))
        files = sorted(i.path for i in _listing(fs, folder, recursive=False) if _is_part(i))
        if day >= today - timedelta(days=1) or len(files) < min_files:
            continue
        merged = pa.concat_tables([pq.read_table(f, filesystem=fs) for f in files], promote_options="default")
        append(events_dir, table, merged, day=day)
        for f in files:
            fs.delete_file(f)
        removed += len(files)
    return removed
