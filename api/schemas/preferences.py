from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from api.schemas.common import NOT_IN_NAMES, CostQualityTradeoff, ModelDepth

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200, description="A label people recognise")]
# \Z, not $: "openai/gpt-4o\n" must not pass (a $ matches before a final newline).
ModelName = Annotated[str, msgspec.Meta(pattern=f"^[^/\\s{NOT_IN_NAMES}]{{1,64}}/[^\\s{NOT_IN_NAMES}]{{1,256}}\\Z",
                                        description="provider/model")]
ExplorationRate = Annotated[float, msgspec.Meta(
    ge=0.0, le=0.1, description="Share of decisions routed to a near-best alternative so feedback reaches it "
    "(docs/routing.md, 'Learning from traffic'); null or 0: never")]
JudgeSampleRate = Annotated[float, msgspec.Meta(
    ge=0.0, le=0.2, description="Share of answered gateway requests (never hash_content ones) a judge model grades "
    "later, in a flow (docs/routing.md, 'Judge sampling'); null or 0: never")]
JudgeBudget = Annotated[float, msgspec.Meta(
    ge=0.0, le=10_000.0, description="USD the judge and shadow calls of this preference may spend per UTC day; "
    "null: nothing is graded")]
ShadowSampleRate = Annotated[float, msgspec.Meta(
    ge=0.0, le=1.0, description="Share of judge-sampled requests also answered by another candidate (a shadow call) "
    "and graded, a label for a model the router did not choose; null or 0: never")]
StoredCandidates = Annotated[list[ModelName], msgspec.Meta(min_length=1, max_length=100)]


class PreferenceCreateRequest(msgspec.Struct):
    name: Name | None = None


class PreferenceCreateResponse(msgspec.Struct):
    preference_id: str


class UpdatePreferenceBase(msgspec.Struct):
    """Fields left out are unchanged; an explicit null clears a routing default."""

    preference_id: str
    name: Name | msgspec.UnsetType = msgspec.UNSET
    tradeoff: Literal["cost", "latency"] | None | msgspec.UnsetType = msgspec.field(
        default=msgspec.UNSET)
    cost_quality_tradeoff: CostQualityTradeoff | None | msgspec.UnsetType = msgspec.UNSET
    max_model_depth: ModelDepth | None | msgspec.UnsetType = msgspec.UNSET
    hash_content: bool | None | msgspec.UnsetType = msgspec.UNSET
    # The gateway's candidates when a request names none (docs/api.md, "OpenAI-compatible gateway").
    llm_providers: StoredCandidates | None | msgspec.UnsetType = msgspec.UNSET
    exploration_rate: ExplorationRate | None | msgspec.UnsetType = msgspec.UNSET
    judge_sample_rate: JudgeSampleRate | None | msgspec.UnsetType = msgspec.UNSET
    judge_model: ModelName | None | msgspec.UnsetType = msgspec.UNSET
    judge_budget_usd: JudgeBudget | None | msgspec.UnsetType = msgspec.UNSET
    shadow_sample_rate: ShadowSampleRate | None | msgspec.UnsetType = msgspec.UNSET


class PreferenceResponse(msgspec.Struct):
    """A preference and the routing defaults that modelSelect applies when the request leaves them out."""

    preference_id: str
    name: str
    tradeoff: str | None
    cost_quality_tradeoff: int | None
    max_model_depth: int | None
    hash_content: bool | None
    has_custom_router: bool
    created_at: datetime
    updated_at: datetime
    llm_providers: list[str] | None = None
    exploration_rate: float | None = None
    judge_sample_rate: float | None = None
    judge_model: str | None = None
    judge_budget_usd: float | None = None
    shadow_sample_rate: float | None = None


class PreferenceDeleteResponse(msgspec.Struct):
    preference_id: str
    deleted: bool
    custom_routers_removed: int
