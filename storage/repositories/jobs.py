"""Background jobs in DuckDB: one row per router training or prompt optimization, with its JobStatus."""

from __future__ import annotations

import uuid

from storage.sql import SqlDatabase, now
from storage.errors import StoreError
from storage.records import JOB_STATUSES, OPEN_JOB_STATUSES, Job


def check_status(status: str) -> None:
    if status not in JOB_STATUSES:
        raise StoreError(f"unknown job status {status!r}; expected one of {', '.join(JOB_STATUSES)}")


class JobRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def create(self, kind: str, user_id: str, subject_id: str | None, status: str = "created") -> Job:
        check_status(status)
        job_id, created = str(uuid.uuid4()), now()
        self._db.run("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
                     [job_id, kind, user_id, subject_id, status, created, created])
        job = self.get(job_id)
        assert job is not None
        return job

    def get(self, job_id: str) -> Job | None:
        rows = self._db.rows("SELECT * FROM jobs WHERE job_id = ?", [job_id])
        return Job(*rows[0]) if rows else None

    def update(self, job_id: str, status: str | None = None, flow_run_id: str | None = None,
               error: str | None = None, only_if_open: bool = False) -> Job | None:
        # only_if_open: a late housekeeping pass must not overwrite what the flow itself recorded.
        if status is not None:
            check_status(status)
        guard = f" AND status IN {OPEN_JOB_STATUSES}" if only_if_open else ""
        with self._db.transaction():  # one statement: the guard and the write cannot be split by another writer
            self._db.run("UPDATE jobs SET status = coalesce(?, status), flow_run_id = coalesce(?, flow_run_id),"
                         f" error = coalesce(?, error), updated_at = ? WHERE job_id = ?{guard}",
                         [status, flow_run_id, error, now(), job_id])
            return self._changed(job_id)

    def mark_queued(self, job_id: str, flow_run_id: str) -> Job | None:
        with self._db.transaction():
            self._db.run("UPDATE jobs SET flow_run_id = ?, updated_at = ?, status = CASE WHEN status = 'created'"
                         " THEN 'queued' ELSE status END WHERE job_id = ?", [flow_run_id, now(), job_id])
            return self._changed(job_id)

    def _changed(self, job_id: str) -> Job | None:
        job = self.get(job_id)
        if job is not None:
            self._db.notify(job.subject_id)
        return job

    def is_open(self, job_id: str) -> bool:
        """Flows ask between steps, so a superseded run stops early."""
        job = self.get(job_id)
        return job is not None and job.status in OPEN_JOB_STATUSES

    def list_open(self) -> list[Job]:
        rows = self._db.rows(f"SELECT * FROM jobs WHERE status IN {OPEN_JOB_STATUSES} ORDER BY created_at")
        return [Job(*row) for row in rows]

    def fail_open(self, kind: str, reason: str) -> list[Job]:
        with self._db.transaction():
            rows = self._db.rows(f"SELECT * FROM jobs WHERE kind = ? AND status IN {OPEN_JOB_STATUSES}"
                                 + self._db.FOR_UPDATE, [kind])
            jobs = [Job(*r) for r in rows]
            for job in jobs:
                self._db.run("UPDATE jobs SET status = 'failed', error = ?, updated_at = ? WHERE job_id = ?",
                             [f"{reason} (the job was {job.status})", now(), job.job_id])
                self._db.notify(job.subject_id)
        return jobs
