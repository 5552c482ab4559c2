"""The OpenAI-compatible gateway: /v1/chat/completions decides with modelSelect's decision path
(api/selection/service.py), calls the chosen model, falls back down the router's ranking before the first byte, and
records what really happened beside the decision (docs/api.md, "OpenAI-compatible gateway")."""
