"""What the system of record offers, one typed interface per domain.

Both implementations satisfy these Protocols: the repositories over the DuckDB file (storage/repositories/, in the
process that owns it) and the RPC client of every other process (storage/rpc.py). Every method declared here is
callable over the owner RPC as `<domain>.<method>`, and its annotations are the wire contract: arguments and
results are decoded into exactly these types on each side. tests/storage/test_interfaces.py has the type checker
prove that both implementations conform.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from storage.budget_records import (AuditEntry, Budget, BudgetStatus, KeyDetails, Reservation, Settlement,
                                    Spender)
from storage.model_figure_records import FigureSet, OnboardingRun, OnboardingStart
from storage.optimization_records import ModelResult, OptimizationRun, OptimizationStart
from storage.records import (
    ApiKeyInfo,
    CustomRouterRecord,
    IssuedKey,
    Job,
    LearnedVersion,
    Preference,
    PreferenceChanges,
    RouterState,
    TrainingStart,
    User,
)


class Accounts(Protocol):
    """Users and their API keys (only key hashes are stored)."""

    def issue_key(self, user_id: str, organization_id: str | None = None, tier: str | None = None,
                  prompt_optimization: bool | None = None, is_admin: bool = False,
                  actor: str = "cli") -> IssuedKey:
        """Create the user if new (defaults: own organization, free tier, no prompt optimization), else apply the
        attributes given; then issue a fresh key for them."""
        ...

    def user_for_key(self, key_hash: str) -> User | None: ...

    def user(self, user_id: str) -> User | None: ...

    def list_keys(self) -> list[ApiKeyInfo]: ...

    def revoke_key(self, key_ref: str, actor: str = "cli") -> ApiKeyInfo:
        """Revoke by key id, by the displayed prefix (if unambiguous), or by the key itself."""
        ...

    def count_active_keys(self) -> int: ...

    def key_details(self, organization_id: str | None = None) -> list[KeyDetails]: ...

    def key(self, key_id: str) -> KeyDetails | None: ...

    def rotate_key(self, key_id: str, grace_seconds: float, actor: str = "cli") -> IssuedKey:
        """A new key for the same user; the old one stays valid for `grace_seconds`."""
        ...

    def set_rate_limit(self, key_id: str, per_minute: int | None, actor: str = "cli") -> KeyDetails: ...

    def audit(self, organization_id: str, limit: int = 100, offset: int = 0) -> list[AuditEntry]: ...


class Budgets(Protocol):
    """USD budgets per key, user and organization, per UTC day and month; reservations and settled spend."""

    def set_budget(self, actor: str, organization_id: str, scope: str, subject_id: str, period: str,
                   limit_usd: float | None) -> Budget | None: ...

    def budgets(self, organization_id: str) -> list[Budget]: ...

    def reserve(self, spender: Spender, amount_usd: float) -> Reservation:
        """Check every applicable budget and reserve the call's worst case, under one lock per organization."""
        ...

    def settle(self, spender: Spender, reservation: Reservation, cost_usd: float) -> None: ...

    def settle_many(self, settlements: list[Settlement]) -> None:
        """Several ended calls in one transaction."""
        ...

    def status(self, spender: Spender) -> list[BudgetStatus]: ...


class Preferences(Protocol):
    """Routing preferences. Every read is scoped to a user: another user's preference looks unknown (None)."""

    def create(self, user_id: str, name: str) -> Preference: ...

    def get(self, user_id: str, preference_id: str) -> Preference | None: ...

    def for_user(self, user_id: str) -> list[Preference]: ...

    def update(self, user_id: str, preference_id: str, changes: PreferenceChanges) -> Preference | None: ...

    def delete(self, user_id: str, preference_id: str) -> list[str] | None:
        """Delete the preference and its custom routers; returns the router artefact paths to remove (None when
        the caller has no such preference). An open training job of it is cancelled."""
        ...


class Jobs(Protocol):
    """Background jobs (router trainings, prompt optimizations) and their JobStatus."""

    def create(self, kind: str, user_id: str, subject_id: str | None, status: str = "created") -> Job: ...

    def get(self, job_id: str) -> Job | None: ...

    def update(self, job_id: str, status: str | None = None, flow_run_id: str | None = None,
               error: str | None = None, only_if_open: bool = False) -> Job | None:
        """Move a job on. With only_if_open, a job already in a final state is left alone."""
        ...

    def mark_queued(self, job_id: str, flow_run_id: str) -> Job | None:
        """Record the flow run; move `created` to `queued` (a flow that already started keeps `processing`)."""
        ...

    def is_open(self, job_id: str) -> bool: ...

    def list_open(self) -> list[Job]: ...

    def fail_open(self, kind: str, reason: str) -> list[Job]:
        """Start-up rule: jobs of `kind` still open were interrupted; fail them and say why."""
        ...


