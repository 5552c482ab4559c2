"""Store methods for custom router training: jobs per preference, published routers, training metrics.

A mixin of storage.store.Store (same connection and lock). The rules it enforces, in one transaction each:
- starting a training job cancels the preference's earlier open training jobs (the spec's restart transition);
- only an open job may publish: a superseded, failed or deleted job's late result is refused, so the live router
  is always the newest successful training;
- publishing moves the `is_live` pointer (artefact folders are immutable) and completes the job.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Callable

from storage.base import StoreError, _now, exposed
from storage.records import (OPEN_JOB_STATUSES, CustomRouterRecord, Job, RouterState, RouterTraining,
                             TrainingStart)

if TYPE_CHECKING:
    import threading

    import duckdb

TRAIN_CUSTOM_ROUTER = "train-custom-router"
_ROUTER_COLS = "router_id, preference_id, job_id, artefact_path, is_live, created_at"


class RouterTrainingStore:
    _conn: "duckdb.DuckDBPyConnection"
    _lock: "threading.RLock"
    _rows: Callable[..., list[tuple]]
    _notify: Callable[[str | None], None]
    get_job: Callable[[str], Job | None]

    @exposed
    def start_router_training(self, user_id: str, preference_id: str, dataset_path: str, language: str,
                              maximize: bool, models: str, rows: int) -> TrainingStart:
        """Create a `created` training job for the preference and cancel its earlier open ones."""
        job_id, now = str(uuid.uuid4()), _now()
        with self._lock:
            self._conn.execute("BEGIN TRANSACTION")
            try:
                superseded = [Job(*r) for r in self._conn.execute(
                    f"SELECT * FROM jobs WHERE kind = ? AND subject_id = ? AND status IN {OPEN_JOB_STATUSES}",
                    [TRAIN_CUSTOM_ROUTER, preference_id]).fetchall()]
                if superseded:
                    self._conn.execute(
                        f"UPDATE jobs SET status = 'cancelled', error = ?, updated_at = ? WHERE kind = ?"
                        f" AND subject_id = ? AND status IN {OPEN_JOB_STATUSES}",
                        [f"superseded by training job {job_id}", now, TRAIN_CUSTOM_ROUTER, preference_id])
                self._conn.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, 'created', NULL, NULL, ?, ?)",
                                   [job_id, TRAIN_CUSTOM_ROUTER, user_id, preference_id, now, now])
                self._conn.execute("INSERT INTO router_trainings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                   [job_id, preference_id, dataset_path, language, maximize, models, rows, now])
                self._conn.execute("COMMIT")
            except Exception:
                self._conn.execute("ROLLBACK")
                raise
            job = self.get_job(job_id)
        assert job is not None
        self._notify(preference_id)
        return TrainingStart(job=job, superseded=superseded)

    @exposed
    def mark_job_queued(self, job_id: str, flow_run_id: str) -> Job | None:
        """Record the flow run; move `created` to `queued` (a flow that already started keeps `processing`)."""
        with self._lock:
            self._conn.execute("UPDATE jobs SET flow_run_id = ?, updated_at = ?, status = CASE WHEN status ="
                               " 'created' THEN 'queued' ELSE status END WHERE job_id = ?",
                               [flow_run_id, _now(), job_id])
            job = self.get_job(job_id)
        if job is not None:
            self._notify(job.subject_id)
        return job

    @exposed
    def get_router_training(self, job_id: str) -> RouterTraining | None:
        rows = self._rows("SELECT * FROM router_trainings WHERE job_id = ?", [job_id])
        return RouterTraining(*rows[0]) if rows else None

    @exposed
    def publish_custom_router(self, job_id: str, artefact_path: str, metrics: str) -> CustomRouterRecord | None:
        """Make the job's router live and complete the job. None (nothing changed) when the job is no longer
        open: it was superseded by a newer upload, failed, or its preference was deleted."""
        router_id, now = str(uuid.uuid4()), _now()
        with self._lock:
            job = self.get_job(job_id)
            if job is None:
                raise StoreError(f"no job {job_id!r}")
            if job.status not in OPEN_JOB_STATUSES or job.subject_id is None:
                return None
            pid = job.subject_id
            self._conn.execute("BEGIN TRANSACTION")
            try:
                self._conn.execute("UPDATE custom_routers SET is_live = false WHERE preference_id = ?", [pid])
                self._conn.execute("INSERT INTO custom_routers VALUES (?, ?, ?, ?, true, ?)",
                                   [router_id, pid, job_id, artefact_path, now])
                self._conn.execute("INSERT OR REPLACE INTO router_training_metrics VALUES (?, ?, ?, ?)",
                                   [job_id, router_id, metrics, now])
                self._conn.execute("UPDATE jobs SET status = 'completed', error = NULL, updated_at = ?"
                                   " WHERE job_id = ?", [now, job_id])
                self._conn.execute("COMMIT")
            except Exception:
                self._conn.execute("ROLLBACK")
                raise
            record = self._router(router_id)
        self._notify(pid)
        return record

    def _router(self, router_id: str) -> CustomRouterRecord | None:
        rows = self._rows(f"SELECT {_ROUTER_COLS} FROM custom_routers WHERE router_id = ?", [router_id])
        return CustomRouterRecord(*rows[0]) if rows else None

    @exposed
    def training_metrics(self, job_id: str) -> str | None:
        """The JSON evaluation a training job recorded when it published (None before that)."""
        rows = self._rows("SELECT metrics FROM router_training_metrics WHERE job_id = ?", [job_id])
        return rows[0][0] if rows else None

    @exposed
    def job_is_open(self, job_id: str) -> bool:
        """Flows ask between steps so a superseded run stops early."""
        job = self.get_job(job_id)
        return job is not None and job.status in OPEN_JOB_STATUSES

    @exposed
    def router_state(self, preference_id: str) -> RouterState:
        found = self._states(preference_id)
        return found[0] if found else RouterState(preference_id, None, None)

    @exposed
    def router_states(self) -> list[RouterState]:
        """Every preference that has a training job or a router (start-up of the in-memory index)."""
        return self._states(None)

    def _states(self, preference_id: str | None) -> list[RouterState]:
        cond, params = ("AND j.subject_id = ?", [preference_id]) if preference_id else ("", [])
        jobs = self._rows(
            "SELECT j.* FROM jobs j JOIN preferences p ON p.preference_id = j.subject_id"
            f" WHERE j.kind = ? {cond}"
            " QUALIFY row_number() OVER (PARTITION BY j.subject_id ORDER BY j.created_at DESC) = 1",
            [TRAIN_CUSTOM_ROUTER, *params])
        rcond = "AND r.preference_id = ?" if preference_id else ""
        cols = ", ".join("r." + c.strip() for c in _ROUTER_COLS.split(","))
        live = self._rows(f"SELECT {cols} FROM custom_routers r JOIN preferences p USING (preference_id)"
                          f" WHERE r.is_live {rcond}", params)
        by_pref: dict[str, RouterState] = {}
        for row in jobs:
            job = Job(*row)
            by_pref[job.subject_id] = RouterState(job.subject_id, job, None)  # type: ignore[index]
        for row in live:
            rec = CustomRouterRecord(*row)
            prev = by_pref.get(rec.preference_id)
            by_pref[rec.preference_id] = RouterState(rec.preference_id, prev.job if prev else None, rec)
        return list(by_pref.values())

    @exposed
    def prune_router_versions(self, keep: int) -> list[str]:
        """Forget all but the newest `keep` router versions of each preference; the live one always stays.
        Returns the forgotten versions' artefact folders for the caller to remove."""
        with self._lock:
            rows = self._rows(
                "SELECT router_id, artefact_path FROM (SELECT router_id, artefact_path, is_live, row_number()"
                " OVER (PARTITION BY preference_id ORDER BY is_live DESC, created_at DESC) AS newest"
                " FROM custom_routers) WHERE NOT is_live AND newest > ?", [max(keep, 1)])
            for router_id, _ in rows:
                self._conn.execute("DELETE FROM custom_routers WHERE router_id = ?", [router_id])
        return [path for _, path in rows]

    @exposed
    def unneeded_training_datasets(self, grace_days: int) -> list[str]:
        """Uploaded datasets no router version needs any more: their job ended without a router still kept
        (failed, cancelled, superseded, pruned, or the preference was deleted) more than `grace_days` ago.
        Open jobs keep theirs; so does every kept router version (notebooks read its data)."""
        rows = self._rows(
            "SELECT t.dataset_path FROM router_trainings t JOIN jobs j USING (job_id)"
            f" WHERE j.status NOT IN {OPEN_JOB_STATUSES}"
            " AND NOT EXISTS (SELECT 1 FROM custom_routers r WHERE r.job_id = t.job_id)"
            " AND j.updated_at < now() - to_days(CAST(? AS INTEGER))", [max(grace_days, 0)])
        return [r[0] for r in rows]

    @exposed
    def training_datasets(self, preference_id: str) -> list[str]:
        """Every dataset uploaded to train the preference's routers (removed with the preference)."""
        return [r[0] for r in self._rows(
            "SELECT dataset_path FROM router_trainings WHERE preference_id = ?", [preference_id])]

    @exposed
    def fail_open_jobs(self, kind: str, reason: str) -> list[Job]:
        """Start-up rule: jobs of `kind` still open when the owner starts were interrupted; fail them, say why."""
        with self._lock:
            rows = self._rows(f"SELECT * FROM jobs WHERE kind = ? AND status IN {OPEN_JOB_STATUSES}", [kind])
            jobs = [Job(*r) for r in rows]
            for job in jobs:
                self._conn.execute("UPDATE jobs SET status = 'failed', error = ?, updated_at = ? WHERE job_id = ?",
                                   [f"{reason} (the job was {job.status})", _now(), job.job_id])
        for job in jobs:
            self._notify(job.subject_id)
        return jobs
