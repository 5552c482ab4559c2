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
    # Evidence for learning from traffic (flows/learning/, docs/routing.md "Learning from traffic"); appended last so
    # older part files still read (as nulls) by name.
    ("router_quality", pa.list_(pa.float32())),     # the router's own prediction, before what feedback taught
    ("penalty_position", pa.list_(pa.float32())),   # the policy's 0..1 cost (or latency) position, aligned
    ("policy_lambda", pa.float64()),                # quality given up per unit of position; null: the cheapest
    ("propensity", pa.float64()),                   # P(chosen) under the logging policy; 1.0 when deterministic
    ("explored", pa.bool_()),                       # the choice was an exploration draw (api/selection/exploration.py)
    ("exploration_rate", pa.float32()),
    ("correction_version", pa.string()),            # the promoted learned correction applied; null: none
    # The router's embedding of the query is not repeated here (it would double the JSON each decision costs to
    # log): feedback rows carry it (FEEDBACK_SCHEMA.embedding), and only labelled decisions are learned from.
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
    ("key_id", pa.string()),  # the API key the spend is billed to; null: made before keys were recorded
])

# One row per request to the OpenAI-compatible gateway (api/gateway/): the realized outcome beside the decision
# (same session_id as its sessions row; a proxied call, with no decision, has a session id of its own). Never the
# prompt or the answer: with hash_content nothing of the conversation is kept here, and without it the sessions row
# already holds the messages.
GATEWAY_CALL_SCHEMA = pa.schema([
    ("session_id", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("user_id", pa.string()),
    ("organization_id", pa.string()),
    ("preference_id", pa.string()),
    ("requested_model", pa.string()),               # the request's `model`: switchboard[/<preference>] or p/m
    ("mode", pa.string()),                          # 'routed' or 'proxy'
    ("stream", pa.bool_()),
    ("chosen", pa.string()),                        # the router's first choice (provider/model); proxy: the model
    ("sticky", pa.bool_()),                         # kept the previous turn's model instead of `chosen`
    ("answered", pa.string()),                      # the model whose answer reached the caller; null if none
    ("strongest", pa.string()),                     # the candidate of highest predicted quality (savings baseline)
    ("status", pa.string()),                        # 'ok', 'failed' (no attempt answered), 'stream_error'
    ("http_status", pa.int32()),                    # what the caller got
    ("attempts", pa.int32()),                       # upstream calls made
    ("attempt_models", pa.list_(pa.string())),      # aligned lists, one entry per upstream call, in order
    ("attempt_outcomes", pa.list_(pa.string())),    # ok, http_429, http_5xx, timeout, connect, context_length, ...
    ("attempt_ms", pa.list_(pa.float64())),
    ("input_tokens", pa.int64()),                   # as the provider reported them
    ("output_tokens", pa.int64()),
    ("usage_estimated", pa.bool_()),                # the provider sent no usable usage: tokens counted here
    ("cost_usd", pa.float64()),                     # tokens at the answering model's catalogue prices
    ("strongest_cost_usd", pa.float64()),           # the same tokens at the strongest candidate's prices
    ("ttft_ms", pa.float64()),                      # request arrival to the first byte of the answer
    ("latency_ms", pa.float64()),                   # request arrival to the answer's end
    ("error", pa.string()),                         # the last failure, provider keys scrubbed
    ("key_id", pa.string()),                        # the API key the call was made with (spend per key)
])

# Judge sampling (docs/routing.md, "Judge sampling"): one row per gateway exchange drawn for grading, written by
# the gateway after the answer reached the caller (api/gateway/judge_sampling.py). The only log that keeps an answer;
# a hash_content request is never drawn. The router's embedding of the query rides along for the learner.
JUDGE_SAMPLE_SCHEMA = pa.schema([
    ("session_id", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("user_id", pa.string()),
    ("organization_id", pa.string()),
    ("preference_id", pa.string()),
    ("content", pa.string()),                       # the messages as JSON, as the sessions row keeps them
    ("answer", pa.string()),                        # the answer's text as it reached the caller
    ("model", pa.string()),                         # the answering model, provider/model
    ("shadow_model", pa.string()),                  # another candidate to answer it too; null: no shadow call
    ("shadow_propensity", pa.float64()),            # the chance this shadow call was drawn (the shadow rate / k)
    ("embedding", pa.list_(pa.float32())),          # the router's embedding of the query
    ("candidates", pa.list_(pa.string())),          # the decision's candidates, with the prices the request gave
    ("input_prices", pa.list_(pa.float64())),       # USD per million tokens, aligned (a shadow call is billed so)
    ("output_prices", pa.list_(pa.float64())),
])

# One row per graded answer (flows/learning/judge.py): the chosen model's (`shadow` false) or a shadow call's. No
# text: the verdict, who judged, what it cost; the embedding is copied from the sample so the learner needs no text.
JUDGE_VERDICT_SCHEMA = pa.schema([
    ("verdict_id", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("session_id", pa.string()),
    ("preference_id", pa.string()),
    ("model", pa.string()),                         # the model whose answer was judged
    ("shadow", pa.bool_()),
    ("propensity", pa.float64()),                   # shadow rows: the shadow call's chance; else null
    ("verdict", pa.int8()),                         # 1: right, 0: wrong
    ("judge_model", pa.string()),
    ("cost_usd", pa.float64()),                     # the judge's (and the shadow call's) spend on this row
    ("embedding", pa.list_(pa.float32())),
])

BY_TABLE = {"sessions": SESSION_SCHEMA, "feedback": FEEDBACK_SCHEMA, "llm_usage": USAGE_SCHEMA,
            "gateway_calls": GATEWAY_CALL_SCHEMA, "judge_samples": JUDGE_SAMPLE_SCHEMA,
            "judge_verdicts": JUDGE_VERDICT_SCHEMA}
