"""The request class of the app: JSON bodies are decoded safely and validated strictly.

- Undecodable bodies become a SerializationException, which api/error_responses.py maps to the 422 `json_invalid`
  item. msgspec reports two hostile inputs in ways Litestar lets escape as a 500: nesting deeper than the
  decoder's recursion limit (e.g. 100,000 `[`) raises RecursionError, and bytes that are not UTF-8 raise
  UnicodeDecodeError. Both are the caller's malformed body, so they join the same path.
- Litestar converts a body to the handler's Struct leniently (`"5"` becomes 5, `"true"` becomes True). A value of
  the wrong JSON type is the caller's mistake and storing a coerced guess hides it, so the body is first checked
  against the handler's `data` type with msgspec's strict rules; a mismatch is a ValidationException (422) whose
  location is the field's path.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import SerializationException, ValidationException

BODY_PARAMETER = "data"  # Litestar's name for the body parameter


def strict_check(value: Any, body_type: Any) -> None:
    """Raise ValidationException when `value` is not exactly of `body_type` (no coercion between JSON types)."""
    try:
        msgspec.convert(value, body_type, strict=True)
    except msgspec.ValidationError as exc:
        message = str(exc)
        path_hint = _dict_key_hint(value, message)
        raise ValidationException(
            "request body does not match its schema",
            extra=[{"message": message, "key": BODY_PARAMETER, "source": "body", "dict_key": path_hint}]) from None


def _dict_key_hint(value: Any, message: str) -> str | None:
    """msgspec writes a dict key as `[...]`; when it ends the path, name the first entry of the wrong JSON type."""
    match = re.search(r"got `(\w+)` - at `\$(.*)\[\.\.\.\]`\Z", message)
    if not match:
        return None
    got, path = match.groups()
    node = value
    for name, index in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]", path):
        try:
            node = node[name] if name else node[int(index)]
        except (KeyError, IndexError, TypeError):
            return None
    if not isinstance(node, dict):
        return None
    json_type = {"int": int, "float": float, "str": str, "bool": bool, "array": list, "object": dict, "null": type(None)}
    wanted = json_type.get(got)
    for key, item in node.items():
        if wanted is not None and type(item) is wanted:
            return str(key)
    return None


class SafeJsonRequest(Request):
    async def json(self) -> Any:
        try:
            value = await super().json()
        except RecursionError:
            raise SerializationException("JSON nesting is too deep") from None
        except UnicodeDecodeError as exc:
            raise SerializationException(f"body is not valid UTF-8 (byte {exc.start})") from None
        if value is not None and not self.scope.get("_strict_checked"):
            self.scope["_strict_checked"] = True  # type: ignore[typeddict-unknown-key]
            parameters = self.route_handler.parsed_fn_signature.parameters
            data = parameters.get(BODY_PARAMETER)
            if data is not None and isinstance(data.annotation, type) and issubclass(data.annotation, msgspec.Struct):
                if "user" in parameters:  # a caller without a valid key learns nothing about the body's schema
                    await self.app.state.services.authenticator.user_for(self)
                strict_check(value, data.annotation)
        return value
