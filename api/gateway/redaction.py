"""The one scrub every text from an upstream passes before it reaches a caller, a log line or a stored row
(issue 31): a provider, or a proxy in front of one, may quote the key it was sent in an error, in an error event
after the stream began, or in a body that is not a chat completion at all.

Removed: the value of every *_API_KEY / *_API_TOKEN variable of this server (OptimizeSettings.secrets), any
`Bearer <token>`, and strings shaped like the providers' keys (sk-..., AIza..., xai-..., long opaque tokens), so
a key this server never held (another tenant's, a proxy's) does not pass either."""

from __future__ import annotations

import re

REDACTED = "[redacted]"
# Key shapes, from the providers' documented formats; the last alternative catches other long opaque tokens
# (40+ characters of key alphabet with both letters and digits), which are never useful to a caller in an error.
_KEY_SHAPES = re.compile(
    r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{4,}"
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}"
    r"|\bAIza[0-9A-Za-z_-]{20,}"
    r"|\b(?:xai|gsk|pplx|nvapi|hf|r8|ghp|glpat)[-_][A-Za-z0-9_-]{16,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])\b[A-Za-z0-9_-]{40,}")
MAX_ERROR_CHARS = 500  # what a caller and the log keep of an upstream's message


class Scrubber:
    """`scrub(text)`: the text with this server's secrets and every key-shaped string replaced, cut to `limit`."""

    def __init__(self, secrets: tuple[str, ...], limit: int = MAX_ERROR_CHARS) -> None:
        self.secrets = tuple(sorted((s for s in secrets if s), key=len, reverse=True))  # longest first: no partials
        self.limit = limit

    def __call__(self, text: str) -> str:
        # Cut first with a margin, so a hostile 64 MB error costs no regex pass over all of it, yet a key that
        # straddles the cut is still matched whole before the final cut.
        text = text[: self.limit * 4]
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return _KEY_SHAPES.sub(REDACTED, text)[: self.limit]
