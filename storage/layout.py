"""What lives where under the data dir, and which data dir is configured.

The data dir and the system of record's engine are the settings storage reads for itself (SWITCHBOARD_DATA_DIR,
SWITCHBOARD_DATABASE_URL and its pool's SWITCHBOARD_DATABASE_POOL_TIMEOUT_S), so an analyst's notebook can call
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


DEFAULT_POOL_TIMEOUT_S = 2.0


def configured_pool_timeout_s() -> float:
    """How long a request waits for one of its process's PostgreSQL connections before it is answered 503 (with
    Retry-After). Short: while PostgreSQL is down the pool has none to give, and a caller told to retry in a second
    is better off than one held for ten; with healthy transactions of milliseconds, a wait this long means none
    will come soon."""
    text = os.environ.get("SWITCHBOARD_DATABASE_POOL_TIMEOUT_S")
    if not text:
        return DEFAULT_POOL_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise SystemExit(f"SWITCHBOARD_DATABASE_POOL_TIMEOUT_S must be a number of seconds, not {text!r}") from None
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
