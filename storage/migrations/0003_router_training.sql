-- Custom router training: what each training job was given, and what it measured (for notebooks).
CREATE TABLE router_trainings (
    job_id          VARCHAR PRIMARY KEY,     -- jobs.job_id (kind 'train-custom-router')
    preference_id   VARCHAR NOT NULL,
    dataset_path    VARCHAR NOT NULL,        -- validated dataset, Parquet, under the data dir
    language        VARCHAR NOT NULL,        -- 'english' | 'multilingual'
    maximize        BOOLEAN NOT NULL,
    models          VARCHAR NOT NULL,        -- JSON: the llm_providers entries, resolved (prices included)
    rows            INTEGER NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX router_trainings_by_preference ON router_trainings (preference_id);

CREATE TABLE router_training_metrics (
    job_id          VARCHAR PRIMARY KEY,
    router_id       VARCHAR,                 -- custom_routers.router_id once published
    metrics         VARCHAR NOT NULL,        -- JSON: cross-validated evaluation (router vs single models vs oracle)
    created_at      TIMESTAMPTZ NOT NULL
);
