-- Asynchronous jobs (router training, prompt optimization) and the custom routers they publish.
CREATE TABLE jobs (
    job_id        VARCHAR PRIMARY KEY,
    kind          VARCHAR NOT NULL,          -- 'train-custom-router' | 'optimize-prompt' | ...
    user_id       VARCHAR NOT NULL,
    subject_id    VARCHAR,                   -- preference_id or optimization run id
    status        VARCHAR NOT NULL,          -- JobStatus
    flow_run_id   VARCHAR,
    error         VARCHAR,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX jobs_by_subject ON jobs (subject_id);

CREATE TABLE custom_routers (
    router_id      VARCHAR PRIMARY KEY,
    preference_id  VARCHAR NOT NULL,
    job_id         VARCHAR,
    artefact_path  VARCHAR NOT NULL,
    is_live        BOOLEAN NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX custom_routers_by_preference ON custom_routers (preference_id);
