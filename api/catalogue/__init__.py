"""The model catalogue: supported text-generation chat models, prices and context.

Built at start-up from LiteLLM's bundled price map (no network, no litellm
import) plus the OpenRouter id snapshot in ``datasets/catalogue``.
"""

from api.catalogue.catalogue import Catalogue, load_catalogue
from api.catalogue.model import CatalogueModel, UnknownProviderError
from api.catalogue.pricing import Prices, billed_prices, billed_prices_of
from api.catalogue.providers import normalise_provider

__all__ = ["Catalogue", "CatalogueModel", "Prices", "UnknownProviderError", "billed_prices", "billed_prices_of",
           "load_catalogue", "normalise_provider"]
