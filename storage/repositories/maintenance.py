"""Maintenance of the system of record: checkpoints, and Parquet snapshots of the catalogue for readers elsewhere.

DuckDB refuses even a read-only open of a file that another process holds for writing, so while the service runs
a notebook (storage/analytics.py) asks the owner, over the RPC, for a snapshot; on PostgreSQL the notebook's
process writes the same snapshot itself, so analysts' views read the same Parquet files on either engine.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

from storage.sql import SqlDatabase
from storage.layout import DataDir

# What analysts may read of the system of record: everything except the API key hashes.
CATALOGUE_TABLES = ("users", "preferences", "jobs", "custom_routers", "router_trainings", "router_training_metrics",
                    "optimization_runs", "optimization_results", "learned_corrections", "learned_correction_pointer")
SNAPSHOT_MAX_AGE_S = 3600  # a reader removes its snapshot once loaded; older ones belong to readers that died


def snapshots_dir(data_dir: Path) -> Path:
    return DataDir(data_dir).run_dir / "analytics"


class MaintenanceRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def ping(self) -> bool:
        return self._db.rows("SELECT 1") == [(1,)]

    def checkpoint(self) -> None:
        self._db.checkpoint()

    def export_analytics_snapshot(self) -> str:
        """Write the catalogue tables as Parquet files into a new folder (appearing complete or not at all) and
        return its path. One transaction, so the tables agree with each other."""
        root = snapshots_dir(self._db.data_dir)
        _prune(root)
        final = root / f"{time.time_ns()}-{uuid.uuid4().hex[:8]}"
        partial = root / f".{final.name}.partial"
        partial.mkdir(parents=True)
        try:
            with self._db.transaction():
                self._db.consistent_reads()
                for table in CATALOGUE_TABLES:
                    self._db.copy_to_parquet(table, partial / f"{table}.parquet")
            os.replace(partial, final)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        return str(final)


def _prune(root: Path) -> None:
    if not root.exists():
        return
    cutoff = time.time() - SNAPSHOT_MAX_AGE_S
    for folder in root.iterdir():
        if folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
