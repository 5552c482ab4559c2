"""Append-only Parquet event logs: <events>/<table>/day=YYYY-MM-DD/part-*.parquet.

Writers never share a file (one file per flush, named by time, pid and a random suffix), so any number of
processes can append without locks, and analysts can read the logs while the service runs. Housekeeping
compacts finished days into one file.

Every read and write goes through a pyarrow filesystem (`location`): the events folder is a local path (the data
dir's events/), or a URI pyarrow resolves, such as s3://bucket/prefix (credentials and region from the AWS_*
variables, AWS_ENDPOINT_URL for an S3-compatible store), gs://bucket/prefix or abfs://container@account/prefix.
On a local disk a part is written under a dot-name, fsynced and renamed into place; on object storage a PUT
appears whole or not at all. Results name files as a local Path, or as a URI on object storage.

Compaction cannot swap a day's parts for the merged file in one step (object stores have no rename, and a listing
is not a snapshot), so readers follow one rule instead: a day folder holding merged files (`part-merged-*`) is read
from its newest merged file alone, which holds every row of the files listed beside it. A reader that lists while
the merged file is written sees only the parts; one that lists while they are deleted sees the merged file and
ignores what is left of them; merged names sort after every plain part, so even a listing paged across the
compaction reads each row once. Nobody writes into a finished day (writers use the current UTC day; compaction
takes days before yesterday), so no plain part is newer than a day's merged file.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterable
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
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
        fs, root = _from_uri(text)
        scheme = text.split("://", 1)[0]
        return fs, root.rstrip("/"), "" if isinstance(fs, pafs.LocalFileSystem) else f"{scheme}://"
    return pafs.LocalFileSystem(), str(Path(text).absolute()), ""


@lru_cache(maxsize=16)
def _from_uri(uri: str) -> tuple[pafs.FileSystem, str]:
    """One filesystem per URI and process: an S3 filesystem made afresh would look up the bucket's region (a
    request) unless the URI names it, and open new connections, at every append and listing."""
    return pafs.FileSystem.from_uri(uri)


def _named(fs: pafs.FileSystem, prefix: str, path: str) -> Path | str:
    return Path(path) if isinstance(fs, pafs.LocalFileSystem) else prefix + path


def _table_root(events_dir: EventsDir, table: str) -> tuple[pafs.FileSystem, str, str]:
    if not table.replace("_", "").isalnum():
        raise ValueError(f"bad event table name {table!r}")
    fs, root, prefix = location(events_dir)
    return fs, f"{root}/{table}" if root else table, prefix


def append(events_dir: EventsDir, table: str, rows: pa.Table, day: date | None = None,
           plain_columns: tuple[str, ...] = ()) -> Path | str | None:
    """Write rows as a new part file; durable (fsynced, or stored by the object store) when this returns.
    `plain_columns` are written without a dictionary (free text, which Parquet would try to dictionary-encode
    and then give up on: CPU for nothing)."""
    if rows.num_rows == 0:
        return None
    return _write_part(events_dir, table, rows, day or datetime.now(timezone.utc).date(), PART, plain_columns)


PART, MERGED = "part-", "part-merged-"  # "m" sorts after every digit: merged files list after the parts they hold


def unique_name(prefix: str, suffix: str) -> str:
    """Unique per process and call, ordered by time: writers never share a file."""
    return f"{prefix}{time.time_ns()}-{os.getpid()}-{secrets.token_hex(3)}{suffix}"


def _write_part(events_dir: EventsDir, table: str, rows: pa.Table, day: date, prefix: str,
                plain_columns: tuple[str, ...] = ()) -> Path | str:
    fs, root, prefix_uri = _table_root(events_dir, table)
    folder = f"{root}/day={day.isoformat()}"
    dictionary: bool | list[str] = [n for n in rows.column_names if n not in plain_columns] if plain_columns else True
    return publish(fs, folder, unique_name(prefix, ".parquet"), prefix_uri,
                   lambda path: pq.write_table(rows, path, filesystem=fs, compression="zstd",
                                               use_dictionary=dictionary))


def publish(fs: pafs.FileSystem, folder: str, name: str, prefix: str, write: Callable[[str], None]) -> Path | str:
    """Create folder/name whole through `write(path)`: on a local disk under a dot-name, fsynced, then renamed (a
    reader never sees half a file); elsewhere directly, since an object store's PUT appears whole or not at all."""
    fs.create_dir(folder, recursive=True)
    final = f"{folder}/{name}"
    if not isinstance(fs, pafs.LocalFileSystem):
        write(final)
        return _named(fs, prefix, final)
    tmp = f"{folder}/.{name}.tmp"
    try:
        write(tmp)
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
    return (info.type == pafs.FileType.File and info.base_name.startswith(PART)
            and info.base_name.endswith(".parquet") and info.path.rsplit("/", 2)[-2].startswith("day="))


