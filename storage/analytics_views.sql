-- Read-side views for analysts (storage/analytics.py creates them; README "For analysts" lists the columns).
-- Inputs: events_sessions, events_feedback, events_llm_usage, events_gateway_calls (the Parquet event logs, read in
-- place, with the hive `day` column) and store.* (an in-memory copy of the DuckDB catalogue tables, taken when
-- connecting).
-- Statements are separated by a line holding only ';'.

-- One row per modelSelect call: what was asked, what was eligible, what was chosen and why.
CREATE VIEW routing_decisions AS
SELECT session_id, created_at, day, user_id, organization_id, preference_id,
       router, CASE WHEN router LIKE 'custom%' THEN 'custom' ELSE 'default' END AS router_kind,
       personalised, tradeoff, cost_quality_tradeoff, max_model_depth, prompt_tokens, tools_count, hashed,
       chosen, len(candidates) AS n_candidates, len(eligible) AS n_eligible, candidates, eligible,
       predicted_quality[list_position(eligible, chosen)] AS chosen_predicted_quality,
       estimated_cost_usd[list_position(eligible, chosen)] AS chosen_estimated_cost_usd,
       list_max(predicted_quality) AS best_predicted_quality,
       list_min(estimated_cost_usd) AS cheapest_estimated_cost_usd,
       featurize_us, decide_us
FROM events_sessions
;
-- One row per eligible candidate of each decision: chosen vs the others.
CREATE VIEW routing_candidates AS
SELECT *, model = chosen AS is_chosen
FROM (SELECT session_id, created_at, day, preference_id, router_kind, tradeoff, cost_quality_tradeoff, chosen,
             unnest(eligible) AS model,
             unnest(predicted_quality) AS predicted_quality,
             unnest(estimated_cost_usd) AS estimated_cost_usd
      FROM (SELECT d.*, s.predicted_quality, s.estimated_cost_usd
            FROM routing_decisions d JOIN events_sessions s USING (session_id)))
;
-- Decisions per day, preference, router, trade-off and chosen model.
CREATE VIEW routing_daily AS
SELECT day, preference_id, router_kind, tradeoff, cost_quality_tradeoff, chosen,
       count(*) AS decisions,
       avg(chosen_predicted_quality) AS mean_predicted_quality,
       sum(chosen_estimated_cost_usd) AS estimated_cost_usd,
       avg(n_eligible) AS mean_eligible
FROM routing_decisions
GROUP BY ALL
;
-- One row per feedback report, with the decision it judges (the query embedding is left out).
CREATE VIEW feedback AS
SELECT f.feedback_id, f.created_at, f.day, f.session_id, f.user_id, f.organization_id, f.preference_id,
       f.model, f.accuracy, f.predicted_quality, d.router_kind, d.tradeoff, d.cost_quality_tradeoff,
       f.created_at - d.created_at AS after_decision
FROM events_feedback f LEFT JOIN routing_decisions d ON d.session_id = f.session_id
;
CREATE VIEW feedback_daily AS
SELECT day, preference_id, model, count(*) AS reports, avg(accuracy) AS accuracy_rate,
       avg(predicted_quality) AS mean_predicted_quality
FROM feedback
GROUP BY ALL
;
-- One row per LLM call the service paid for (prompt optimization today), with its run's kind.
CREATE VIEW llm_usage AS
SELECT u.id, to_timestamp(u."timestamp") AS created_at, u.day, u.user_id, u.organization_id, u.key_id,
       u.adaptation_run_id AS run_id, j.kind AS run_kind, u.provider, u.model, u.task_type, u.role, u.position,
       u.input_tokens, u.output_tokens, u.input_cost, u.output_cost, u.total_cost, u.latency_s
FROM events_llm_usage u LEFT JOIN store.jobs j ON j.job_id = u.adaptation_run_id
;
-- Usage and cost per day, organization, user, run, model, task type and role (target, origin, judge, reflection).
CREATE VIEW llm_cost AS
SELECT day, organization_id, user_id, run_id, run_kind, provider, model, task_type, role,
       count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       sum(total_cost) AS cost_usd, sum(latency_s) AS latency_s
FROM llm_usage
GROUP BY ALL
;
-- A run's spend broken down by role and task type, with each part's share of the run's total and its latency.
CREATE VIEW run_spend_by_role AS
SELECT run_id, run_kind, role, task_type, count(*) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, sum(total_cost) AS cost_usd,
       sum(total_cost) / nullif(sum(sum(total_cost)) OVER (PARTITION BY run_id), 0) AS share_of_run_cost,
       sum(latency_s) AS latency_s, avg(latency_s) AS mean_latency_s, max(latency_s) AS max_latency_s
