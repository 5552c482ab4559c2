"""Records the store hands out. msgspec Structs so they cross the owner RPC unchanged."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

Tier = Literal["free", "starter", "startup", "enterprise"]
TIERS: tuple[str, ...] = ("free", "starter", "startup", "enterprise")


class User(msgspec.Struct, frozen=True):
    user_id: str
    organization_id: str
    tier: str
    prompt_optimization: bool
    is_admin: bool
    # The key this user was authenticated with (spend and budgets are per key too) and its own per-minute rate
    # limit (None: the server's); None outside a request (the CLI, a flow run).
    key_id: str | None = None
    rate_limit_per_minute: int | None = None


class ApiKeyInfo(msgspec.Struct, frozen=True):
    key_id: str
    key_prefix: str
    user_id: str
    created_at: datetime
    revoked_at: datetime | None


class IssuedKey(msgspec.Struct, frozen=True):
    """A new key: the plaintext exists only in this value, never in storage."""

    key: str
    info: ApiKeyInfo
    user: User


# Change-feed subjects (storage/owner_changes.py) are preference ids, except these: a revoked key's hash.
KEY_SUBJECT_PREFIX = "api-key:"


def key_subject(key_hash: str) -> str:
    return KEY_SUBJECT_PREFIX + key_hash


def is_key_subject(subject: str) -> bool:
    return subject.startswith(KEY_SUBJECT_PREFIX)


class Preference(msgspec.Struct, frozen=True):
    preference_id: str
    user_id: str
    name: str
    tradeoff: str | None
    cost_quality_tradeoff: int | None
    max_model_depth: int | None
    hash_content: bool | None
    created_at: datetime
    updated_at: datetime
    has_custom_router: bool = False
    llm_providers: list[str] | None = None  # stored candidates, "provider/model" (the gateway's default)
    exploration_rate: float | None = None  # 0..0.1: share of decisions explored (api/selection/exploration.py)
    # Judge sampling of gateway traffic (api/gateway/judge_sampling.py, flows/learning/judge.py); None: off.
    judge_sample_rate: float | None = None  # 0..0.2 of answered, unhashed gateway requests
    judge_model: str | None = None          # provider/model
    judge_budget_usd: float | None = None   # judge and shadow spend allowed per UTC day
    shadow_sample_rate: float | None = None  # 0..1 of sampled requests also answered by another candidate


class PreferenceChanges(msgspec.Struct, frozen=True, omit_defaults=True):
    """Fields to change; UNSET leaves a field alone, None clears a routing default."""

    name: str | msgspec.UnsetType = msgspec.UNSET
    tradeoff: str | None | msgspec.UnsetType = msgspec.UNSET
    cost_quality_tradeoff: int | None | msgspec.UnsetType = msgspec.UNSET
    max_model_depth: int | None | msgspec.UnsetType = msgspec.UNSET
    hash_content: bool | None | msgspec.UnsetType = msgspec.UNSET
    llm_providers: list[str] | None | msgspec.UnsetType = msgspec.UNSET
    exploration_rate: float | None | msgspec.UnsetType = msgspec.UNSET
    judge_sample_rate: float | None | msgspec.UnsetType = msgspec.UNSET
    judge_model: str | None | msgspec.UnsetType = msgspec.UNSET
    judge_budget_usd: float | None | msgspec.UnsetType = msgspec.UNSET
    shadow_sample_rate: float | None | msgspec.UnsetType = msgspec.UNSET


TRAIN_CUSTOM_ROUTER = "train-custom-router"  # jobs.kind of a custom router training
JOB_STATUSES: tuple[str, ...] = ("created", "queued", "processing", "completed", "failed", "cancelled")
OPEN_JOB_STATUSES: tuple[str, ...] = ("created", "queued", "processing")


class Job(msgspec.Struct, frozen=True):
    job_id: str
    kind: str
    user_id: str
    subject_id: str | None
    status: str
    flow_run_id: str | None
    error: str | None
    created_at: datetime
    updated_at: datetime


class RouterTraining(msgspec.Struct, frozen=True):
    """What a custom router training job was given (the dataset itself is a Parquet file under the data dir)."""

    job_id: str
    preference_id: str
    dataset_path: str
    language: str
    maximize: bool
    models: str  # JSON array of the resolved llm_providers entries
    rows: int
    created_at: datetime


class CustomRouterRecord(msgspec.Struct, frozen=True):
    router_id: str
    preference_id: str
    job_id: str | None
    artefact_path: str
    is_live: bool
    created_at: datetime


class RouterState(msgspec.Struct, frozen=True):
    """Where a preference's custom router stands: its latest training job and its live router, if any."""

    preference_id: str
    job: Job | None
    live: CustomRouterRecord | None


class TrainingStart(msgspec.Struct, frozen=True):
    """A new training job, and the earlier open jobs of the same preference it cancelled."""

    job: Job
    superseded: list[Job]


class LearnedVersion(msgspec.Struct, frozen=True):
    """One correction the learn-from-traffic flow fitted for a preference (storage/migrations/0006_*.sql)."""

    version_id: str
    preference_id: str
    created_at: datetime
    labels: int           # feedback labels it was fitted on
    parameters: str       # JSON: api/selection/learned.py
    evaluation: str       # JSON: the off-policy estimates of it and the champion, and the decision
    promoted: bool        # it was made live when it was recorded (the pointer may have moved since)
    is_live: bool = False
