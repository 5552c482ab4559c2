"""How flow code reaches storage: PostgreSQL directly when SWITCHBOARD_DATABASE_URL is set; else through the store's
owner when one runs, else by opening the file (flow tests, a flow run while the service is stopped). An owner that stopped answering is waited for (it may be restarting)
instead of being locked out."""

from __future__ import annotations

from api.settings import get_settings
from storage.interfaces import Store
from storage.owner import open_store

OWNER_RESTART_WAIT_S = 30.0


def connect() -> Store:
    settings = get_settings()
    return open_store(settings.db_path, settings.run_dir, wait_for_owner_s=OWNER_RESTART_WAIT_S,
                      database_url=settings.database_url)
