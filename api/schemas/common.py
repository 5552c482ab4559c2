from __future__ import annotations

from typing import Annotated, Any

import msgspec

# Every number a caller sends is bounded to what storage holds (the session log keeps int32 columns) and to what
# makes sense, so an absurd value is a 422 at the edge instead of a row that cannot be written.
CostQualityTradeoff = Annotated[int, msgspec.Meta(ge=0, le=10, description="0 = best quality ... 10 = cheapest")]
ModelDepth = Annotated[int, msgspec.Meta(ge=1, le=1000, description="consider the first N eligible candidates")]
ContextLength = Annotated[int, msgspec.Meta(ge=1, le=100_000_000, description="tokens")]
PricePerMillion = Annotated[float, msgspec.Meta(ge=0, le=100_000, description="USD per million tokens")]
LatencySeconds = Annotated[float, msgspec.Meta(ge=0, le=3600, description="seconds")]
Score = Annotated[float, msgspec.Meta(ge=0, le=1, description="a score on the metric's 0..1 scale")]


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
