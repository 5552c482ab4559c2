"""The only reader of the environment. Everything configurable lives here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:  # a typo in config must stop start-up, not be ignored
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from exc


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a number, got {raw!r}") from exc


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    host: str
    port: int
    prefect_api_url: str | None
    prefect_port: int
    max_body_bytes: int
    upload_max_bytes: int
    upload_parse_seconds: float
    auth_cache_seconds: float
    session_flush_seconds: float
    today_override: str | None

    @property
    def db_path(self) -> Path:
        return self.data_dir / "switchboard.duckdb"

    @property
    def run_dir(self) -> Path:
        """Process discovery files (who owns the database, on which URL)."""
        return self.data_dir / "run"

    @property
    def events_dir(self) -> Path:
        """Append-only Parquet event logs (sessions, feedback, usage)."""
        return self.data_dir / "events"

    @property
    def artefacts_dir(self) -> Path:
        return self.data_dir / "artefacts"

    @property
    def prefect_home(self) -> Path:
        return self.data_dir / "prefect"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    data_dir = Path(os.environ.get("SWITCHBOARD_DATA_DIR", "./data")).expanduser().resolve()
    return Settings(
        data_dir=data_dir,
        host=os.environ.get("SWITCHBOARD_HOST", "127.0.0.1"),
        port=_int("SWITCHBOARD_PORT", 8000),
        prefect_api_url=os.environ.get("PREFECT_API_URL") or None,
        prefect_port=_int("SWITCHBOARD_PREFECT_PORT", 4200),
        max_body_bytes=_int("SWITCHBOARD_MAX_BODY_BYTES", 2 * 1024 * 1024),
        upload_max_bytes=_int("SWITCHBOARD_UPLOAD_MAX_BYTES", 5 * 1024 * 1024),
        upload_parse_seconds=_float("SWITCHBOARD_UPLOAD_PARSE_SECONDS", 20.0),
        auth_cache_seconds=_float("SWITCHBOARD_AUTH_CACHE_SECONDS", 30.0),
        session_flush_seconds=_float("SWITCHBOARD_SESSION_FLUSH_SECONDS", 1.0),
        today_override=os.environ.get("SWITCHBOARD_TODAY") or None,
    )


def reset_settings() -> None:
    """Tests change the environment and call this so the next read sees it."""
    get_settings.cache_clear()
