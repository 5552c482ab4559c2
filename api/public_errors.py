"""What a caller may read about a failure we did not foresee. An exception's own text is for the server's log: a
native library's (XGBoost, DuckDB, numpy) carries its stack trace and the server's file paths, an OS error the
data dir's paths, an HTTP client's the internal addresses it called. Whatever reaches an error body or a stored
job error shown to users (a job's `error`, a prompt optimization's results) is built here instead: the exception's
class name, which says what kind of failure it was, and a sentence the caller can act on.

Messages we wrote for the caller (ApiError and its subclasses, and any exception that carries a `public_message`
string, such as flows/prompt_opt/llm.py's ProviderNotConfigured) pass through unchanged."""

from __future__ import annotations

import logging
import re
from typing import Any

from api.errors import ApiError

log = logging.getLogger("switchboard")

# DSPy's (dspy/utils/exceptions.py) and LiteLLM's (litellm/exceptions.py) exception classes, by name: this module
# must not import either (rule 3 of docs/architecture.md). The provider's own message may echo the request, a key
# or the base URL: it goes to the log; the caller gets the kind of error and what to do about it.
_AUTH = "the provider refused the credentials; check the provider's API key setting"
_RATE = "the provider kept answering 429 (rate limited) through the retries; retry later or run fewer targets at once"
_TIMEOUT = "the provider did not answer within SWITCHBOARD_LLM_TIMEOUT_S through the retries"
_INVALID = "the provider refused the request as invalid"
_SERVER = "the provider failed through the retries; retry later"
PROVIDER_ERRORS = {
    "LMAuthError": _AUTH,
    "LMBillingError": "the provider refused the call for billing reasons (quota or credit exhausted)",
    "LMRateLimitError": _RATE,
    "LMTimeoutError": _TIMEOUT,
    "LMServerError": _SERVER,
    "LMTransportError": "the provider could not be reached (network or base URL)",
    "LMInvalidRequestError": _INVALID,
    "LMUnsupportedModelError": "the provider does not serve this model",
    "LMProviderError": "the provider answered with an error through the retries",
    "AuthenticationError": "the provider refused the credentials; check the provider's API key setting",
    "PermissionDeniedError": "the provider refused access to this model with these credentials",
    "NotFoundError": "the provider does not know this model, or the base URL points elsewhere",
    "RateLimitError": "the provider kept answering 429 (rate limited) through the retries; retry later or run "
                      "fewer targets at once",
    "Timeout": "the provider did not answer within SWITCHBOARD_LLM_TIMEOUT_S through the retries",
    "APIConnectionError": "the provider could not be reached (network or base URL)",
    "ContextWindowExceededError": "a prompt exceeded the model's context window; send shorter goldens",
    "ContentPolicyViolationError": "the provider refused the content under its content policy",
    "BadRequestError": "the provider refused the request as invalid",
    "UnprocessableEntityError": "the provider refused the request as invalid",
    "ServiceUnavailableError": "the provider was unavailable through the retries; retry later",
    "BadGatewayError": "the provider's gateway failed through the retries; retry later",
    "InternalServerError": "the provider failed through the retries; retry later",
    "APIError": "the provider answered with an error through the retries",
}


def public_reason(exc: BaseException, activity: str, logger: Any = None) -> str:
    """A message about `exc` that is safe to show the caller, for a failure while doing `activity` (e.g.
    "training the custom router"). The full exception goes to `logger` (a flow run's logger, so that it is in the
    run's log in the Prefect UI; else this module's), with its traceback."""
    if isinstance(exc, ApiError):
        return exc.message
    written_for_caller = getattr(exc, "public_message", None)
    if isinstance(written_for_caller, str):
        return f"{type(exc).__name__}: {written_for_caller}"
    name = getattr(exc, "provider_error_type", None) or type(exc).__name__
    (logger or log).error("%s failed: %s", activity, name, exc_info=exc)
    status = getattr(exc, "status_code", None)
    http = f" (HTTP {status})" if isinstance(status, int) and 100 <= status < 600 else ""
    if name in PROVIDER_ERRORS:
        return f"{name}{http}: {PROVIDER_ERRORS[name]}"
    if isinstance(exc, FileNotFoundError):
        return (f"{name}: a file {activity} needs is no longer on the server (removed by housekeeping or by hand); "
                "submit the job again")
    if isinstance(exc, MemoryError):
        return f"{name}: {activity} ran out of memory; send less data (fewer rows or shorter texts)"
    if isinstance(exc, TimeoutError):
        return f"{name}: {activity} took too long; retry, and if it persists send less data"
    return f"{name}: {activity} failed with an internal error; the details are in the server's log"


# Prefect writes an exception into a state's message as "<context>: <ExceptionType>: <its text>" (prefect/states.py,
# format_exception); its own messages ("Execution was aborted by a termination signal.") have no such part.
_EXCEPTION_IN_MESSAGE = re.compile(r"(?:^|: )((?:[a-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*): ")


def public_state_message(message: str | None, status: str) -> str:
    """A flow run's final state message as a caller may read it: Prefect's own words, or, where it carries an
    exception, only the exception's type (its text is in the flow run's log, in the Prefect UI)."""
    if not message:
        return f"flow run ended {status}"
    found = _EXCEPTION_IN_MESSAGE.search(message)
    if found is None:
        return message
    name = found.group(1).rsplit(".", 1)[-1]
    return f"the flow run ended {status} with {name}; the details are in the flow run's log (Prefect UI)"