def _live(found: Iterable[pafs.FileInfo]) -> tuple[list[pafs.FileInfo], list[pafs.FileInfo]]:
    """(the part files to read, those a merged file already holds) of a listing (see the module's docstring)."""
    by_folder: dict[str, list[pafs.FileInfo]] = {}
    for info in found:
        if _is_part(info):
            by_folder.setdefault(info.path.rsplit("/", 1)[0], []).append(info)
    live: list[pafs.FileInfo] = []
    held: list[pafs.FileInfo] = []
    for files in by_folder.values():
        merged = [i for i in files if i.base_name.startswith(MERGED)]
        newest = max(merged, key=lambda i: i.base_name) if merged else None
        for info in files:
            (live if newest is None or info is newest else held).append(info)
    return live, held


def parts(events_dir: EventsDir, table: str, days: Iterable[date] | None = None) -> list[Path | str]:
    """The table's part files to read (only those of the given days' folders, when given): each row once, even
    while housekeeping compacts a day."""
    fs, root, prefix = _table_root(events_dir, table)
    if days is None:
        found = _listing(fs, root, recursive=True)
    else:
        found = [i for day in days for i in _listing(fs, f"{root}/day={day.isoformat()}", recursive=False)]
    return sorted(_named(fs, prefix, i.path) for i in _live(found)[0])  # type: ignore[type-var]


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


def duckdb_scan(events_dir: Path, table: str) -> str:
    """A DuckDB query over a local events folder's part files, each row once during a compaction: `_live`'s rule
    applied within the one listing read_parquet takes (a second listing could fall on the other side of it)."""
    pattern = glob(events_dir, table).replace("'", "''")
    return ("SELECT * EXCLUDE (_file, _newest_merged) FROM (SELECT *, max(_file) FILTER (WHERE parse_filename(_file)"
            f" LIKE '{MERGED}%') OVER (PARTITION BY parse_dirpath(_file)) AS _newest_merged FROM read_parquet("
            f"'{pattern}', hive_partitioning = true, union_by_name = true, filename = '_file'))"
            " WHERE _newest_merged IS NULL OR _file = _newest_merged")


def compact(events_dir: EventsDir, table: str, today: date | None = None, min_files: int = 2) -> int:
    """Merge the part files of days before yesterday (no writer touches them any more) into one file per day:
    the merged file is written first, then what it holds is deleted (a crash in between leaves files that readers
    already ignore, and the next run deletes them). Returns the number of files removed."""
    today = today or datetime.now(timezone.utc).date()
    fs, root, _ = _table_root(events_dir, table)
    removed = 0
    days = sorted(i.path for i in _listing(fs, root, recursive=False)
                  if i.type == pafs.FileType.Directory and i.base_name.startswith("day="))
    for folder in days:
        day = date.fromisoformat(folder.rsplit("/", 1)[-1].removeprefix("day="))
        if day >= today - timedelta(days=1):
            continue
        live, held = _live(_listing(fs, folder, recursive=False))
        if len(live) >= min_files:
            ordered = sorted(live, key=lambda i: i.base_name)
            merged = pa.concat_tables([pq.read_table(i.path, filesystem=fs) for i in ordered],
                                      promote_options="default")
            _write_part(events_dir, table, merged, day, MERGED)
            held += live
        for info in held:
            fs.delete_file(info.path)
        removed += len(held)
    return removed