FROM llm_usage
GROUP BY run_id, run_kind, role, task_type
;
-- Every job (router training, prompt optimization) with its Prefect flow run id.
CREATE VIEW jobs AS
SELECT job_id, kind, user_id, subject_id, status, error, flow_run_id, created_at, updated_at,
       updated_at - created_at AS duration
FROM store.jobs
;
-- Custom router training jobs with their cross-validated evaluation summary.
CREATE VIEW router_training_runs AS
SELECT t.job_id, t.preference_id, p.name AS preference_name, j.user_id, j.status, j.error, j.flow_run_id,
       t.language, t.maximize, t.rows, json_array_length(t.models) AS n_models, t.created_at,
       j.updated_at, m.router_id, coalesce(r.is_live, false) AS is_live,
       m.metrics ->> '$.summary.best_single_model' AS best_single_model,
       CAST(m.metrics ->> '$.summary.best_single_quality' AS DOUBLE) AS best_single_quality,
       CAST(m.metrics ->> '$.summary.router_quality_t0' AS DOUBLE) AS router_quality_t0,
       CAST(m.metrics ->> '$.summary.oracle_quality' AS DOUBLE) AS oracle_quality,
       CAST(m.metrics ->> '$.summary.cheapest_setting_within_1pt_of_best_single' AS INTEGER)
           AS cheapest_setting_within_1pt,
       CAST(m.metrics ->> '$.summary.its_cost_share_of_best_single' AS DOUBLE) AS its_cost_share_of_best_single,
       CAST(m.metrics ->> '$.training_seconds' AS DOUBLE) AS training_seconds,
       CAST(m.metrics ->> '$.peak_rss_mb' AS DOUBLE) AS peak_rss_mb,
       m.metrics
FROM store.router_trainings t
JOIN store.jobs j USING (job_id)
LEFT JOIN store.router_training_metrics m USING (job_id)
LEFT JOIN store.custom_routers r ON r.router_id = m.router_id
LEFT JOIN store.preferences p ON p.preference_id = t.preference_id
;
-- The quality/cost curve of each training: the router at cost_quality_tradeoff 0..10, each single model, the oracle.
CREATE VIEW router_evaluation AS
SELECT job_id, preference_id, pos AS position,
       CASE WHEN e.name = 'oracle' THEN 'oracle' WHEN e.setting IS NOT NULL THEN 'router' ELSE 'single model' END
           AS kind,
       e.name, e.setting, e.quality, e.cost_per_1k AS cost_per_1k_requests_usd, e.shares
FROM (SELECT m.job_id, t.preference_id, unnest(m.evaluated) AS e, generate_subscripts(m.evaluated, 1) AS pos
      FROM (SELECT job_id, from_json(metrics -> '$.table', '[{"name": "VARCHAR", "setting": "INTEGER",
                   "quality": "DOUBLE", "cost_per_1k": "DOUBLE", "shares": "MAP(VARCHAR, DOUBLE)"}]') AS evaluated
            FROM store.router_training_metrics) m
      JOIN store.router_trainings t USING (job_id))
;
-- Prompt optimization: one row per model of each run (the origin baseline and every target).
CREATE VIEW optimization_results AS
SELECT o.run_id, r.user_id, r.organization_id, r.evaluation_metric, o.position,
       CASE WHEN o.position < 0 THEN 'origin' ELSE 'target' END AS role,
       o.provider, o.model, o.result_status, o.pre_score, o.post_score, o.post_score - o.pre_score AS improvement,
       o.post_evals ->> '$.never_worse.returned' AS prompt_returned,
       CAST(o.post_evals ->> '$.never_worse.difference' AS DOUBLE) AS optimized_minus_original,
       origin.pre_score AS origin_score, o.cost AS cost_usd, o.num_requests AS llm_calls, o.error,
       o.system_prompt, o.user_message_template, o.updated_at
FROM store.optimization_results o
JOIN store.optimization_runs r USING (run_id)
LEFT JOIN store.optimization_results origin ON origin.run_id = o.run_id AND origin.position = -1
;
-- Prompt optimization: one row per run, before/after averaged over its targets.
CREATE VIEW optimization_runs AS
SELECT r.run_id, r.user_id, r.organization_id, j.status, j.error, j.flow_run_id, r.evaluation_metric,
       r.prototype_mode, r.created_at, j.updated_at,
       count(o.position) FILTER (WHERE o.position >= 0) AS targets,
       count(o.position) FILTER (WHERE o.position >= 0 AND o.result_status = 'completed') AS targets_completed,
       max(o.pre_score) FILTER (WHERE o.position < 0) AS origin_score,
       avg(o.pre_score) FILTER (WHERE o.position >= 0) AS mean_pre_score,
       avg(o.post_score) FILTER (WHERE o.position >= 0) AS mean_post_score,
       sum(o.cost) AS cost_usd, sum(o.num_requests) AS llm_calls
