-- Learning from traffic (docs/routing.md, "Learning from traffic"; flows/learning/).
-- A preference may opt into exploration: the share of decisions (0..0.1) routed to a near-best alternative.
ALTER TABLE preferences ADD COLUMN exploration_rate DOUBLE;
-- Every correction the learn-from-traffic flow fitted for a preference, promoted or not: its parameters (JSON,
-- api/selection/learned.py reads them) and its evaluation against the champion (JSON). Never updated after insert.
CREATE TABLE learned_corrections (
    version_id VARCHAR PRIMARY KEY,
    preference_id VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    labels INTEGER NOT NULL,
    parameters VARCHAR NOT NULL,
    evaluation VARCHAR NOT NULL,
    promoted BOOLEAN NOT NULL
);
-- The pointer: which version serves each preference (no row, or a NULL version: the router alone). Promotion moves
-- it to a new version; rollback to the newest promoted version older than the live one (or to none).
CREATE TABLE learned_correction_pointer (
    preference_id VARCHAR PRIMARY KEY,
    version_id VARCHAR,
    updated_at TIMESTAMPTZ NOT NULL
);
