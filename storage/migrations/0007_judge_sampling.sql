-- Judge sampling on gateway traffic (docs/routing.md, "Judge sampling"; flows/learning/judge.py), opt-in per
-- preference: the share of answered, unhashed gateway requests a judge grades (0..0.2; NULL or 0: none), the judge
-- (provider/model), its spend allowed per UTC day in USD, and the share of sampled requests also answered by another
-- candidate (a shadow call) to label a model the router did not choose.
ALTER TABLE preferences ADD COLUMN judge_sample_rate DOUBLE;
ALTER TABLE preferences ADD COLUMN judge_model VARCHAR;
ALTER TABLE preferences ADD COLUMN judge_budget_usd DOUBLE;
ALTER TABLE preferences ADD COLUMN shadow_sample_rate DOUBLE;
