"""Which candidates can serve this request at all: context window, function calling, max_model_depth."""

from __future__ import annotations

from api.errors import BadRequest
from api.selection.candidates import ResolvedCandidate


def eligible(candidates: list[ResolvedCandidate], prompt_tokens: int, tools: bool,
             max_model_depth: int | None) -> list[ResolvedCandidate]:
    if tools:
        # Custom models cannot tell us; the caller listed them with tools, so they stay (docs/routing.md).
        candidates = [c for c in candidates if c.is_custom or c.candidate.supports_function_calling]
        if not candidates:
            raise BadRequest("none of the candidate models supports function calling, which `tools` requires",
                             code="NO_ELIGIBLE_MODEL", details={"reason": "tools"})
    fitting = [c for c in candidates if (c.candidate.context_length or 0) >= prompt_tokens]
    if not fitting:
        largest = max(c.candidate.context_length or 0 for c in candidates)
        raise BadRequest(f"the prompt has about {prompt_tokens} tokens; the largest candidate context window is "
                         f"{largest}", code="NO_ELIGIBLE_MODEL",
                         details={"reason": "context_length", "prompt_tokens": prompt_tokens})
    # max_model_depth: the caller lists candidates in order of preference; consider the first N that can serve.
    return fitting[:max_model_depth] if max_model_depth else fitting
