"""`switchboard serve`'s first step, in a short-lived process of its own: open the store (DuckDB migrates; a file
another process owns is refused clearly), apply the restart rule, and issue the first admin key on a first start.

The supervisor then runs for the service's whole life doing nothing but watch its children; done in its own
process, this step left DuckDB's library and buffers in it (about 60 of its 87 MiB at idle: issue 36).
"""

from __future__ import annotations

import os
import sys

from api.cli.processes import say
from api.restart_rule import apply_restart_rule
from api.settings import Settings, get_settings
from storage import owner
from storage.errors import StoreError
from storage.store import LocalStore


def prepare(settings: Settings) -> None:
    if settings.database_url:  # PostgreSQL: no store owner; other hosts' flow runs may be live, so no restart rule
        store = owner.open_store(settings.db_path, settings.run_dir, database_url=settings.database_url)
    else:
        store = LocalStore(settings.db_path)  # migrates, and refuses clearly if another process owns the file
        apply_restart_rule(store)  # the runner starts afresh: flow runs of jobs still open died with the last start
    try:
        if store.accounts.count_active_keys() == 0:
            issued = store.accounts.issue_key("admin", organization_id="admin", tier="enterprise",
                                              prompt_optimization=True, is_admin=True)
            say("first start: created an admin API key. It is shown only this once; keep it safe:")
            print(issued.key, flush=True)
    finally:
        store.close()


def main() -> int:
    os.umask(0o077)  # as api/cli/main.py: what this process creates is private to the user
    try:
        prepare(get_settings())
    except StoreError as exc:  # a refusal a person can act on: say it, no traceback (as api/cli/main.py)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
