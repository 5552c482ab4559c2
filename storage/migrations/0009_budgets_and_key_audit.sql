-- Budgets, spend counters and key management over HTTP (issue 34; storage/repositories/budgets.py, accounts.py).
-- A key's last use, the end of its grace period after a rotation (it authenticates until then), its own per-minute
-- rate limit (NULL: the server's), and who created it.
ALTER TABLE api_keys ADD COLUMN last_used_at TIMESTAMPTZ;
ALTER TABLE api_keys ADD COLUMN expires_at TIMESTAMPTZ;
ALTER TABLE api_keys ADD COLUMN rate_limit_per_minute INTEGER;
ALTER TABLE api_keys ADD COLUMN created_by VARCHAR;

-- The key a prompt optimization run was started with: its LLM spend is billed to that key too.
ALTER TABLE optimization_runs ADD COLUMN key_id VARCHAR;

-- USD limits set by an admin: scope 'key' | 'user' | 'organization', period 'day' | 'month' (UTC windows).
CREATE TABLE budgets (
    scope            VARCHAR NOT NULL,
    subject_id       VARCHAR NOT NULL,
    period           VARCHAR NOT NULL,
    limit_usd        DOUBLE NOT NULL,
    organization_id  VARCHAR NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    updated_by       VARCHAR NOT NULL,
    PRIMARY KEY (scope, subject_id, period)
);

-- Settled spend per subject and UTC window ('2026-11-27' for a day, '2026-11' for a month).
CREATE TABLE spend (
    scope         VARCHAR NOT NULL,
    subject_id    VARCHAR NOT NULL,
    period        VARCHAR NOT NULL,
    window_start  VARCHAR NOT NULL,
    spent_usd     DOUBLE NOT NULL,
    PRIMARY KEY (scope, subject_id, period, window_start)
);

-- A call under way and its worst-case cost, counted against budgets until it is settled (deleted, its real cost
-- added to `spend`), so that concurrent calls cannot all pass one check; one left by a process that died is dropped
-- after a while (storage/repositories/budgets.py, STALE_RESERVATION).
CREATE TABLE budget_reservations (
    reservation_id   VARCHAR PRIMARY KEY,
    key_id           VARCHAR NOT NULL,
    user_id          VARCHAR NOT NULL,
    organization_id  VARCHAR NOT NULL,
    amount_usd       DOUBLE NOT NULL,
    day              VARCHAR NOT NULL,
    month            VARCHAR NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX budget_reservations_by_org ON budget_reservations (organization_id, created_at);

-- Every change to keys and budgets, with who made it (an admin key, or the server's CLI).
CREATE TABLE key_audit (
    audit_id         VARCHAR PRIMARY KEY,
    changed_at       TIMESTAMPTZ NOT NULL,
    actor            VARCHAR NOT NULL,
    organization_id  VARCHAR NOT NULL,
    action           VARCHAR NOT NULL,
    key_id           VARCHAR,
    subject_user_id  VARCHAR,
    detail           VARCHAR
);
CREATE INDEX key_audit_by_org ON key_audit (organization_id, changed_at);