FROM store.optimization_runs r
JOIN store.jobs j ON j.job_id = r.run_id
LEFT JOIN store.optimization_results o ON o.run_id = r.run_id
GROUP BY ALL
;
-- One row per request through the OpenAI-compatible gateway (/v1/chat/completions): what really happened beside
-- the decision (routing_decisions, same session_id; proxied calls have no decision). Realized tokens and USD at
-- catalogue prices; `savings_usd`: what the same tokens would have cost on the candidate of highest predicted
-- quality, less what they cost.
CREATE VIEW gateway_calls AS
SELECT g.session_id, g.created_at, g.day, g.user_id, g.organization_id, g.key_id, g.preference_id, g.requested_model,
       g.mode,
       g.stream, g.chosen, g.sticky, g.answered, g.answered IS DISTINCT FROM g.chosen AS fell_back, g.strongest,
       g.status, g.http_status, g.attempts, g.attempt_models, g.attempt_outcomes, g.attempt_ms,
       g.input_tokens, g.output_tokens, g.usage_estimated, g.cost_usd, g.strongest_cost_usd,
       g.strongest_cost_usd - g.cost_usd AS savings_usd, g.ttft_ms, g.latency_ms, g.error,
       d.router_kind, d.tradeoff, d.cost_quality_tradeoff, d.chosen_estimated_cost_usd
FROM events_gateway_calls g LEFT JOIN routing_decisions d USING (session_id)
;
-- Realized spend per day, preference and answering model.
CREATE VIEW gateway_spend_daily AS
SELECT day, preference_id, answered AS model, count(*) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd, sum(strongest_cost_usd) AS strongest_cost_usd,
       sum(savings_usd) AS savings_usd
FROM gateway_calls
WHERE answered IS NOT NULL
GROUP BY ALL
;
-- Every USD the service paid providers, per day, organization, user, API key, source and model (issue 34): gateway
-- calls ('gateway'), prompt optimization's LLM calls ('prompt optimization') and judge sampling's ('judging'). A
-- key_id is null for spend recorded before keys were (and for judging, which no key makes).
CREATE VIEW spend_daily AS
SELECT day, organization_id, user_id, key_id, 'gateway' AS source, answered AS model, count(*) AS calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd
FROM events_gateway_calls
WHERE answered IS NOT NULL
GROUP BY ALL
UNION ALL
SELECT day, organization_id, user_id, key_id,
       CASE WHEN task_type IN ('judge_traffic', 'shadow_call') THEN 'judging' ELSE 'prompt optimization' END AS source,
       provider || '/' || model AS model, count(*) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, sum(total_cost) AS cost_usd
FROM events_llm_usage
GROUP BY ALL
;
-- Per upstream model: every attempt the gateway made, its outcome and time (errors, fallbacks, latency).
CREATE VIEW gateway_model_health AS
SELECT model, count(*) AS attempts, count(*) FILTER (WHERE outcome = 'ok') AS answered,
       count(*) FILTER (WHERE outcome <> 'ok') AS failed,
       avg(CASE WHEN outcome = 'ok' THEN 0 ELSE 1 END) AS error_rate,
       count(*) FILTER (WHERE outcome <> 'ok' AND position < n) AS fell_back_from,
       quantile_cont(ms, 0.5) FILTER (WHERE outcome = 'ok') AS p50_first_byte_ms,
       quantile_cont(ms, 0.95) FILTER (WHERE outcome = 'ok') AS p95_first_byte_ms
FROM (SELECT unnest(attempt_models) AS model, unnest(attempt_outcomes) AS outcome, unnest(attempt_ms) AS ms,
             generate_subscripts(attempt_models, 1) AS position, len(attempt_models) AS n
      FROM events_gateway_calls)
