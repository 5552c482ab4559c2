"""Wire schema of prompt optimization: optimize, status, results, costs (docs/prompt_optimization.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from api.schemas.common import ContextLength, LatencySeconds, ModelId, PricePerMillion, ProviderName, Score


class GoldenRecord(msgspec.Struct):
    fields: dict[str, str]
    answer: str | None = None


class RequestProvider(msgspec.Struct):
    """A model by catalogue id, or (is_custom) any OpenAI-compatible model the caller describes: its prices (USD per
    million tokens, what the run is billed and the spend ceiling counts; 0 for a self-hosted model) and context
    length. Where it is served is the service's setting, never the request's (docs/prompt_optimization.md)."""

    provider: ProviderName
    model: ModelId
    is_custom: bool = False
    context_length: ContextLength | None = None
    input_price: PricePerMillion | None = None
    output_price: PricePerMillion | None = None
    latency: LatencySeconds | None = None  # accepted as modelSelect takes it; not used here
    # Refused when given (api/prompt_optimization/validation.py): where a model is served, and with which key, are
    # the service's settings, so a request can neither send the service's calls to any URL nor carry a key.
    base_url: str | None = None
    api_base: str | None = None
    api_key: str | None = None


class OptimizeRequest(msgspec.Struct):
    system_prompt: str
    template: str
    fields: list[str]
    target_models: list[RequestProvider]
    goldens: list[GoldenRecord] | None = None
    train_goldens: list[GoldenRecord] | None = None
    test_goldens: list[GoldenRecord] | None = None
    origin_model: RequestProvider | None = None
    evaluation_metric: str | None = None
    evaluation_config: str | dict[str, Any] | None = None
    prototype_mode: bool = False
    origin_model_evaluation_score: Score | None = None
    # Beside the interface's fields: the judge (LLMaaJ:Sem_Sim_1) and GEPA's reflection model for this run, instead
    # of SWITCHBOARD_OPTIMIZE_JUDGE_MODEL / _REFLECTION_MODEL; catalogue ids or custom entries.
    judge_model: RequestProvider | None = None
    reflection_model: RequestProvider | None = None


class OptimizeResponse(msgspec.Struct):
    optimization_run_id: str


class AdaptResponse(msgspec.Struct):
    adaptation_run_id: str


class OptimizeStatusResponse(msgspec.Struct, omit_defaults=True):
    optimization_run_id: str
    status: str
    queue_position: int | None = None
    error: str | None = None


class AdaptStatusResponse(msgspec.Struct, omit_defaults=True):
    adaptation_run_id: str
    status: str
    queue_position: int | None = None
    error: str | None = None


class OriginResult(msgspec.Struct):
    model_name: str | None
    score: float | None
    evals: dict[str, Any] | None
    cost: float | None
    system_prompt: str | None = None
    user_message_template: str | None = None
    result_status: str | None = None
    error: str | None = None


class TargetResult(msgspec.Struct):
    model_name: str
    pre_optimization_score: float | None
    pre_optimization_evals: dict[str, Any] | None
    post_optimization_score: float | None
    post_optimization_evals: dict[str, Any] | None
    cost: float | None
    system_prompt: str | None
    user_message_template: str | None
    user_message_template_fields: list[str]
    result_status: str
    score_improvement: float | None
    evaluation_type: str | None
    task_type: str | None = None
    error: str | None = None


class LLMRequestMetric(msgspec.Struct):
    model: str
    num_requests: int


class OptimizationResults(msgspec.Struct):
    id: str
    created_at: datetime
    updated_at: datetime | None
    origin_model: OriginResult | None
    target_models: list[TargetResult]
    job_status: str
    evaluation_metric: str | None
    evaluation_config: str | None
    llm_request_metrics: list[LLMRequestMetric] | None
    prototype_mode: bool
    error: str | None = None


class UsageRecord(msgspec.Struct):
    id: str
    user_id: str
    organization_id: str
    adaptation_run_id: str
    optimization_run_id: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    input_cost: float
    output_cost: float
    total_cost: float
    timestamp: float
    task_type: str
    # Beside the interface's fields: who the call served (target, origin, judge, reflection; task_type stays the
    # interface's phase) and how long the provider took, in seconds.
    role: str | None = None
    latency_s: float | None = None


class CostResponse(msgspec.Struct):
    optimization_run_id: str
    total_cost: float
    usage_records: list[UsageRecord]
