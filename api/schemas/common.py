from __future__ import annotations

import re
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

# Characters a model or provider name may not hold: control characters (C0 with CR, LF, NUL; DEL; C1), the line and
# paragraph separators (U+2028/9), zero-width and bidirectional formatting marks, the byte-order mark, and lone
# surrogates. A name is echoed into response headers, logs and error messages, where these break the response (a
# CR/LF or a U+2028 cannot go into a header) or disguise what is shown; any other character, non-ASCII included,
# is a valid name (docs/api.md, "Errors"). Patterns end in \Z, never $, which also matches before a final
# newline.
NOT_IN_NAMES = "\\x00-\\x1f\\x7f-\\x9f\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff\\ud800-\\udfff"
NAME_MAX = 256
PRINTABLE_NAME = re.compile(f"[^{NOT_IN_NAMES}]{{1,{NAME_MAX}}}")
ModelId = Annotated[str, msgspec.Meta(
    min_length=1, max_length=NAME_MAX, pattern=f"^[^{NOT_IN_NAMES}]+\\Z",
    description="a model's name: 1-256 characters, no control, separator or invisible formatting characters")]
ProviderName = Annotated[str, msgspec.Meta(
    min_length=1, max_length=64, pattern=f"^[^{NOT_IN_NAMES}]+\\Z",
    description="a provider's name: 1-64 characters, no control, separator or invisible formatting characters")]
QualifiedModel = Annotated[str, msgspec.Meta(
    min_length=1, max_length=NAME_MAX + 65, pattern=f"^[^{NOT_IN_NAMES}]+\\Z",
    description="'provider/model' (or a routing name): no control, separator or invisible formatting characters")]


NAME_RULE = ("Expected a printable name: no control characters (CR, LF, NUL, DEL, ...), line or paragraph "
             "separators or invisible formatting marks")
# msgspec states a failed pattern as its regex; for the name patterns above the rule is said in words instead.
_NAME_PATTERN_FAILED = re.compile(r"Expected `str` matching regex '[^']*\\\\x00-\\\\x1f[^']*'")


def printable_name(name: str) -> bool:
    """Whether `name` may name a model or a provider (the rule of ModelId, for names that arrive as plain text)."""
    return PRINTABLE_NAME.fullmatch(name) is not None


def readable(message: str) -> str:
    """A validation message with a name pattern's regex replaced by the rule in words."""
    return _NAME_PATTERN_FAILED.sub(NAME_RULE, message)


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
