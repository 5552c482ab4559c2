"""Reading a run's usage records from the `llm_usage` Parquet event log (written by the optimize-prompt flow)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from storage import events

COLUMNS = ("id, user_id, organization_id, adaptation_run_id, provider, model, input_tokens, output_tokens,"
           " input_cost, output_cost, total_cost, timestamp, task_type, position, role, latency_s")


def run_usage(events_dir: Path, run_id: str) -> list[dict[str, Any]]:
    if not events.parts(events_dir, "llm_usage"):
        return []

    conn = duckdb.connect()  # in-memory: reads Parquet only, never the owned database file
    try:
        cursor = conn.execute(
            f"SELECT {COLUMNS} FROM read_parquet(?, hive_partitioning = true, union_by_name = true)"
            " WHERE adaptation_run_id = ? ORDER BY timestamp, id", [events.glob(events_dir, "llm_usage"), run_id])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]
    finally:
        conn.close()
