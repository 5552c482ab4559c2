"""The gateway's response headers that carry a model's name. A header value is visible ASCII only: a custom model
may be named in any script ("модель", an emoji), and such a name in a header made the server fail after the
upstream call was paid for. A name that is not visible ASCII travels as an RFC 8187 ext-value instead, in
`x-switchboard-model*` (as `filename*` does for Content-Disposition); the body's `model` names it as is."""

from __future__ import annotations

from urllib.parse import quote

MODEL_HEADER = "x-switchboard-model"
# RFC 8187 attr-char, less ALPHA and DIGIT (which quote never escapes): what an ext-value may hold unescaped.
_ATTR_CHAR_PUNCTUATION = "!#$&+-.^_`|~"


def visible_ascii(value: str) -> bool:
    return value.isascii() and value.isprintable()


def model_header(name: str) -> dict[str, str]:
    """{header: value} naming `name`: the plain header when it is visible ASCII, else its RFC 8187 form."""
    return named_header(MODEL_HEADER, name)


def named_header(header: str, value: str) -> dict[str, str]:
    """{header: value} when the value is visible ASCII, else {header*: its RFC 8187 ext-value} (modelSelect's
    x-switchboard-no-evidence names models too)."""
    if visible_ascii(value):
        return {header: value}
    return {f"{header}*": "UTF-8''" + quote(value, safe=_ATTR_CHAR_PUNCTUATION, encoding="utf-8",
                                            errors="surrogatepass")}
