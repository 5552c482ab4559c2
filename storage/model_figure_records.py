"""Records of refreshed figure sets and model onboarding runs, as the store hands them out (msgspec Structs: they
cross the owner RPC). The figures' own format is api/model_figures/ (CSV text, JSON rows): storage keeps them as
text."""

from __future__ import annotations

from datetime import datetime

import msgspec

MODEL_FIGURES_SUBJECT = "model-figures"  # the change feed's subject of every change below: API workers reload all
OPEN_STATUSES = ("queued", "processing")
STATUSES = ("queued", "processing", "completed", "failed")


class FigureSet(msgspec.Struct, frozen=True):
    set_id: str
    created_at: datetime
    source: str
    row_count: int
    content: str  # the CSV as validated (datasets/model_benchmarks.csv's columns)


class OnboardingRun(msgspec.Struct, frozen=True):
    run_id: str
    organization_id: str
    user_id: str
    provider: str
    model: str
    input_price: float
    output_price: float
    status: str
    created_at: datetime
    updated_at: datetime
    flow_run_id: str | None = None
    calls: int = 0
    cost_usd: float = 0.0
    figures: str | None = None  # JSON list of figure rows with intervals (api/model_figures/records.py)
    error: str | None = None
    published: bool = False


class OnboardingStart(msgspec.Struct, frozen=True):
    run: OnboardingRun
    created: bool  # False: the organization already had a run for this model, returned as it is
