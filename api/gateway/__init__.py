"""The OpenAI-compatible gateway: /v1/chat/completions (and /v1/messages, Anthropic's format translated to and from
it: messages.py, messages_answer.py) decides with modelSelect's decision path (api/selection/service.py), calls the
chosen model on its deployments (api/deployments.py, balancing.py), falls back down the router's ranking before the
first byte, and records what really happened beside the decision (docs/api.md, "OpenAI-compatible gateway")."""
