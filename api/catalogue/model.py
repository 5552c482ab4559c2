"""The catalogue's record type and its one domain error."""

from __future__ import annotations

import datetime
from collections.abc import Iterable

import msgspec


class CatalogueModel(msgspec.Struct, frozen=True, kw_only=True):
    """One text-generation chat model the service can route to.

    Prices are USD per million tokens (LiteLLM stores per-token costs; the wire
    format and the routing policy both think in millions).
    """

    provider: str
    """Normalised provider name, as users type it (``openai``, ``google``, ``togetherai``)."""
    model: str
    """The identifier the provider's own API expects."""
    context_length: int
    input_price: float
    output_price: float
    aggregator_model: str | None = None
    """OpenRouter identifier, or None when no OpenRouter id is known for the model."""
    supports_function_calling: bool = False
    supports_vision: bool = False
    deprecation_date: datetime.date | None = None

    def is_deprecated(self, today: datetime.date) -> bool:
        # A model retires *on* its deprecation date, so it is still active that day.
        return self.deprecation_date is not None and self.deprecation_date < today


class UnknownProviderError(ValueError):
    """A caller named providers the catalogue does not know.

    The web layer maps this to a 400; the message names the culprits and lists
    the known providers so the caller can fix the request without docs.
    """

    def __init__(self, names: Iterable[str], known: Iterable[str] = ()) -> None:
        self.names = sorted(set(names))
        self.known = sorted(set(known))
        message = f"Unknown provider(s): {', '.join(self.names)}."
        if self.known:
            message += f" Known providers: {', '.join(self.known)}."
        super().__init__(message)