GROUP BY model
;
-- Learning from traffic (docs/routing.md, "Learning from traffic"): one row per decision with what a learner needs
-- and every label it got. `label` is the caller's latest feedback (a later report on a session replaces an earlier
-- one), else the judge's verdict on the chosen model's answer (judge sampling, flows/learning/judge.py): caller
-- feedback wins, and `label_source` says which ('feedback', 'judge'). `features` is the router's embedding of the
-- query, which that feedback row (or the judge's sample) carries (hash_content sessions take neither, so they have
-- none: never their text); the gateway's outcome sits beside it (an error or a fallback says the model was
-- unavailable, not that it was wrong). A shadow call's verdict adds a row for the model not chosen (`label_source`
-- 'shadow'): the same decision with that model as the logged action, its propensity the chance of the shadow draw.
CREATE VIEW decision_evidence AS
WITH feedback AS (
    SELECT session_id, arg_max(accuracy, created_at) AS label, arg_max(embedding, created_at) AS embedding,
           max(created_at) AS feedback_at
    FROM events_feedback GROUP BY session_id
), verdicts AS (
    SELECT session_id, model, shadow, arg_max(verdict, created_at) AS verdict, arg_max(embedding, created_at) AS embedding,
           arg_max(propensity, created_at) AS propensity, max(created_at) AS judged_at
    FROM events_judge_verdicts WHERE verdict IS NOT NULL GROUP BY ALL
), decisions AS (
    SELECT s.session_id, s.created_at, s.day, s.user_id, s.organization_id, s.preference_id, s.hashed, s.router,
           s.eligible, s.router_quality, s.predicted_quality, s.estimated_cost_usd, s.penalty_position,
           s.policy_lambda, s.cost_quality_tradeoff, s.tradeoff, s.chosen, list_position(s.eligible, s.chosen) AS chosen_index,
           s.propensity, s.explored, s.exploration_rate, s.correction_version,
           CASE WHEN s.hashed THEN NULL ELSE coalesce(f.embedding, j.embedding) END AS features,
           coalesce(f.label, j.verdict) AS label, coalesce(f.feedback_at, j.judged_at) AS feedback_at,
           CASE WHEN f.label IS NOT NULL THEN 'feedback' WHEN j.verdict IS NOT NULL THEN 'judge' END AS label_source,
           g.status AS gateway_status, g.answered AS gateway_answered, g.answered IS DISTINCT FROM g.chosen AS fell_back,
           g.attempt_outcomes AS gateway_attempt_outcomes, g.latency_ms AS gateway_latency_ms, g.cost_usd AS gateway_cost_usd
    FROM events_sessions s
    LEFT JOIN feedback f USING (session_id)
    LEFT JOIN verdicts j ON j.session_id = s.session_id AND j.model = s.chosen AND NOT j.shadow
    LEFT JOIN events_gateway_calls g ON g.session_id = s.session_id AND g.mode = 'routed'
)
SELECT * FROM decisions
UNION ALL BY NAME
SELECT d.session_id, d.created_at, d.day, d.user_id, d.organization_id, d.preference_id, d.hashed, d.router,
       d.eligible, d.router_quality, d.predicted_quality, d.estimated_cost_usd, d.penalty_position, d.policy_lambda,
       d.cost_quality_tradeoff, d.tradeoff, v.model AS chosen, list_position(d.eligible, v.model) AS chosen_index,
       v.propensity, false AS explored, d.exploration_rate, d.correction_version,
       CASE WHEN d.hashed THEN NULL ELSE v.embedding END AS features, v.verdict AS label, v.judged_at AS feedback_at,
       'shadow' AS label_source
FROM verdicts v JOIN decisions d ON d.session_id = v.session_id
WHERE v.shadow AND list_position(d.eligible, v.model) IS NOT NULL
;
-- Each preference's learning state per day: evidence logged, labels, exploration, and the corrections served.
CREATE VIEW learning_evidence_daily AS
SELECT day, preference_id, count(*) AS decisions, count(label) AS labelled, avg(label) AS label_rate,
       count(*) FILTER (WHERE label_source = 'judge') AS judged,
       count(*) FILTER (WHERE explored) AS explored, avg(propensity) AS mean_propensity,
       count(*) FILTER (WHERE correction_version IS NOT NULL) AS corrected,
       count(*) FILTER (WHERE hashed) AS hashed
FROM decision_evidence WHERE label_source IS DISTINCT FROM 'shadow'
GROUP BY ALL
;
-- Every correction the learn-from-traffic flow fitted, its off-policy estimates against the champion of its day,
-- whether it was promoted, and whether it serves now.
CREATE VIEW learning_versions AS
SELECT v.version_id, v.preference_id, v.created_at, v.labels, v.promoted,
       coalesce(p.version_id = v.version_id, false) AS is_live,
       CAST(v.evaluation ->> '$.challenger.value' AS DOUBLE) AS challenger_value,
       CAST(v.evaluation ->> '$.champion.value' AS DOUBLE) AS champion_value,
       CAST(v.evaluation ->> '$.difference.low' AS DOUBLE) AS difference_low,
       CAST(v.evaluation ->> '$.difference.high' AS DOUBLE) AS difference_high,
       v.evaluation ->> '$.estimator' AS estimator, v.evaluation ->> '$.decision' AS decision, v.evaluation
FROM store.learned_corrections v LEFT JOIN store.learned_correction_pointer p USING (preference_id)
