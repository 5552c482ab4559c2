-- Prompt optimization runs. The run's job row (jobs.kind = 'optimize-prompt', jobs.job_id = run_id) carries the
-- overall JobStatus; this table holds what the caller asked for, one row per model evaluated in it.
CREATE TABLE optimization_runs (
    run_id                 VARCHAR PRIMARY KEY,  -- = jobs.job_id
    user_id                VARCHAR NOT NULL,
    organization_id        VARCHAR NOT NULL,
    request                VARCHAR NOT NULL,     -- JSON: the validated request (prompts, split goldens, metric)
    evaluation_metric      VARCHAR,
    evaluation_config      VARCHAR,              -- JSON string of the custom judge, when given
    prototype_mode         BOOLEAN NOT NULL,
    created_at             TIMESTAMPTZ NOT NULL
);

CREATE TABLE optimization_results (
    run_id                 VARCHAR NOT NULL,
    position               INTEGER NOT NULL,     -- -1 for the origin (baseline) model, 0.. for the targets
    provider               VARCHAR NOT NULL,
    model                  VARCHAR NOT NULL,
    result_status          VARCHAR NOT NULL,     -- JobStatus
    pre_score              DOUBLE,               -- the origin's score lives here too
    pre_evals              VARCHAR,              -- JSON
    post_score             DOUBLE,
    post_evals             VARCHAR,              -- JSON
    system_prompt          VARCHAR,
    user_message_template  VARCHAR,
    cost                   DOUBLE,
    num_requests           INTEGER,
    error                  VARCHAR,
    updated_at             TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, position)
);
