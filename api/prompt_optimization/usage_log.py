"""Reading a run's usage records from the `llm_usage` Parquet event log (written by the optimize-prompt flow)."""

from __future__ import annotations

from typing import Any

import pyarrow.dataset as ds

from storage import events
from storage.event_schemas import USAGE_SCHEMA

COLUMNS = ("id", "user_id", "organization_id", "adaptation_run_id", "provider", "model", "input_tokens",
           "output_tokens", "input_cost", "output_cost", "total_cost", "timestamp", "task_type", "position", "role",
           "latency_s")


def run_usage(events_dir: events.EventsDir, run_id: str) -> list[dict[str, Any]]:
    logged = events.dataset(events_dir, "llm_usage", USAGE_SCHEMA)
    rows = logged.to_table(columns=list(COLUMNS), filter=ds.field("adaptation_run_id") == run_id)
    return rows.sort_by([("timestamp", "ascending"), ("id", "ascending")]).to_pylist()
