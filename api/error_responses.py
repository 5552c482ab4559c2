"""The one place where exceptions become responses: the spec's error envelope, or the 422 validation shape."""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
from litestar import MediaType, Request, Response
from litestar._multipart import parse_multipart_form
from litestar.exceptions import (
    HTTPException,
    SerializationException,
    ValidationException,
)

from api.errors import ApiError
from api.observability.exchange import note_error
from storage.errors import DatabaseUnavailable
from api.request_id import request_id_of
from api.schemas.common import (
    ErrorBody,
    ErrorResponse,
    HTTPValidationError,
    ValidationErrorItem,
    readable,
)

log = logging.getLogger("switchboard.api")

_STATUS_CODES = {
    400: ("BAD_REQUEST", "invalid_request_error"),
    401: ("UNAUTHORIZED", "authentication_error"),
    403: ("FORBIDDEN", "authorization_error"),
    404: ("NOT_FOUND", "not_found_error"),
    405: ("METHOD_NOT_ALLOWED", "invalid_request_error"),
    408: ("REQUEST_TIMEOUT", "timeout_error"),
    413: ("PAYLOAD_TOO_LARGE", "invalid_request_error"),
    415: ("UNSUPPORTED_MEDIA_TYPE", "invalid_request_error"),
    429: ("RATE_LIMITED", "rate_limit_error"),
    503: ("SERVICE_UNAVAILABLE", "api_error"),
}
_JSON_PATH = re.compile(r"at `\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\]|\[\.\.\.\])*)`")


# The `multipart` parser's defaults that Litestar leaves in place (multipart.PushMultipartParser).
MULTIPART_HEADERS_PER_PART, MULTIPART_HEADER_BYTES = 8, 4096 + 128

# Errors echo what the caller sent (an id, a CSV cell); a hostile input must not make the answer huge.
MAX_MESSAGE_CHARS, MAX_DETAIL_CHARS = 1_000, 300


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _bounded(value: Any) -> Any:
    if isinstance(value, str):
        return _clip(value, MAX_DETAIL_CHARS)
    if isinstance(value, dict):
        return {_bounded(k): _bounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bounded(v) for v in value]
    return value


OPENAI_PATHS = "/v1/"  # the gateway's routes: their clients parse OpenAI's error shape, not the spec's envelope


ANTHROPIC_PATH = "/v1/messages"  # the anthropic client reads {"type": "error", "error": {type, message}}

# Anthropic's error types by HTTP status (its clients pick the exception class by status, and show the type).
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error",
               529: "overloaded_error"}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def anthropic_error(status: int, message: str, code: str, request_id: str | None,
                    details: dict[str, Any] | None = None) -> dict[str, Any]:
    """Anthropic's error shape; switchboard's code, request id and details ride along as extra fields."""
    error: dict[str, Any] = {"type": error_type(status), "message": message, "code": code.lower()}
    if details:
        error["details"] = details
    return {"type": "error", "error": error, "request_id": request_id}


def openai_shaped(request: Request) -> bool:
    return request.url.path.startswith(OPENAI_PATHS)


