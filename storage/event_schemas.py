"""The columns of each Parquet event log. Storage owns them: the writers (api/selection/sessions.py,
flows/prompt_opt/usage.py) build rows to them and the analysts' views (storage/analytics.py) read them."""

from __future__ import annotations

import pyarrow as pa

SESSION_SCHEMA = pa.schema([
    ("session_id", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("user_id", pa.string()),
    ("organization_id", pa.string()),
    ("preference_id", pa.string()),
    ("previous_session", pa.string()),
    ("hashed", pa.bool_()),
    ("content", pa.string()),          # the messages as JSON; null when hash_content
    ("content_hash", pa.string()),     # sha256 of the messages JSON, always
    ("prompt_tokens", pa.int32()),
    ("tools_count", pa.int32()),
    ("candidates", pa.list_(pa.string())),          # as requested, after de-duplication
    ("eligible", pa.list_(pa.string())),            # after context/tools/max_model_depth
    ("predicted_quality", pa.list_(pa.float32())),  # aligned with eligible
    ("estimated_cost_usd", pa.list_(pa.float64())),  # aligned with eligible
    ("chosen", pa.string()),                        # provider/model in catalogue naming
    ("chosen_label_provider", pa.string()),         # as echoed to the caller
    ("chosen_label_model", pa.string()),
    ("tradeoff", pa.string()),
    ("cost_quality_tradeoff", pa.int32()),
    ("max_model_depth", pa.int32()),
    ("router", pa.string()),                        # 'default' or 'custom:<router id>'
    ("personalised", pa.bool_()),
    ("featurize_us", pa.int32()),
    ("decide_us", pa.int32()),
])

FEEDBACK_SCHEMA = pa.schema([
    ("feedback_id", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("session_id", pa.string()),
    ("user_id", pa.string()),
    ("organization_id", pa.string()),
    ("preference_id", pa.string()),
    ("model", pa.string()),                         # provider/model, catalogue naming
    ("accuracy", pa.int8()),
    ("predicted_quality", pa.float32()),
    ("embedding", pa.list_(pa.float32())),          # the query's embedding, for personalisation after restarts
])

USAGE_SCHEMA = pa.schema([
    ("id", pa.string()), ("user_id", pa.string()), ("organization_id", pa.string()),
    ("adaptation_run_id", pa.string()), ("provider", pa.string()), ("model", pa.string()),
    ("input_tokens", pa.int64()), ("output_tokens", pa.int64()), ("input_cost", pa.float64()),
    ("output_cost", pa.float64()), ("total_cost", pa.float64()), ("timestamp", pa.float64()),
    ("task_type", pa.string()),
    # Not in the wire record: which model of the run the call served (a target's position, or -1 for the origin),
    # its role in that work (target, judge, reflection) and how long the provider took (for the benchmark).
    ("position", pa.int32()), ("role", pa.string()), ("latency_s", pa.float64()),
])

BY_TABLE = {"sessions": SESSION_SCHEMA, "feedback": FEEDBACK_SCHEMA, "llm_usage": USAGE_SCHEMA}
