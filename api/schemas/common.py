from __future__ import annotations

from typing import Any

import msgspec


class ErrorBody(msgspec.Struct):
    code: str
    message: str
    type: str
    request_id: str | None = None
    details: dict[str, Any] | None = None


class ErrorResponse(msgspec.Struct):
    error: ErrorBody


class ValidationErrorItem(msgspec.Struct):
    loc: list[str | int]
    msg: str
    type: str


class HTTPValidationError(msgspec.Struct):
    detail: list[ValidationErrorItem]
