-- A preference may store its candidate models ("provider/model"), so a client of the OpenAI-compatible gateway
-- needs nothing but the routing name (docs/api.md); NULL: the request names them.
ALTER TABLE preferences ADD COLUMN llm_providers VARCHAR[];
