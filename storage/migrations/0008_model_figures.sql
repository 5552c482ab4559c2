-- Model figures beyond the shipped file (docs/routing.md, "Refreshing and measuring model figures").
-- Figure sets the refresh-model-figures flow stored (flows/model_figures/refresh.py): the validated CSV as it was
-- read, where from, and how many rows; the newest set is the one every API worker serves. Never updated.
CREATE TABLE model_figure_sets (
    set_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    source VARCHAR NOT NULL,
    row_count INTEGER NOT NULL,
    content VARCHAR NOT NULL
);
-- Onboarding runs (flows/model_figures/onboard.py), per organization and model; the calibration suite's
-- results become figures (JSON, api/model_figures/records.py) that serve that organization, or everyone once an
-- admin publishes them.
CREATE TABLE model_onboarding (
    run_id VARCHAR PRIMARY KEY,
    organization_id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    provider VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    input_price DOUBLE NOT NULL,
    output_price DOUBLE NOT NULL,
    status VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    flow_run_id VARCHAR,
    calls INTEGER NOT NULL DEFAULT 0,
    cost_usd DOUBLE NOT NULL DEFAULT 0,
    figures VARCHAR,
    error VARCHAR,
    published BOOLEAN NOT NULL DEFAULT false
);
-- One open or completed run per organization and model (storage/repositories/model_figures.py holds the rule under
-- a lock); a failed run stays as a record beside the run that retried it.
CREATE INDEX model_onboarding_by_model ON model_onboarding (organization_id, provider, model);
