"""Error responses as the OpenAPI document declares them: the spec's envelope, and the 422 validation body.

Declared per route so generated clients parse errors the way the service sends them (Litestar's default 400
schema would describe a body we never send).
"""

from __future__ import annotations

from http import HTTPStatus

from litestar.openapi.datastructures import ResponseSpec

from api.schemas.common import ErrorResponse, HTTPValidationError


def error_responses(*statuses: int, secured: bool = True) -> dict[int, ResponseSpec]:
    wanted = {400, *statuses} | ({401, 429} if secured else set())  # 429: the per-key rate limit (api/rate_limit.py)
    out = {s: ResponseSpec(data_container=ErrorResponse, description=HTTPStatus(s).phrase, generate_examples=False)
           for s in sorted(wanted)}
    out[422] = ResponseSpec(data_container=HTTPValidationError, description="Validation error",
                            generate_examples=False)
    return out
