"""Domain errors. Raise them anywhere; `api.app` maps them to the spec's envelope in one place."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    status: int = 400
    code: str = "BAD_REQUEST"
    type: str = "invalid_request_error"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details
        self.headers = headers or {}


class BadRequest(ApiError):
    status, code, type = 400, "BAD_REQUEST", "invalid_request_error"


class ValidationFailed(ApiError):
    """A 400 for semantic validation (the spec's `validation_error` codes)."""

    status, code, type = 400, "VALIDATION_ERROR", "validation_error"


class Unauthorized(ApiError):
    status, code, type = 401, "UNAUTHORIZED", "authentication_error"

    def __init__(self, message: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.headers.setdefault("WWW-Authenticate", 'Bearer realm="switchboard"')  # RFC 6750 section 3


class Forbidden(ApiError):
    status, code, type = 403, "FORBIDDEN", "authorization_error"


class NotFound(ApiError):
    status, code, type = 404, "NOT_FOUND", "not_found_error"


class Conflict(ApiError):
    status, code, type = 409, "CONFLICT", "conflict_error"


class RequestTimeout(ApiError):
    status, code, type = 408, "REQUEST_TIMEOUT", "timeout_error"


class PayloadTooLarge(ApiError):
    status, code, type = 413, "PAYLOAD_TOO_LARGE", "invalid_request_error"


class TooManyRequests(ApiError):
    status, code, type = 429, "RATE_LIMITED", "rate_limit_error"


class ServiceUnavailable(ApiError):
    status, code, type = 503, "SERVICE_UNAVAILABLE", "api_error"


class InternalError(ApiError):
    status, code, type = 500, "INTERNAL_ERROR", "api_error"