class Routers(Protocol):
    """Custom routers: training jobs per preference, published router versions, their evaluation."""

    def start_training(self, user_id: str, preference_id: str, dataset_path: str, language: str,
                       maximize: bool, models: str, rows: int) -> TrainingStart:
        """Create a `created` training job for the preference and cancel its earlier open ones."""
        ...

    def publish(self, job_id: str, artefact_path: str, metrics: str) -> CustomRouterRecord | None:
        """Make the job's router live and complete the job; None when the job is no longer open."""
        ...

    def training_metrics(self, job_id: str) -> str | None: ...

    def expected_training_seconds(self, job_id: str, history: int = 20) -> float | None:
        """Upload-to-live seconds of recent completed trainings of a similar size (median); None without any."""
        ...

    def training_dataset(self, job_id: str) -> str | None:
        """The uploaded dataset (Parquet path) a training job was given; None for an unknown job."""
        ...

    def state(self, preference_id: str) -> RouterState: ...

    def states(self) -> list[RouterState]: ...

    def prune_versions(self, keep: int) -> list[str]:
        """Forget all but the newest `keep` versions of each preference (the live one always stays); returns the
        forgotten versions' artefact folders."""
        ...

    def unneeded_datasets(self, grace_days: int) -> list[str]: ...

    def datasets(self, preference_id: str) -> list[str]: ...


class Optimizations(Protocol):
    """Prompt optimization runs: one open run per user, per-model results written only while the run is open."""

    def start(self, user_id: str, organization_id: str, request: str, evaluation_metric: str | None,
              evaluation_config: str | None, prototype_mode: bool, origin: list[str] | None,
              targets: list[list[str]], key_id: str | None = None) -> OptimizationStart: ...

    def get(self, run_id: str) -> OptimizationRun | None: ...

    def queue_position(self, run_id: str) -> int | None: ...

    def begin(self, run_id: str) -> bool: ...

    def record_model_result(self, run_id: str, result: ModelResult) -> bool: ...

    def finish(self, run_id: str, status: str, error: str | None = None) -> bool: ...

    def fail_open(self, reason: str) -> list[str]: ...


class Learning(Protocol):
    """Corrections learned from each preference's traffic (flows/learning/): every version kept, one pointer."""

    def record_version(self, preference_id: str, labels: int, parameters: str, evaluation: str,
                       promote: bool) -> LearnedVersion:
        """Keep a fitted version; with `promote`, point the preference at it."""
        ...

    def get(self, version_id: str) -> LearnedVersion | None: ...

    def versions(self, preference_id: str) -> list[LearnedVersion]: ...

    def live(self, preference_id: str) -> LearnedVersion | None: ...

    def all_live(self) -> list[LearnedVersion]: ...

    def promote(self, preference_id: str, version_id: str) -> LearnedVersion | None: ...

    def rollback(self, preference_id: str) -> LearnedVersion | None:
        """Point at the newest promoted version older than the live one (None: the router alone)."""
        ...


class ModelFigures(Protocol):
    """Figures beyond the shipped file: refreshed sets (the newest serves) and onboarding runs per organization
    (api/model_figures/). Every change notifies MODEL_FIGURES_SUBJECT."""

    def store_figure_set(self, source: str, content: str, row_count: int) -> FigureSet: ...

    def live_figure_set_id(self) -> str | None: ...

    def live_figure_set(self) -> FigureSet | None: ...

    def start_onboarding(self, organization_id: str, user_id: str, provider: str, model: str, input_price: float,
                         output_price: float, retry_failed: bool = True) -> OnboardingStart:
        """A queued run, or the organization's open or completed run of that model (created=False)."""
        ...

    def onboarding(self, run_id: str) -> OnboardingRun | None: ...

    def onboardings(self, organization_id: str | None = None) -> list[OnboardingRun]: ...

    def set_onboarding_flow_run(self, run_id: str, flow_run_id: str) -> OnboardingRun | None: ...

    def begin_onboarding(self, run_id: str) -> bool: ...

    def finish_onboarding(self, run_id: str, status: str, calls: int, cost_usd: float, figures: str | None,
                          error: str | None = None) -> OnboardingRun | None: ...

    def publish_onboarding(self, run_id: str, published: bool = True) -> OnboardingRun | None: ...


class Maintenance(Protocol):
    def ping(self) -> bool:
        """True when the system of record answers a query (readiness probes)."""
        ...

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file (housekeeping)."""
        ...

    def export_analytics_snapshot(self) -> str:
        """Copy the catalogue tables to a new Parquet folder for a reader in another process; returns its path."""
        ...


class Store(Protocol):
    """Everything above, plus change notifications and closing."""

    @property
    def accounts(self) -> Accounts: ...

    @property
    def budgets(self) -> Budgets: ...

    @property
    def preferences(self) -> Preferences: ...

    @property
    def jobs(self) -> Jobs: ...

    @property
    def routers(self) -> Routers: ...

    @property
    def optimizations(self) -> Optimizations: ...

    @property
    def learning(self) -> Learning: ...

    @property
    def maintenance(self) -> Maintenance: ...

    @property
    def model_figures(self) -> ModelFigures: ...

    @property
    def owns_file(self) -> bool:
        """True in the process that opened the DuckDB file, False for an RPC client."""
        ...

    def subscribe(self, listener: Callable[[str], None], resync: Callable[[], object] | None = None) -> None:
        """`listener(subject_id)` after each committed change; `resync()` when changes may have been missed."""
        ...

    def close(self) -> None: ...


# The RPC's map of domains: `<domain>.<method>` names a method of DOMAINS[domain].
DOMAINS: dict[str, type] = {"accounts": Accounts, "budgets": Budgets, "preferences": Preferences, "jobs": Jobs,
                            "routers": Routers,
                            "optimizations": Optimizations, "learning": Learning,
                            "maintenance": Maintenance, "model_figures": ModelFigures}
