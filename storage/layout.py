"""What lives where under the data dir, and which data dir is configured.

The data dir, the system of record's engine and where the event logs live are the settings storage reads for
itself (SWITCHBOARD_DATA_DIR, SWITCHBOARD_DATABASE_URL with its pool's SWITCHBOARD_DATABASE_POOL_TIMEOUT_S and
SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S, SWITCHBOARD_EVENTS_URI), so an analyst's notebook can call
storage.analytics.connect() with no arguments; everything else configurable is read by api/settings.py, which takes
the first two from here too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_DIR = "./data"


def configured_data_dir() -> Path:
    return Path(os.environ.get("SWITCHBOARD_DATA_DIR", DEFAULT_DATA_DIR)).expanduser().resolve()


def configured_database_url() -> str | None:
    """A postgresql:// URL: PostgreSQL is the system of record and no store owner runs (docs/deployment.md).
    Unset: the embedded DuckDB file under the data dir."""
    return os.environ.get("SWITCHBOARD_DATABASE_URL") or None


def configured_events_uri() -> str | None:
    """Where the Parquet event logs (sessions, feedback, usage, gateway calls, dead letters) live when not in the
    data dir's events/ folder: a URI storage/events.py reads through pyarrow's filesystems, such as
    s3://bucket/prefix?region=eu-west-1 (docs/deployment.md, "Event logs on object storage")."""
    text = os.environ.get("SWITCHBOARD_EVENTS_URI") or None
    if text is not None and "://" not in text:
        raise SystemExit(f"SWITCHBOARD_EVENTS_URI must be a URI such as s3://bucket/prefix or file:///path, "
                         f"not {text!r}")
    return text


DEFAULT_POOL_TIMEOUT_S = 2.0


def configured_pool_timeout_s() -> float:
    """How long a request waits for one of its process's PostgreSQL connections before it is answered 503 (with
    Retry-After). Short: while PostgreSQL is down the pool has none to give, and a caller told to retry in a second
    is better off than one held for ten; with healthy transactions of milliseconds, a wait this long means none
    will come soon."""
    return _seconds("SWITCHBOARD_DATABASE_POOL_TIMEOUT_S", DEFAULT_POOL_TIMEOUT_S)


DEFAULT_RECONNECT_TIMEOUT_S = 1.0


def configured_reconnect_timeout_s() -> float:
    """How long a process's pool retries a lost PostgreSQL connection by itself before it gives the attempt up and
    leaves the next request to open one at once. psycopg_pool's own default (5 min) retries after 1 s, 2 s, 4 s...,
    so a request came through about 5 s after PostgreSQL returned from 8 s down; giving up after 1 s means the
    first request after its return connects (docs/benchmarks.md, "Issue 25, ... (2026-11-25, morning)")."""
    return _seconds("SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S", DEFAULT_RECONNECT_TIMEOUT_S)


def _seconds(name: str, default: float) -> float:
    """A duration setting in seconds (at least 0.1), or `default` when unset."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise SystemExit(f"{name} must be a number of seconds, not {text!r}") from None
    return max(0.1, value)


@dataclass(frozen=True)
class DataDir:
    root: Path

    @property
    def db_path(self) -> Path:
        return self.root / "switchboard.duckdb"

    @property
    def run_dir(self) -> Path:
        """Process discovery files (who owns the database, on which URL)."""
        return self.root / "run"

    @property
    def events_dir(self) -> Path:
        """Append-only Parquet event logs (sessions, feedback, usage)."""
        return self.root / "events"

    @property
    def artefacts_dir(self) -> Path:
        return self.root / "artefacts"

    @property
    def uploads_dir(self) -> Path:
        """Validated router-training datasets, as Parquet."""
        return self.root / "uploads"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def prefect_home(self) -> Path:
        return self.root / "prefect"