def envelope(request: Request, status: int, code: str, type_: str, message: str,
             details: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Response:
    note_error(code)  # the access line and the refusal counters name it
    if request.url.path == ANTHROPIC_PATH:
        shaped = anthropic_error(status, _clip(message, MAX_MESSAGE_CHARS), code, request_id_of(request.scope),
                                 _bounded(details) if details else None)
        return Response(content=msgspec.json.encode(shaped), status_code=status, media_type=MediaType.JSON,
                        headers=headers)
    if openai_shaped(request):
        # {"error": {message, type, param, code}} as OpenAI's clients read it; request_id and details ride along.
        error = {"message": _clip(message, MAX_MESSAGE_CHARS), "type": type_, "param": None, "code": code.lower(),
                 "request_id": request_id_of(request.scope)}
        if details:
            error["details"] = _bounded(details)
        return Response(content=msgspec.json.encode({"error": error}), status_code=status,
                        media_type=MediaType.JSON, headers=headers)
    body = ErrorResponse(ErrorBody(code=code, message=_clip(message, MAX_MESSAGE_CHARS), type=type_,
                                   request_id=request_id_of(request.scope),
                                   details=_bounded(details) if details else details))
    return Response(content=msgspec.json.encode(body), status_code=status, media_type=MediaType.JSON,
                    headers=headers)


_MISSING_FIELD = re.compile(r"missing required field `([^`]+)`")
from api.request_body import BODY_PARAMETER  # noqa: E402 (never shown to callers)


def _loc(source: str, key: str | None, message: str, dict_key: str | None = None) -> list[str | int]:
    """Turn Litestar's key and msgspec's `$.a[0].b` path into a FastAPI-style loc list. msgspec writes a dict key as
    `[...]`; api/request_body.py finds which key it was when it can (`dict_key`)."""
    loc: list[str | int] = [source]
    if key and key != BODY_PARAMETER:
        loc.extend(key.split("."))
    match = _JSON_PATH.search(message)
    if match:
        for name, index, any_key in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|(\[\.\.\.\])", match.group(1)):
            loc.append(name if name else int(index) if index else (dict_key or "<key>"))
    missing = _MISSING_FIELD.search(message)
    if missing:
        loc.append(missing.group(1))
    return loc


def _message(extra: dict[str, Any], default: str) -> str:
    message = str(extra.get("message", default))
    if extra.get("key") == BODY_PARAMETER and message.strip("'\"") == BODY_PARAMETER:
        return "a JSON body is required"  # Litestar reports an absent body as a KeyError for `data`
    return readable(_JSON_PATH.sub("", message).rstrip(" -"))


def validation_items(exc: ValidationException) -> list[ValidationErrorItem]:
    items = []
    for extra in exc.extra if isinstance(exc.extra, list) else []:
        if not isinstance(extra, dict):
            continue
        message = str(extra.get("message", exc.detail))
        source = extra.get("source") or "body"
        source = str(getattr(source, "value", source))  # Litestar passes ParamType enums for params
        items.append(ValidationErrorItem(loc=_loc(source, extra.get("key"), message, extra.get("dict_key")),
                                         msg=_message(extra, str(exc.detail)), type="value_error"))
    if not items:
        items.append(ValidationErrorItem(loc=["body"], msg=str(exc.detail), type="value_error"))
    return items


def on_validation_error(request: Request, exc: ValidationException) -> Response:
    if "Request body size" in str(exc.detail):
        return on_api_error(request, ApiError(str(exc.detail)))
    items = validation_items(exc)
    if openai_shaped(request):  # OpenAI answers a malformed body with a 400 naming the field
        where = ".".join(str(part) for part in items[0].loc[1:])
        return envelope(request, 400, "INVALID_REQUEST", "invalid_request_error",
                        f"{where}: {items[0].msg}" if where else items[0].msg)
    body = HTTPValidationError(detail=items)
    return Response(content=msgspec.json.encode(body), status_code=422, media_type=MediaType.JSON)


def on_api_error(request: Request, exc: ApiError) -> Response:
    return envelope(request, exc.status, exc.code, exc.type, exc.message, exc.details, exc.headers or None)


def on_http_exception(request: Request, exc: HTTPException) -> Response:
    if exc.status_code == 400 and isinstance(exc.__cause__, SerializationException):
        # An unparsable body is a validation failure (422), as the spec's clients expect.
        item = ValidationErrorItem(loc=["body"], msg=f"body is not valid JSON: {exc.__cause__}", type="json_invalid")
        if openai_shaped(request):
            return envelope(request, 400, "INVALID_JSON", "invalid_request_error", item.msg)
        return Response(content=msgspec.json.encode(HTTPValidationError(detail=[item])), status_code=422,
                        media_type=MediaType.JSON)
    if exc.status_code == 400 and exc.detail == "Request Entity Too Large":
        # Litestar's multipart parser hit one of its limits (it keeps a 400 for compatibility; the right answer is
        # 413) without saying which: name them all, so the caller can see which one their form broke.
        return envelope(request, 413, "PAYLOAD_TOO_LARGE", "invalid_request_error",
                        f"the multipart form is over the parser's limits: at most "
                        f"{request.app.multipart_form_part_limit:,} parts, {MULTIPART_HEADERS_PER_PART} headers per "
                        f"part and {MULTIPART_HEADER_BYTES:,} bytes per header line (a file name longer than about "
                        "4,000 characters breaks that)",
                        details={"max_parts": request.app.multipart_form_part_limit,
                                 "max_headers_per_part": MULTIPART_HEADERS_PER_PART,
                                 "max_header_bytes": MULTIPART_HEADER_BYTES})
    code, type_ = _STATUS_CODES.get(exc.status_code, ("HTTP_ERROR", "api_error" if exc.status_code >= 500
                                                       else "invalid_request_error"))
    message = str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = f"no route for {request.method} {request.url.path}"
    if exc.status_code == 413:
        limit = request.route_handler.resolve_request_max_body_size() if request.scope.get("route_handler") else None
        message = "request body is too large" + (f"; the limit is {limit:,} bytes" if limit else "")
    return envelope(request, exc.status_code, code, type_, message, headers=exc.headers)


def _form_field_in_error(exc: Exception) -> Any:
    """The multipart part whose text Litestar's form parser was decoding when `exc` was raised, else None.

    Litestar's `parse_multipart_form` decodes every non-file form field with the charset its part declares
    (`data.decode(segment.charset or "utf-8")`) and lets the error escape: `\\xff` in a UTF-8 field, `charset=bogus`
    (LookupError) or `charset=utf-16` with an odd byte count would be a 500. Only that decode raises these errors
    inside the parser, and its frame still holds the part being decoded."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is parse_multipart_form.__code__:
            return tb.tb_frame.f_locals.get("segment")
        tb = tb.tb_next
    return None


def on_text_decoding_error(request: Request, exc: Exception) -> Response:
    """UnicodeError and LookupError: a form field the caller encoded badly is a 400, anything else a 500."""
    segment = _form_field_in_error(exc)
    if segment is None:
        return on_unexpected(request, exc)
    name, charset = getattr(segment, "name", None), getattr(segment, "charset", None)
    field = f"form field {name!r}" if name else "a form field"
    if isinstance(exc, UnicodeDecodeError):
        problem = f"is not valid {charset or 'UTF-8'} text ({exc.reason} at byte {exc.start})"
    else:
        problem = f"declares charset {charset!r}, which is not a known text encoding"
    return envelope(request, 400, "INVALID_ENCODING", "invalid_request_error",
                    f"{field} {problem}; send form fields as UTF-8", details={"field": name, "charset": charset})


def on_database_unavailable(request: Request, exc: DatabaseUnavailable) -> Response:
    """PostgreSQL down or restarting (storage/postgres.py): a clear 503 the client may retry; the pool reconnects by
    itself when it is back, so nothing needs restarting."""
    log.warning("system of record unavailable on %s %s: %s", request.method, request.url.path, exc)
    return envelope(request, 503, "SERVICE_UNAVAILABLE", "api_error",
                    "the database is unavailable; retry shortly", headers={"Retry-After": "1"})


def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s (request %s)", request.method, request.url.path,
                  request_id_of(request.scope))
    return envelope(request, 500, "INTERNAL_ERROR", "api_error",
                    "internal error; quote the request_id when reporting it")


EXCEPTION_HANDLERS = {
    ValidationException: on_validation_error,
    ApiError: on_api_error,
    DatabaseUnavailable: on_database_unavailable,
    HTTPException: on_http_exception,
    UnicodeError: on_text_decoding_error,
    LookupError: on_text_decoding_error,
    Exception: on_unexpected,
}
