"""Checked by mypy, never run (tests/storage/test_interfaces.py): every implementation of the system of record
(DuckDB's LocalStore, the owner's RPC client, PostgreSQL's store) satisfies storage/interfaces.py, each repository its domain's interface and each store the whole."""

from storage.interfaces import (Accounts, Budgets, Jobs, Maintenance, ModelFigures, Optimizations, Preferences,
                                Routers, Store)
from storage.repositories.accounts import AccountRepository
from storage.repositories.budgets import BudgetRepository
from storage.repositories.jobs import JobRepository
from storage.repositories.maintenance import MaintenanceRepository
from storage.repositories.model_figures import ModelFiguresRepository
from storage.repositories.optimizations import OptimizationRepository
from storage.repositories.preferences import PreferenceRepository
from storage.repositories.routers import RouterRepository
from storage.postgres_store import PostgresStore
from storage.rpc import RemoteStore
from storage.store import LocalStore


def local_store(store: LocalStore) -> Store:
    return store


def remote_store(store: RemoteStore) -> Store:
    return store


def postgres_store(store: PostgresStore) -> Store:
    return store


def repositories(a: AccountRepository, p: PreferenceRepository, j: JobRepository, r: RouterRepository,
                 o: OptimizationRepository, m: MaintenanceRepository
                 ) -> tuple[Accounts, Preferences, Jobs, Routers, Optimizations, Maintenance]:
    return a, p, j, r, o, m


def model_figures(repository: ModelFiguresRepository) -> ModelFigures:
    return repository


def budget_repository(b: BudgetRepository) -> Budgets:
    return b
