-- Users, their API keys (hashes only), and preferences.
CREATE TABLE users (
    user_id             VARCHAR PRIMARY KEY,
    organization_id     VARCHAR NOT NULL,
    tier                VARCHAR NOT NULL,
    prompt_optimization BOOLEAN NOT NULL,
    is_admin            BOOLEAN NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    key_id      VARCHAR PRIMARY KEY,
    key_hash    VARCHAR NOT NULL UNIQUE,
    key_prefix  VARCHAR NOT NULL,
    user_id     VARCHAR NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ
);

CREATE TABLE preferences (
    preference_id         VARCHAR PRIMARY KEY,
    user_id               VARCHAR NOT NULL,
    name                  VARCHAR NOT NULL,
    tradeoff              VARCHAR,
    cost_quality_tradeoff INTEGER,
    max_model_depth       INTEGER,
    hash_content          BOOLEAN,
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX preferences_by_user ON preferences (user_id);
