"""The system of record over a SQL engine: every domain's repository over one SqlDatabase (storage/sql.py).

Two shapes: LocalStore, in the process that owns the DuckDB file (others reach it through the owner's RPC,
storage/rpc.py), and PostgresStore, which every process opens for itself (storage/postgres.py).
storage/owner.py decides which a process gets.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from storage.database import Database
from storage.repositories.accounts import AccountRepository
from storage.repositories.budgets import BudgetRepository
from storage.repositories.jobs import JobRepository
from storage.repositories.learning import LearningRepository
from storage.repositories.maintenance import MaintenanceRepository
from storage.repositories.model_figures import ModelFiguresRepository
from storage.repositories.optimizations import OptimizationRepository
from storage.repositories.preferences import PreferenceRepository
from storage.repositories.routers import RouterRepository
from storage.sql import SqlDatabase


class SqlStore:
    """Thread-safe: the engine gives each thread its own transaction (storage/sql.py)."""

    owns_file = False

    def __init__(self, database: SqlDatabase) -> None:
        self.database = database
        self.accounts = AccountRepository(database)
        self.budgets = BudgetRepository(database)
        self.preferences = PreferenceRepository(database)
        self.jobs = JobRepository(database)
        self.routers = RouterRepository(database)
        self.optimizations = OptimizationRepository(database)
        self.learning = LearningRepository(database)
        self.maintenance = MaintenanceRepository(database)
        self.model_figures = ModelFiguresRepository(database)

    def subscribe(self, listener: Callable[[str], None], resync: Callable[[], object] | None = None) -> None:
        self.database.subscribe(listener)

    def close(self) -> None:
        self.database.close()


class LocalStore(SqlStore):
    owns_file = True

    def __init__(self, db_path: Path) -> None:
        super().__init__(Database(db_path))  # migrates; refuses clearly if another process holds the file

    def subscribe(self, listener: Callable[[str], None], resync: Callable[[], object] | None = None) -> None:
        # This process sees every change as it commits, so it never needs `resync` (the RPC client does).
        self.database.subscribe(listener)
