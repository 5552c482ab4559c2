"""Prompt optimization runs in DuckDB.

Rules kept in one transaction each, so they hold with many writers on many hosts (PostgreSQL):
- one open run per user: starting a run while another of the caller's runs is created/queued/processing refuses
  (the API answers 429 naming it); starts of one user are serialised on a lock named after the user;
- a model's result is written only while the run is open, so a run failed by a restart never gets late results
  (the run's job row is locked while it is checked and written);
- the restart rule (`fail_open`) fails open runs and every model result still queued/processing.
"""

from __future__ import annotations

import uuid

import msgspec

from storage.sql import SqlDatabase, now
from storage.errors import StoreError
from storage.optimization_records import (
    OPTIMIZE_PROMPT,
    ModelResult,
    OptimizationRun,
    OptimizationStart,
)
from storage.records import OPEN_JOB_STATUSES

_RESULT_COLS = ("position, provider, model, result_status, pre_score, pre_evals, post_score, post_evals,"
                " system_prompt, user_message_template, cost, num_requests, error, updated_at")


class OptimizationRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def start(self, user_id: str, organization_id: str, request: str, evaluation_metric: str | None,
              evaluation_config: str | None, prototype_mode: bool, origin: list[str] | None,
              targets: list[list[str]], key_id: str | None = None) -> OptimizationStart:
        """Create a `created` run with one `queued` result per model, unless the user has an open run."""
        run_id, created = str(uuid.uuid4()), now()
        with self._db.transaction():
            self._db.serialize(f"{OPTIMIZE_PROMPT}:{user_id}")
            running = self._db.rows(
                f"SELECT job_id FROM jobs WHERE kind = ? AND user_id = ? AND status IN {OPEN_JOB_STATUSES}"
                " ORDER BY created_at LIMIT 1", [OPTIMIZE_PROMPT, user_id])
            if running:
                return OptimizationStart(run=None, running_run_id=running[0][0])
            self._db.run("INSERT INTO jobs VALUES (?, ?, ?, ?, 'created', NULL, NULL, ?, ?)",
                         [run_id, OPTIMIZE_PROMPT, user_id, run_id, created, created])
            self._db.run("INSERT INTO optimization_runs (run_id, user_id, organization_id, request,"
                         " evaluation_metric, evaluation_config, prototype_mode, created_at, key_id)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [run_id, user_id, organization_id, request, evaluation_metric, evaluation_config,
                          prototype_mode, created, key_id])
            models = ([(-1, origin)] if origin else []) + list(enumerate(targets))
            for position, (provider, model) in models:
                self._db.run("INSERT INTO optimization_results (run_id, position, provider, model, result_status,"
                             " updated_at) VALUES (?, ?, ?, ?, 'queued', ?)",
                             [run_id, position, provider, model, created])
        return OptimizationStart(run=self.get(run_id))

    def get(self, run_id: str) -> OptimizationRun | None:
        rows = self._db.rows(
            "SELECT r.run_id, r.user_id, r.organization_id, r.request, r.evaluation_metric, r.evaluation_config,"
            " r.prototype_mode, j.status, j.error, j.flow_run_id, r.created_at, j.updated_at, r.key_id"
            " FROM optimization_runs r JOIN jobs j ON j.job_id = r.run_id WHERE r.run_id = ?", [run_id])
        if not rows:
            return None
        results = [ModelResult(*r) for r in self._db.rows(
            f"SELECT {_RESULT_COLS} FROM optimization_results WHERE run_id = ? ORDER BY position", [run_id])]
        return msgspec.structs.replace(OptimizationRun(*rows[0][:-1]), results=results, key_id=rows[0][-1])

    def queue_position(self, run_id: str) -> int | None:
        """1 + the open runs waiting ahead of this one (created before it, not yet processing); None unless
        this run is itself waiting."""
        rows = self._db.rows(
            "WITH waiting AS (SELECT job_id, created_at FROM jobs WHERE kind = ? AND status IN ('created', 'queued'))"
            " SELECT (SELECT count(*) FROM waiting w WHERE w.created_at < me.created_at"
            "         OR (w.created_at = me.created_at AND w.job_id < me.job_id)) + 1"
            " FROM waiting me WHERE me.job_id = ?", [OPTIMIZE_PROMPT, run_id])
        return int(rows[0][0]) if rows else None

    def _is_open(self, run_id: str) -> bool:
        """Inside a transaction: also locks the run's job row until it ends."""
        return bool(self._db.rows(f"SELECT 1 FROM jobs WHERE job_id = ? AND status IN {OPEN_JOB_STATUSES}"
                                  + self._db.FOR_UPDATE, [run_id]))

    def begin(self, run_id: str) -> bool:
        """The flow run started: the run moves to `processing`. False when the run is no longer open."""
        with self._db.transaction():
            if not self._is_open(run_id):
                return False
            self._db.run("UPDATE jobs SET status = 'processing', updated_at = ? WHERE job_id = ?", [now(), run_id])
            return True

    def record_model_result(self, run_id: str, result: ModelResult) -> bool:
        """Write one model's state or outcome; refused (False) once the run is no longer open."""
        with self._db.transaction():
            if not self._is_open(run_id):
                return False
            self._db.run(
                "UPDATE optimization_results SET result_status = ?, pre_score = ?, pre_evals = ?, post_score = ?,"
                " post_evals = ?, system_prompt = ?, user_message_template = ?, cost = ?, num_requests = ?,"
                " error = ?, updated_at = ? WHERE run_id = ? AND position = ?",
                [result.result_status, result.pre_score, result.pre_evals, result.post_score, result.post_evals,
                 result.system_prompt, result.user_message_template, result.cost, result.num_requests,
                 result.error, now(), run_id, result.position])
            return True

    def finish(self, run_id: str, status: str, error: str | None = None) -> bool:
        """Close the run (completed / failed / cancelled); results still open close as failed with the reason."""
        if status not in ("completed", "failed", "cancelled"):
            raise StoreError(f"a run finishes completed, failed or cancelled, not {status!r}")
        finished = now()
        with self._db.transaction():
            if not self._is_open(run_id):
                return False
            self._db.run("UPDATE optimization_results SET result_status = 'failed', error = coalesce(error, ?),"
                         f" updated_at = ? WHERE run_id = ? AND result_status IN {OPEN_JOB_STATUSES}",
                         [error or "the run ended first", finished, run_id])
            self._db.run("UPDATE jobs SET status = ?, error = ?, updated_at = ? WHERE job_id = ?",
                         [status, error, finished, run_id])
            return True

    def fail_open(self, reason: str) -> list[str]:
        """Start-up rule: runs still open when the owner starts belong to flow runs that no longer exist."""
        ids = [r[0] for r in self._db.rows(
            f"SELECT job_id FROM jobs WHERE kind = ? AND status IN {OPEN_JOB_STATUSES}", [OPTIMIZE_PROMPT])]
        for run_id in ids:
            self.finish(run_id, "failed", reason)
        return ids
