"""How flow code reaches storage: through the owning API process when it runs, else by opening the file."""

from __future__ import annotations

from api.settings import get_settings
from storage.owner import AnyStore, open_store


def connect() -> AnyStore:
    settings = get_settings()
    return open_store(settings.db_path, settings.run_dir)
