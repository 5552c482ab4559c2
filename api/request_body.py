"""The request class of the app: JSON bodies that cannot be decoded become a SerializationException.

Litestar turns a SerializationException into a 400 whose cause api.error_responses maps to the 422 `json_invalid`
item. msgspec reports two hostile inputs differently, and Litestar lets those escape as a 500: nesting deeper than
the decoder's recursion limit (for example 100,000 `[`) raises RecursionError, and bytes that are not UTF-8 raise
UnicodeDecodeError. Both are the caller's malformed body, so they join the same path here.
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import SerializationException


class SafeJsonRequest(Request):
    async def json(self) -> Any:
        try:
            return await super().json()
        except RecursionError:
            raise SerializationException("JSON nesting is too deep") from None
        except UnicodeDecodeError as exc:
            raise SerializationException(f"body is not valid UTF-8 (byte {exc.start})") from None
