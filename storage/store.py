"""The system of record in the process that owns the DuckDB file: every domain's repository over one connection.

Other processes reach the same interface (storage/interfaces.py) through the owner's RPC (storage/rpc.py);
storage/owner.py decides which of the two a process gets.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from storage.database import Database
from storage.repositories.accounts import AccountRepository
from storage.repositories.jobs import JobRepository
from storage.repositories.learning import LearningRepository
from storage.repositories.maintenance import MaintenanceRepository
from storage.repositories.optimizations import OptimizationRepository
from storage.repositories.preferences import PreferenceRepository
from storage.repositories.routers import RouterRepository


class LocalStore:
    """Thread-safe: the repositories share one connection and one lock (storage/database.py)."""

    owns_file = True

    def __init__(self, db_path: Path) -> None:
        self.database = Database(db_path)  # migrates; refuses clearly if another process holds the file
        self.accounts = AccountRepository(self.database)
        self.preferences = PreferenceRepository(self.database)
        self.jobs = JobRepository(self.database)
        self.routers = RouterRepository(self.database)
        self.optimizations = OptimizationRepository(self.database)
        self.learning = LearningRepository(self.database)
        self.maintenance = MaintenanceRepository(self.database)

    def subscribe(self, listener: Callable[[str], None], resync: Callable[[], object] | None = None) -> None:
        # This process sees every change as it commits, so it never needs `resync` (the RPC client does).
        self.database.subscribe(listener)

    def close(self) -> None:
        self.database.close()
