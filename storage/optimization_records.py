"""Records of prompt optimization runs, as the store hands them out (msgspec Structs: they cross the owner RPC)."""

from __future__ import annotations

from datetime import datetime

import msgspec

OPTIMIZE_PROMPT = "optimize-prompt"  # jobs.kind
ORIGIN = -1  # optimization_results.position of the origin (baseline) model


class ModelResult(msgspec.Struct, frozen=True):
    """One model's part of a run: the origin (position -1, score in pre_score) or a target (position 0..)."""

    position: int
    provider: str
    model: str
    result_status: str
    pre_score: float | None = None
    pre_evals: str | None = None  # JSON
    post_score: float | None = None
    post_evals: str | None = None  # JSON
    system_prompt: str | None = None
    user_message_template: str | None = None
    cost: float | None = None
    num_requests: int | None = None
    error: str | None = None
    updated_at: datetime | None = None


class OptimizationRun(msgspec.Struct, frozen=True):
    run_id: str
    user_id: str
    organization_id: str
    request: str  # JSON: the validated request
    evaluation_metric: str | None
    evaluation_config: str | None
    prototype_mode: bool
    status: str  # the job's JobStatus
    error: str | None
    flow_run_id: str | None
    created_at: datetime
    updated_at: datetime
    results: list[ModelResult] = []
    key_id: str | None = None  # the key it was started with (spend per key, budgets); None before it was recorded


class OptimizationStart(msgspec.Struct, frozen=True):
    """A new run, or (run None) the caller's run already in progress that refused it."""

    run: OptimizationRun | None
    running_run_id: str | None = None
