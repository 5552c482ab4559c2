from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Union

import msgspec

from api.schemas.common import NOT_IN_NAMES, CostQualityTradeoff, ModelDepth
from api.schemas.model_select import LLMProvider

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
# As modelSelect's llm_providers: "provider/model" or a {provider, model, is_custom, prices...} object.
Candidate = Union[LLMProvider, ModelName]
StoredCandidates = Annotated[list[Candidate], msgspec.Meta(min_length=1, max_length=100)]


def stored_entry(entry: Candidate) -> str:
    """How the store keeps one candidate: "provider/model", or (a custom model describing itself) its JSON."""
    if isinstance(entry, str):
        return entry
    if not entry.is_custom and entry.provider:
        return f"{entry.provider}/{entry.model}"
    if not entry.is_custom and "/" in entry.model:
        return entry.model  # the aggregator form {model: "vendor/model"}
    return msgspec.json.encode(entry).decode()


def read_entry(stored: str) -> Candidate:
    """A stored candidate as modelSelect takes it."""
    return msgspec.json.decode(stored, type=LLMProvider) if stored.startswith("{") else stored


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
    llm_providers: list[Candidate] | None = None
    exploration_rate: float | None = None
    judge_sample_rate: float | None = None
    judge_model: str | None = None
    judge_budget_usd: float | None = None
    shadow_sample_rate: float | None = None


class CustomRouterSummary(msgspec.Struct):
    """The preference's live custom router: what it routes among and how it did on its held-out folds."""

    router_id: str
    trained_at: datetime
    models: list[str]
    # Cross-validated accuracy (0..1 score scale) at cost_quality_tradeoff 0, and the best single model's on the
    # same rows (flows/custom_router/calibration.py); null when the training report lacks them.
    held_out_accuracy: float | None = None
    best_single_model: str | None = None
    best_single_accuracy: float | None = None


class LearningSummary(msgspec.Struct):
    """Corrections learned from this preference's traffic (docs/routing.md, 'Learning from traffic')."""

    versions: int
    live_version: str | None = None
    live_labels: int | None = None
    live_since: datetime | None = None


class PreferenceDetail(PreferenceResponse, kw_only=True):
    """GET /v2/preferences/{preference_id}: the preference, its custom router and its learning state."""

    custom_router: CustomRouterSummary | None = None
    training_status: str | None = None  # the latest router training job's status, if any
    learning: LearningSummary | None = None


class PreferencePage(msgspec.Struct):
    """GET /v2/preferences: the caller's own preferences, oldest first; next_offset is null on the last page."""

    preferences: list[PreferenceResponse]
    total: int
    next_offset: int | None = None


class PreferenceDeleteResponse(msgspec.Struct):
    preference_id: str
    deleted: bool
    custom_routers_removed: int
