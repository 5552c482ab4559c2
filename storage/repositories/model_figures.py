"""Figures beyond the shipped file: sets stored by the refresh-model-figures flow, and model onboarding runs
(storage/migrations/0008_model_figures.sql). Every change notifies one subject, MODEL_FIGURES_SUBJECT, so each API
worker reloads the (small) figures and swaps them in through the change feed (api/model_figures/live.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from storage.model_figure_records import MODEL_FIGURES_SUBJECT, OPEN_STATUSES, FigureSet, OnboardingRun, \
    OnboardingStart
from storage.sql import SqlDatabase, now

_RUN_COLS = ("run_id, organization_id, user_id, provider, model, input_price, output_price, status, created_at,"
             " updated_at, flow_run_id, calls, cost_usd, figures, error, published")


# An open run untouched this long lost its flow run (its worker died before it could fail the run): a new start
# replaces it. Far above a real run's length (300 questions, 4 at a time, a minute each at worst: 75 minutes).
ABANDONED_AFTER = timedelta(hours=6)


def _abandoned(row: tuple) -> bool:
    status, updated_at = row[7], row[9]
    return status in OPEN_STATUSES and now() - updated_at > ABANDONED_AFTER


def _onboarding_lock(organization_id: str, provider: str, model: str) -> str:
    return f"onboarding:{organization_id}:{provider}/{model}"


class ModelFiguresRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    # --- refreshed figure sets ------------------------------------------------------------------------------
    def store_figure_set(self, source: str, content: str, row_count: int) -> FigureSet:
        """Keep a validated set; it serves from now on (the newest set is live)."""
        set_id = str(uuid.uuid4())
        with self._db.transaction():
            self._db.run("INSERT INTO model_figure_sets VALUES (?, ?, ?, ?, ?)",
                         [set_id, now(), source, row_count, content])
            self._db.notify(MODEL_FIGURES_SUBJECT)
        rows = self._db.rows("SELECT set_id, created_at, source, row_count, content FROM model_figure_sets"
                             " WHERE set_id = ?", [set_id])
        return FigureSet(*rows[0])

    def live_figure_set_id(self) -> str | None:
        """The serving set's id alone: what a worker compares before it fetches a whole set."""
        rows = self._db.rows("SELECT set_id FROM model_figure_sets ORDER BY created_at DESC, set_id LIMIT 1")
        return rows[0][0] if rows else None

    def live_figure_set(self) -> FigureSet | None:
        rows = self._db.rows("SELECT set_id, created_at, source, row_count, content FROM model_figure_sets"
                             " ORDER BY created_at DESC, set_id LIMIT 1")
        return FigureSet(*rows[0]) if rows else None

    # --- onboarding runs ------------------------------------------------------------------------------------
    def start_onboarding(self, organization_id: str, user_id: str, provider: str, model: str, input_price: float,
                         output_price: float, retry_failed: bool = True) -> OnboardingStart:
        """A `queued` run for the organization's model, or the run it already has (one open or completed run per
        organization and model: figures are measured once). After a failed run, or one abandoned open for
        ABANDONED_AFTER, a new one starts when `retry_failed`; the old one stays as a record."""
        with self._db.transaction():
            self._db.serialize(_onboarding_lock(organization_id, provider, model))
            found = self._db.rows(f"SELECT {_RUN_COLS} FROM model_onboarding WHERE organization_id = ? AND"
                                  " provider = ? AND model = ? ORDER BY created_at DESC LIMIT 1",
                                  [organization_id, provider, model])
            if found and not (retry_failed and (found[0][7] == "failed" or _abandoned(found[0]))):
                return OnboardingStart(OnboardingRun(*found[0]), created=False)
            run_id, stamp = str(uuid.uuid4()), now()
            self._db.run(f"INSERT INTO model_onboarding ({_RUN_COLS}) VALUES"
                         " (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, NULL, 0, 0, NULL, NULL, false)",
                         [run_id, organization_id, user_id, provider, model, input_price, output_price, stamp, stamp])
            self._db.notify(MODEL_FIGURES_SUBJECT)
        run = self.onboarding(run_id)
        assert run is not None
        return OnboardingStart(run, created=True)

    def onboarding(self, run_id: str) -> OnboardingRun | None:
        rows = self._db.rows(f"SELECT {_RUN_COLS} FROM model_onboarding WHERE run_id = ?", [run_id])
        return OnboardingRun(*rows[0]) if rows else None

    def onboardings(self, organization_id: str | None = None) -> list[OnboardingRun]:
        """An organization's runs (with None: every organization's), oldest first."""
        where, params = ("WHERE organization_id = ?", [organization_id]) if organization_id is not None else ("", [])
        rows = self._db.rows(f"SELECT {_RUN_COLS} FROM model_onboarding {where} ORDER BY created_at, run_id", params)
        return [OnboardingRun(*r) for r in rows]

    def set_onboarding_flow_run(self, run_id: str, flow_run_id: str) -> OnboardingRun | None:
        self._db.run("UPDATE model_onboarding SET flow_run_id = ?, updated_at = ? WHERE run_id = ?",
                     [flow_run_id, now(), run_id])
        return self.onboarding(run_id)

    def begin_onboarding(self, run_id: str) -> bool:
        """queued -> processing; False when the run is not queued (finished, or taken by another flow run)."""
        with self._db.transaction():
            found = self._db.rows(f"SELECT status FROM model_onboarding WHERE run_id = ?{self._db.FOR_UPDATE}",
                                  [run_id])
            if not found or found[0][0] != "queued":
                return False
            self._db.run("UPDATE model_onboarding SET status = 'processing', updated_at = ? WHERE run_id = ?",
                         [now(), run_id])
            self._db.notify(MODEL_FIGURES_SUBJECT)
        return True

    def finish_onboarding(self, run_id: str, status: str, calls: int, cost_usd: float, figures: str | None,
                          error: str | None = None) -> OnboardingRun | None:
        """Record the outcome of an open run (`completed` with figures, or `failed` with the reason)."""
        with self._db.transaction():
            found = self._db.rows(f"SELECT status FROM model_onboarding WHERE run_id = ?{self._db.FOR_UPDATE}",
                                  [run_id])
            if not found or found[0][0] not in OPEN_STATUSES:
                return None
            self._db.run("UPDATE model_onboarding SET status = ?, calls = ?, cost_usd = ?, figures = ?, error = ?,"
                         " updated_at = ? WHERE run_id = ?", [status, calls, cost_usd, figures, error, now(), run_id])
            self._db.notify(MODEL_FIGURES_SUBJECT)
        return self.onboarding(run_id)

    def publish_onboarding(self, run_id: str, published: bool = True) -> OnboardingRun | None:
        """An admin's decision: a completed run's figures serve every organization (or only its own again)."""
        with self._db.transaction():
            self._db.run("UPDATE model_onboarding SET published = ?, updated_at = ? WHERE run_id = ?"
                         " AND status = 'completed'", [published, now(), run_id])
            self._db.notify(MODEL_FIGURES_SUBJECT)
        return self.onboarding(run_id)
