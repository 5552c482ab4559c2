"""Custom routers in DuckDB: training jobs per preference, published router versions, training metrics.

The rules it enforces, in one transaction each, holding the preference's lock (preference_lock), so they hold
with many writers on many hosts (PostgreSQL) as in the one DuckDB owner:
- starting a training job cancels the preference's earlier open training jobs (the restart transition);
- only an open job may publish: a superseded, failed or deleted job's late result is refused, so the live router
  is always the newest successful training;
- publishing moves the `is_live` pointer (artefact folders are immutable) and completes the job.
"""

from __future__ import annotations

import statistics
import uuid

from storage.sql import SqlDatabase, now
from storage.errors import StoreError
from storage.repositories.preferences import preference_lock
from storage.records import (
    OPEN_JOB_STATUSES,
    TRAIN_CUSTOM_ROUTER,
    CustomRouterRecord,
    Job,
    RouterState,
    TrainingStart,
)

_ROUTER_COLS = "router_id, preference_id, job_id, artefact_path, is_live, created_at"


class RouterRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def start_training(self, user_id: str, preference_id: str, dataset_path: str, language: str,
                       maximize: bool, models: str, rows: int) -> TrainingStart:
        job_id, created = str(uuid.uuid4()), now()
        with self._db.transaction():
            self._db.serialize(preference_lock(preference_id))
            superseded = [Job(*r) for r in self._db.rows(
                f"SELECT * FROM jobs WHERE kind = ? AND subject_id = ? AND status IN {OPEN_JOB_STATUSES}",
                [TRAIN_CUSTOM_ROUTER, preference_id])]
            if superseded:
                self._db.run(f"UPDATE jobs SET status = 'cancelled', error = ?, updated_at = ? WHERE kind = ?"
                             f" AND subject_id = ? AND status IN {OPEN_JOB_STATUSES}",
                             [f"superseded by training job {job_id}", created, TRAIN_CUSTOM_ROUTER, preference_id])
            self._db.run("INSERT INTO jobs VALUES (?, ?, ?, ?, 'created', NULL, NULL, ?, ?)",
                         [job_id, TRAIN_CUSTOM_ROUTER, user_id, preference_id, created, created])
            self._db.run("INSERT INTO router_trainings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [job_id, preference_id, dataset_path, language, maximize, models, rows, created])
            job = Job(*self._db.rows("SELECT * FROM jobs WHERE job_id = ?", [job_id])[0])
            self._db.notify(preference_id)
        return TrainingStart(job=job, superseded=superseded)

    def publish(self, job_id: str, artefact_path: str, metrics: str) -> CustomRouterRecord | None:
        router_id, created = str(uuid.uuid4()), now()
        with self._db.transaction():
            rows = self._db.rows("SELECT subject_id FROM jobs WHERE job_id = ?", [job_id])
            if not rows:
                raise StoreError(f"no job {job_id!r}")
            pid = rows[0][0]
            if pid is None:
                return None
            self._db.serialize(preference_lock(pid))  # then read the status a newer upload or a deletion left
            status = self._db.rows("SELECT status FROM jobs WHERE job_id = ?", [job_id])[0][0]
            if status not in OPEN_JOB_STATUSES:
                return None
            self._db.run("UPDATE custom_routers SET is_live = false WHERE preference_id = ?", [pid])
            self._db.run("INSERT INTO custom_routers VALUES (?, ?, ?, ?, true, ?)",
                         [router_id, pid, job_id, artefact_path, created])
            self._db.run("INSERT INTO router_training_metrics VALUES (?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE"
                         " SET router_id = excluded.router_id, metrics = excluded.metrics,"
                         " created_at = excluded.created_at", [job_id, router_id, metrics, created])
            self._db.run("UPDATE jobs SET status = 'completed', error = NULL, updated_at = ? WHERE job_id = ?",
                         [created, job_id])
            found = self._db.rows(f"SELECT {_ROUTER_COLS} FROM custom_routers WHERE router_id = ?", [router_id])
            self._db.notify(pid)
        return CustomRouterRecord(*found[0])

    def training_metrics(self, job_id: str) -> str | None:
        """The JSON evaluation a training job recorded when it published (None before that)."""
        rows = self._db.rows("SELECT metrics FROM router_training_metrics WHERE job_id = ?", [job_id])
        return rows[0][0] if rows else None

    def expected_training_seconds(self, job_id: str, history: int = 20) -> float | None:
        """How long a training like this job usually takes, from upload to a live router: the median over the
        latest `history` completed trainings of those of a similar size (rows within a factor of 2; all of them
        when none is). None before the first training completed, or for an unknown job."""
        size = self._db.rows("SELECT rows FROM router_trainings WHERE job_id = ?", [job_id])
        if not size:
            return None
        done = self._db.rows(
            "SELECT CAST(extract(epoch FROM (j.updated_at - j.created_at)) AS FLOAT8), t.rows FROM jobs j"
            " JOIN router_trainings t USING (job_id) WHERE j.kind = ? AND j.status = 'completed'"
            " ORDER BY j.updated_at DESC LIMIT ?", [TRAIN_CUSTOM_ROUTER, history])
        rows = size[0][0]
        similar = [seconds for seconds, n in done if rows / 2 <= n <= rows * 2] or [seconds for seconds, _ in done]
        return float(statistics.median(similar)) if similar else None

    def training_dataset(self, job_id: str) -> str | None:
        rows = self._db.rows("SELECT dataset_path FROM router_trainings WHERE job_id = ?", [job_id])
        return rows[0][0] if rows else None

    def state(self, preference_id: str) -> RouterState:
        found = self._states(preference_id)
        return found[0] if found else RouterState(preference_id, None, None)

    def states(self) -> list[RouterState]:
        """Every preference that has a training job or a router (start-up of the in-memory index)."""
        return self._states(None)

    def _states(self, preference_id: str | None) -> list[RouterState]:
        cond, params = ("AND j.subject_id = ?", [preference_id]) if preference_id else ("", [])
        job_cols = ", ".join(Job.__struct_fields__)
        jobs = self._db.rows(
            f"SELECT {job_cols} FROM (SELECT j.*, row_number() OVER (PARTITION BY j.subject_id"
            " ORDER BY j.created_at DESC) AS newest FROM jobs j JOIN preferences p ON p.preference_id = j.subject_id"
            f" WHERE j.kind = ? {cond}) latest WHERE newest = 1",
            [TRAIN_CUSTOM_ROUTER, *params])
        rcond = "AND r.preference_id = ?" if preference_id else ""
        cols = ", ".join("r." + c.strip() for c in _ROUTER_COLS.split(","))
        live = self._db.rows(f"SELECT {cols} FROM custom_routers r JOIN preferences p USING (preference_id)"
                             f" WHERE r.is_live {rcond}", params)
        by_pref: dict[str, RouterState] = {}
        for row in jobs:
            job = Job(*row)
            if job.subject_id is not None:  # always set for trainings: the join above is on it
                by_pref[job.subject_id] = RouterState(job.subject_id, job, None)
        for row in live:
            rec = CustomRouterRecord(*row)
            prev = by_pref.get(rec.preference_id)
            by_pref[rec.preference_id] = RouterState(rec.preference_id, prev.job if prev else None, rec)
        return list(by_pref.values())

    def prune_versions(self, keep: int) -> list[str]:
        with self._db.transaction():
            rows = self._db.rows(
                "SELECT router_id, artefact_path FROM (SELECT router_id, artefact_path, is_live, row_number()"
                " OVER (PARTITION BY preference_id ORDER BY is_live DESC, created_at DESC) AS newest"
                " FROM custom_routers) versions WHERE NOT is_live AND newest > ?", [max(keep, 1)])
            for router_id, _ in rows:
                self._db.run("DELETE FROM custom_routers WHERE router_id = ?", [router_id])
        return [path for _, path in rows]

    def unneeded_datasets(self, grace_days: int) -> list[str]:
        """Uploaded datasets no router version needs any more: their job ended without a router still kept
        (failed, cancelled, superseded, pruned, or the preference was deleted) more than `grace_days` ago.
        Open jobs keep theirs; so does every kept router version (notebooks read its data)."""
        rows = self._db.rows(
            "SELECT t.dataset_path FROM router_trainings t JOIN jobs j USING (job_id)"
            f" WHERE j.status NOT IN {OPEN_JOB_STATUSES}"
            " AND NOT EXISTS (SELECT 1 FROM custom_routers r WHERE r.job_id = t.job_id)"
            " AND j.updated_at < now() - CAST(? AS INTEGER) * INTERVAL '1 day'", [max(grace_days, 0)])
        return [r[0] for r in rows]

    def datasets(self, preference_id: str) -> list[str]:
        """Every dataset uploaded to train the preference's routers (removed with the preference)."""
        return [r[0] for r in self._db.rows(
            "SELECT dataset_path FROM router_trainings WHERE preference_id = ?", [preference_id])]
