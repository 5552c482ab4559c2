"""The store as CLI commands open it: the data dir checked first (one clear line instead of a trace), then the
owner's RPC, PostgreSQL, or the file (storage/owner.py)."""

from __future__ import annotations

from api.settings import check_data_dir, get_settings
from storage.interfaces import Store
from storage.owner import open_store


def cli_store() -> Store:
    settings = get_settings()
    check_data_dir(settings.data_dir)
    return open_store(settings.db_path, settings.run_dir, database_url=settings.database_url)
